/**
 * setting-flags.ts: a reviewer sees the settings changes users or other services feel at once
 * (`sign-out`, `shared-secret`, `signing-key`), judged by fingerprint: a secret that only moved to
 * another source raises nothing, and no flag holds a secret's value.
 */
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { diffPlans } from '../../../cli/diff/diff.ts';
import { renderDiffJson } from '../../../cli/diff/render-json.ts';
import { renderDiffText } from '../../../cli/diff/render-text.ts';
import { BASE_SETTINGS, TEST_SECRET } from '../../support/compile-text.ts';
import { planOf, route } from './helpers.ts';

const routes = [route('app.example.com', { allow_any_authenticated_user: true })];
const OTHER_SECRET = Buffer.alloc(32, 9).toString('base64');
/** A TEST ONLY signing key, made here, as `signing_key` takes it (base64 of the PEM). */
const signingKey = () => Buffer.from(generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string).toString('base64');

const flagsOf = (settingsA: Record<string, unknown>, settingsB: Record<string, unknown>, envB: Record<string, string> = {}) =>
  diffPlans(planOf(routes, settingsA), planOf(routes, settingsB, envB)).flags.map((f) => `${f.kind}: ${f.message.split(':')[0]}`);

describe('settings flags', () => {
  it('flag a new cookie_secret: everyone is signed out', () => {
    const d = diffPlans(planOf(routes), planOf(routes, { cookie_secret: OTHER_SECRET }));
    expect(d.flags).toEqual([{ kind: 'sign-out', route: null, message: expect.stringContaining('everyone is signed out') as string }]);
    expect(renderDiffText(d)).toContain('  ! sign-out: cookie_secret changed: ');
  });

  it('raise nothing when a secret only moves to another source with the same value', () => {
    const { cookie_secret: _c, shared_secret: _s, ...rest } = BASE_SETTINGS;
    const d = diffPlans(planOf(routes), planOf(routes, { ...rest, cookie_secret: undefined, shared_secret: undefined }, { COOKIE_SECRET: TEST_SECRET, SHARED_SECRET: TEST_SECRET }));
    expect(d.settings.map((c) => c.key)).toEqual(['cookie_secret', 'shared_secret']);
    expect(d.flags).toEqual([]);
  });

  it('flag cookie_name and cookie_domain, naming old and new values', () => {
    expect(flagsOf({}, { cookie_name: '_other' })).toEqual(['sign-out: cookie_name changed (`_svc` → `_other`)']);
    expect(flagsOf({ cookie_domain: 'example.com' }, { cookie_domain: 'apps.example.com' })).toEqual(['sign-out: cookie_domain changed (`example.com` → `apps.example.com`)']);
    expect(flagsOf({}, { cookie_domain: 'example.com' })).toEqual(['sign-out: cookie_domain changed ((unset) → `example.com`)']);
  });

  it('flag a new shared_secret: split services stop talking', () => {
    const d = diffPlans(planOf(routes), planOf(routes, { shared_secret: OTHER_SECRET }));
    expect(d.flags.map((f) => f.kind)).toEqual(['shared-secret']);
    expect(d.flags[0]!.message).toContain('stop talking to each other');
  });

  it('flag signing_key set, changed and removed: upstreams must fetch the JWKS again', () => {
    const k1 = signingKey();
    const k2 = signingKey();
    expect(flagsOf({}, { signing_key: k1 })).toEqual(['signing-key: signing_key set']);
    expect(flagsOf({ signing_key: k1 }, { signing_key: k2 })).toEqual(['signing-key: signing_key changed']);
    expect(flagsOf({ signing_key: k1 }, {})).toEqual(['signing-key: signing_key removed']);
    const d = diffPlans(planOf(routes, { signing_key: k1 }), planOf(routes, { signing_key: k2 }));
    expect(d.flags[0]!.message).toContain('fetch the JWKS (/.well-known/svc/jwks.json) again');
    for (const out of [renderDiffText(d), renderDiffJson(d)]) for (const k of [k1, k2]) expect(out).not.toContain(k.slice(20, 60));
  });

  it('raise nothing for settings without user impact', () => {
    expect(flagsOf({}, { cookie_expire: '8h', log_level: 'debug' })).toEqual([]);
  });

  it('never print a secret', () => {
    const d = diffPlans(planOf(routes), planOf(routes, { cookie_secret: OTHER_SECRET, shared_secret: OTHER_SECRET }));
    for (const out of [renderDiffText(d), renderDiffJson(d)]) {
      for (const s of [TEST_SECRET, OTHER_SECRET]) expect(out).not.toContain(s);
      expect(out).not.toMatch(/fingerprint|sha256:[0-9a-f]{16}"/);
    }
  });
});
