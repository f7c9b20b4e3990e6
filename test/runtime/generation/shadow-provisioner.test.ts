/**
 * The shadow part of a generation (runtime/generation/shadow-provisioner.ts): a candidate that
 * loads is in service; the same candidate again keeps the part (a renewal swaps nothing); a
 * candidate that fails, or whose settings differ from the enforced plan's, never throws (the
 * enforced plan is never refused for it), is logged with its code, and leaves the last good
 * candidate in service while it still fits, else none (docs/security.md S71).
 */
import { describe, expect, it } from 'vitest';
import type { PlanEnvelope } from '../../../compiler/plan/types.ts';
import { SvcError } from '../../../runtime/core/errors.ts';
import { ShadowError, shadowProvisioner, settingsDifference } from '../../../runtime/generation/shadow-provisioner.ts';
import type { ShadowObserver } from '../../../runtime/observe/metrics/shadow.ts';
import { buildIndex } from '../../../runtime/plan/index.ts';
import type { ShadowPlan } from '../../../runtime/request/shadow.ts';
import { compileText } from '../../support/compile-text.ts';
import { configText } from '../../reference/support.ts';

function planOf(routes: readonly Record<string, unknown>[], settings: Record<string, unknown> = {}): PlanEnvelope {
  const r = compileText(configText(routes, settings));
  if (!r.plan) throw new Error(`does not compile: ${JSON.stringify(r.diagnostics)}`);
  return r.plan;
}

const ROUTES = [{ name: 'app', from: 'https://app.example.com', to: 'http://up', policy: 'allow if authenticated_user' }];
const ENFORCED = planOf(ROUTES);
const CANDIDATE = planOf([{ ...ROUTES[0], policy: 'allow if domain is "example.com"' }]);

/** The provisioner with a source answering `next()` in turn, and what it logged and reported. */
function setup(answers: (() => PlanEnvelope | null)[]) {
  const lines: Record<string, unknown>[] = [];
  const reports: string[] = [];
  const observer: ShadowObserver = {
    differed: (route, change) => void reports.push(`differed ${route} ${change}`),
    failed: () => void reports.push('failed'),
    attempted: (ok) => void reports.push(`attempted ${ok}`),
    inService: (c) => void reports.push(`inService ${c}`),
  };
  let i = 0;
  const p = shadowProvisioner({ name: 'candidate.yaml', load: () => answers[i++]!() }, observer, (e) => void lines.push(e));
  const provision = (plan: PlanEnvelope, previous: ShadowPlan | null | undefined) => p.provision(plan, buildIndex(plan.body), previous ?? undefined, { renewal: false }) as Promise<ShadowPlan | null>;
  return { p, provision, lines, reports };
}

describe('shadowProvisioner', () => {
  it('no source, no shadow', async () => {
    const p = shadowProvisioner(undefined, undefined, undefined);
    expect(await p.provision(ENFORCED, buildIndex(ENFORCED.body), undefined, { renewal: false })).toBeNull();
  });

  it('a candidate in service; the same candidate again keeps the part, a new one replaces it', async () => {
    const other = planOf([{ ...ROUTES[0], policy: 'allow if email is "a@example.com"' }]);
    const s = setup([() => CANDIDATE, () => CANDIDATE, () => other]);
    const first = await s.provision(ENFORCED, undefined);
    expect(first?.checksum).toBe(CANDIDATE.checksum);
    expect(first?.index.routes).toHaveLength(1);
    expect(await s.provision(ENFORCED, first)).toBe(first);
    const third = await s.provision(ENFORCED, first);
    expect(third?.checksum).toBe(other.checksum);
    expect(s.lines.filter((l) => l['msg'] === 'shadow plan loaded')).toHaveLength(2);
    s.p.afterSwap?.(third!, first!);
    expect(s.reports).toContain(`inService ${other.checksum}`);
  });

  it('S71: a candidate whose settings differ is refused with the setting and where it was set, never its value; the enforced plan is not refused', async () => {
    const secret = Buffer.alloc(32, 7).toString('base64');
    const differing = planOf(ROUTES, { cookie_secret: secret });
    const s = setup([() => differing]);
    expect(await s.provision(ENFORCED, undefined)).toBeNull();
    expect(s.lines).toHaveLength(1);
    const line = s.lines[0]!;
    expect(line).toMatchObject({ level: 'error', code: 'SVC_ERR_SHADOW_SETTINGS', shadow: 'candidate.yaml' });
    expect(String(line['error'])).toContain('settings.cookie');
    expect(String(line['error'])).toMatch(/^config\.yaml:\d+:\d+: /);
    expect(JSON.stringify(line)).not.toContain(secret);
    expect(s.reports).toEqual(['attempted false']);
  });

  it('S71: a candidate that fails to load keeps the last good one while it fits the enforced plan, else none; never throws', async () => {
    const fail = () => {
      throw new ShadowError('SVC_ERR_SHADOW_INVALID', 'shadow plan `candidate.yaml` (SVC_ERR_CONFIG_INVALID): bad');
    };
    const s = setup([() => CANDIDATE, fail, fail]);
    const good = await s.provision(ENFORCED, undefined);
    expect(await s.provision(ENFORCED, good)).toBe(good);
    expect(s.lines[1]).toMatchObject({ level: 'error', code: 'SVC_ERR_SHADOW_INVALID', msg: 'shadow plan not loaded; keeping the last good shadow plan', checksum: CANDIDATE.checksum });
    // The enforced plan's settings changed since: the last good candidate no longer fits.
    const changed = planOf(ROUTES, { cookie_secret: Buffer.alloc(32, 9).toString('base64') });
    expect(await s.provision(changed, good)).toBeNull();
    expect(s.lines[2]).toMatchObject({ msg: 'shadow plan not loaded; no shadow plan in service' });
    expect(s.reports).toEqual(['attempted true', 'attempted false', 'attempted false']);
  });

  it('a failing shadow decision (a bug) is counted every time and logged at most once a minute', async () => {
    const s = setup([() => CANDIDATE]);
    const part = (await s.provision(ENFORCED, undefined))!;
    s.lines.length = 0;
    part.failed(new Error('boom'));
    part.failed(new Error('boom again'));
    expect(s.reports.filter((r) => r === 'failed')).toHaveLength(2);
    expect(s.lines).toEqual([expect.objectContaining({ level: 'error', code: 'SVC_ERR_SHADOW_DECISION', error: 'boom' })]);
  });

  it('a loader error of another code is logged as SVC_ERR_SHADOW_INVALID with its cause', async () => {
    const s = setup([
      () => {
        throw new SvcError('SVC_ERR_PLAN_INVALID', 'checksum mismatch');
      },
    ]);
    expect(await s.provision(ENFORCED, undefined)).toBeNull();
    expect(s.lines[0]).toMatchObject({ code: 'SVC_ERR_SHADOW_INVALID', cause: 'SVC_ERR_PLAN_INVALID', error: 'checksum mismatch' });
  });
});

describe('settingsDifference', () => {
  it('equal settings: none; routes may differ freely', () => {
    expect(settingsDifference(ENFORCED, CANDIDATE, 'c.yaml')).toBeUndefined();
  });

  it('names the first differing setting path', () => {
    const d = settingsDifference(ENFORCED, planOf(ROUTES, { xff_num_trusted_hops: 2 }), 'c.yaml');
    expect(d).toContain('`settings.server.xffNumTrustedHops`');
  });
});
