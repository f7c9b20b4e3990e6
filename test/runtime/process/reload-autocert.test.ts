/**
 * A reload that changes the autocert settings, or turns autocert on or off, is refused with
 * "restart svc" (the manager is made from the first plan): never silently ignored. A reload that
 * only changes routes goes on to build the next generation.
 */
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import type { PlanEnvelope } from '../../../compiler/plan/types.ts';
import { autocertChange } from '../../../runtime/tls/acme/start.ts';
import type { Prepared } from '../../../runtime/generation/generation.ts';
import { createReloader } from '../../../runtime/generation/reload.ts';
import { BASE_SETTINGS, compileText } from '../../support/compile-text.ts';

const { insecure_server: _insecure, ...TLS_BASE } = BASE_SETTINGS;

function plan(extra: Record<string, unknown>, host = 'app.example.com'): PlanEnvelope {
  const r = compileText(stringify({ ...TLS_BASE, autocert: true, autocert_dir: '/var/lib/svc', ...extra, routes: [{ from: `https://${host}`, to: 'http://10.0.0.1', allow_public_unauthenticated_access: true }] }));
  if (!r.plan) throw new Error(r.diagnostics.map((d) => d.message).join('\n'));
  return r.plan;
}

/** Reloads from `current` to `next`; whether `prepare` was reached. */
async function reload(current: PlanEnvelope, next: PlanEnvelope) {
  let prepared = false;
  const r = await createReloader({
    load: () => next,
    current: () => current,
    prepare: () => {
      prepared = true;
      return Promise.resolve({ commit: () => undefined, abort: () => undefined } as unknown as Prepared);
    },
  }).reload();
  return { r, prepared };
}

describe('reloads and autocert', () => {
  it('refuses a change of the autocert settings, and lets a route change through', async () => {
    const a = plan({});
    const changed = await reload(a, plan({ autocert_email: 'ops@example.com' }));
    expect(changed.r).toEqual({ ok: false, error: expect.stringMatching(/autocert settings changed.*restart svc/) });
    expect(changed.prepared).toBe(false);
    const routes = await reload(a, plan({}, 'other.example.com'));
    expect(routes.r.ok).toBe(true);
    expect(routes.prepared).toBe(true);
  });

  it('refuses turning autocert on or off', () => {
    const on = plan({}).body.settings;
    const off = { ...on, autocert: { ...on.autocert, enabled: false } };
    expect(autocertChange(off, on)).toMatch(/turned on: restart svc/);
    expect(autocertChange(on, off)).toMatch(/turned off: restart svc/);
    expect(autocertChange(off, { ...off, autocert: { ...off.autocert, email: 'x@example.com' } })).toBeUndefined();
  });
});
