/** runtime/observe/log/replay-attributes.ts: what the access line records for replay, bounded, never a secret. */
import { describe, expect, it } from 'vitest';
import { accessLine, type AccessEntry } from '../../../../runtime/observe/log/access-line.ts';
import { identityAttributes, MAX_GROUPS, MAX_IDENTITY_CHARS, policyClaimNames, preflightOf } from '../../../../runtime/observe/log/replay-attributes.ts';
import type { Identity } from '../../../../runtime/core/types.ts';
import { BASE_SETTINGS, compileText } from '../../../support/compile-text.ts';

function body(policies: readonly string[]) {
  const r = compileText(JSON.stringify({ ...BASE_SETTINGS, routes: policies.map((p, i) => ({ from: `https://r${i}.example.com`, to: 'http://127.0.0.1:1', policy: p })) }), 'config.json');
  if (!r.plan) throw new Error(`bug: test config: ${JSON.stringify(r.diagnostics.map((d) => d.message))}`);
  return r.plan.body;
}

const base: AccessEntry = { msg: 'request', requestId: 'r', method: 'GET', host: 'h', path: '/', status: 200, ms: 1, decision: 'allow', plan: 1 };

describe('identityAttributes', () => {
  const plan = body(['allow if claim/dept is "eng" or claim/org.team has "x"', 'allow if groups has "admins" and claim/email is "a@example.com"']);

  it('names the claims the plan reads (never claim/email: the checked email is on the line)', () => {
    expect(policyClaimNames(plan)).toEqual(['dept', 'org.team']);
    expect(policyClaimNames(body(['allow if groups has "a"']))).toEqual([]);
  });

  it('records groups as the session has them, the read claims (`[]` when the user has none) and the device; no other claim, so no token a provider put in one (docs/security.md S68)', () => {
    const identity: Identity = { user: 'u', email: 'u@example.com', groups: ['admins', 'staff'], claims: { dept: 'eng', org: { team: ['x', 'y'] }, access_token: 'SECRET-TOKEN', raw: 'SECRET' }, device: { id: 'cred-1', type: 'any', approved: true } };
    const a = identityAttributes(identity, plan);
    expect(a).toEqual({ groups: ['admins', 'staff'], claims: { dept: ['eng'], 'org.team': ['x', 'y'] }, device: { id: 'cred-1', type: 'any', approved: true }, identityCut: undefined });
    expect(a.groups).toBe(identity.groups); // the common case copies nothing
    const line = accessLine({ ...base, user: 'u', ...a }, 1);
    expect(line).not.toContain('SECRET');
    expect(identityAttributes({ user: 'v', groups: [], claims: {} }, plan)).toEqual({ groups: [], claims: { dept: [], 'org.team': [] }, device: undefined, identityCut: undefined });
  });

  it('keeps a user in 500 groups to a bounded line, and says it was cut (docs/security.md S68)', () => {
    const groups = Array.from({ length: 500 }, (_, i) => `group-with-a-rather-long-name-${i}`);
    const a = identityAttributes({ user: 'u', groups, claims: {} }, plan);
    expect(a.identityCut).toBe(true);
    expect(a.groups!.length).toBeLessThanOrEqual(MAX_GROUPS);
    expect(a.groups!.join('').length).toBeLessThanOrEqual(MAX_IDENTITY_CHARS);
    expect(a.groups).toEqual(groups.slice(0, a.groups!.length));
    const line = accessLine({ ...base, user: 'u', ...a }, 1);
    expect(line.length).toBeLessThan(8 * 1024);
    expect(JSON.parse(line)).toMatchObject({ identityCut: true });
  });

  it('cuts a claim with too many or too long values, and a group too long to log', () => {
    expect(identityAttributes({ user: 'u', groups: [], claims: { dept: Array.from({ length: 40 }, (_, i) => `d${i}`) } }, plan)).toMatchObject({ claims: { dept: Array.from({ length: 16 }, (_, i) => `d${i}`) }, identityCut: true });
    expect(identityAttributes({ user: 'u', groups: ['ok', 'x'.repeat(300)], claims: {} }, plan)).toMatchObject({ groups: ['ok'], identityCut: true });
  });
});

describe('preflightOf', () => {
  it('says whether an OPTIONS request carries Origin and Access-Control-Request-Method, never their values; nothing for other methods', () => {
    expect(preflightOf('OPTIONS', { origin: ['https://a'], 'access-control-request-method': ['PUT'] })).toBe(true);
    expect(preflightOf('OPTIONS', { origin: ['https://a'] })).toBe(false);
    expect(preflightOf('GET', { origin: ['https://a'], 'access-control-request-method': ['PUT'] })).toBeUndefined();
  });
});
