import { describe, expect, it } from 'vitest';
import type { PolicyIR } from '../../compiler/policy/ir.ts';
import { text } from '../compiler/policy/helpers.ts';
import { claimValues, domainOf, emailAddress, evaluatePolicy, type PolicyRequest } from './policy.ts';
import { parseIp } from './ip.ts';
import type { Identity } from '../../runtime/core/types.ts';

const request: PolicyRequest = {
  method: 'GET',
  path: '/admin/x',
  headers: {},
  clientIp: parseIp('10.1.2.3')!,
  nowMs: Date.parse('2025-06-04T10:30:00Z'), // a Wednesday, 12:30 in Paris
};
const alice: Identity = { user: 'u-alice', email: 'alice@example.com', groups: ['admins', 'team-blue'], claims: { org: { team: 'blue', levels: [1, true, { x: 1 }] }, 'org.team': 'red' } };

/** Policy text → IR through the compiler's parser (the reference evaluates IR, it does not parse). */
const ir = (t: string): PolicyIR => {
  const parsed = text(t).ir;
  if (parsed === undefined) throw new Error(`policy does not parse: ${t}`);
  return parsed;
};

describe('reference policy evaluation (docs/policy.md)', () => {
  it('lets a true deny win over a true allow, with the deny rule’s reasons', () => {
    const r = evaluatePolicy(ir('allow if groups has "admins"\ndeny if http_path starts_with "/admin"'), request, alice);
    expect(r).toEqual({ verdict: 'deny', reasons: ['http-path-ok'] });
  });

  it('allows on a true allow rule, reasons of every true allow rule without repeats', () => {
    const r = evaluatePolicy(ir('allow if groups has "admins" and email ends_with "@example.com"\nallow if groups has "nobody" or email is "alice@example.com"\nallow if reject'), request, alice);
    expect(r).toEqual({ verdict: 'allow', reasons: ['groups-ok', 'email-ok'] });
  });

  it('never lets an anonymous request in through negation', () => {
    const r = evaluatePolicy(ir('allow if not groups has "contractors"'), request, null);
    expect(r).toEqual({ verdict: 'unauthenticated', reasons: ['user-unauthenticated'] });
  });

  it('uses Kleene logic: false and unknown is false, true or unknown is true', () => {
    expect(evaluatePolicy(ir('allow if reject and authenticated_user'), request, null)).toEqual({ verdict: 'deny', reasons: ['reject-unauthorized'] });
    expect(evaluatePolicy(ir('allow if accept or authenticated_user'), request, null)).toEqual({ verdict: 'allow', reasons: ['accept-ok'] });
  });

  it('makes an unknown deny rule ask for sign-in even when an allow rule holds', () => {
    const r = evaluatePolicy(ir('allow if accept\ndeny if groups has "banned"'), request, null);
    expect(r).toEqual({ verdict: 'unauthenticated', reasons: ['user-unauthenticated'] });
  });

  it('denies with no-matching-rule when there is no allow rule, else with the allow rules’ reasons', () => {
    expect(evaluatePolicy(ir('deny if reject'), request, alice)).toEqual({ verdict: 'deny', reasons: ['no-matching-rule'] });
    expect(evaluatePolicy({ rules: [] }, request, alice)).toEqual({ verdict: 'deny', reasons: ['no-matching-rule'] });
    expect(evaluatePolicy(ir('allow if user is "bob"\ndeny if reject'), request, alice)).toEqual({ verdict: 'deny', reasons: ['user-unauthorized'] });
  });

  it('reads claims by exact key first, then by walking dotted names, own properties only', () => {
    expect(claimValues(alice.claims, 'org.team')).toEqual(['red']);
    expect(claimValues(alice.claims, 'org.levels')).toEqual(['1', 'true']);
    expect(claimValues(alice.claims, 'org')).toEqual([]);
    expect(claimValues(alice.claims, 'constructor')).toEqual([]);
    expect(claimValues(alice.claims, 'org.team.x')).toEqual([]);
    expect(claimValues({ n: 3, b: false, s: 'x', z: null }, 'n')).toEqual(['3']);
    expect(claimValues({ n: 3, b: false, s: 'x', z: null }, 'b')).toEqual(['false']);
    expect(claimValues({ n: 3, b: false, s: 'x', z: null }, 'z')).toEqual([]);
  });

  it('reads the domain of an address only, lower-cased', () => {
    expect(domainOf('a@Example.COM')).toBe('example.com');
    expect(domainOf('x@evil.example@corp.example')).toBe('');
    expect(domainOf('"x@evil.example"@corp.example')).toBe('');
    expect(domainOf('a@corp.example.')).toBe('');
    expect(domainOf('a@-corp.example')).toBe('');
    expect(domainOf('a@corp.example ')).toBe('');
    expect(domainOf('nobody')).toBe('');
    expect(domainOf(undefined)).toBe('');
    expect(emailAddress('Alice@Example.com')).toBe('Alice@example.com');
    expect(emailAddress('a..b@example.com')).toBeUndefined();
  });

  it('treats not_in on a list criterion as "no value is in the list"', () => {
    expect(evaluatePolicy(ir('allow if claim/missing not_in ["x"]'), request, alice).verdict).toBe('allow');
    expect(evaluatePolicy(ir('allow if groups not_in ["admins"]'), request, alice).verdict).toBe('deny');
  });

  it('evaluates source_ip, time and date criteria against the request', () => {
    expect(evaluatePolicy(ir('allow if source_ip in ["10.0.0.0/8"]'), request, null).verdict).toBe('allow');
    expect(evaluatePolicy(ir('allow if source_ip not_in ["10.0.0.0/8"]'), request, null).verdict).toBe('deny');
    expect(evaluatePolicy(ir('allow if time_of_day after "12:00" before "13:00" timezone "Europe/Paris"'), request, null).verdict).toBe('allow');
    expect(evaluatePolicy(ir('allow if time_of_day after "12:31" timezone "Europe/Paris"'), request, null).verdict).toBe('deny');
    expect(evaluatePolicy(ir('allow if time_of_day after "22:00" before "11:00"'), request, null).verdict).toBe('allow'); // wraps midnight, 10:30 UTC
    expect(evaluatePolicy(ir('allow if day_of_week is "wed"'), request, null).verdict).toBe('allow');
    expect(evaluatePolicy(ir('allow if day_of_week is "thu" timezone "Pacific/Kiritimati"'), request, null).verdict).toBe('allow'); // UTC+14
    expect(evaluatePolicy(ir('allow if date after "2025-06-04T10:30:00Z"'), request, null).verdict).toBe('deny'); // strictly after
    expect(evaluatePolicy(ir('allow if date before "2025-06-04T10:30:00.001Z"'), request, null).verdict).toBe('allow');
  });

  it('evaluates cors_preflight, device and client certificates', () => {
    const preflight = { ...request, method: 'OPTIONS', headers: { origin: ['https://x'], 'access-control-request-method': ['PUT'] } };
    expect(evaluatePolicy(ir('allow if cors_preflight'), preflight, null).verdict).toBe('allow');
    expect(evaluatePolicy(ir('allow if cors_preflight'), { ...preflight, headers: { origin: ['https://x'] } }, null).verdict).toBe('deny');
    expect(evaluatePolicy(ir('allow if device approved'), request, alice)).toEqual({ verdict: 'unauthenticated', reasons: ['device-unauthenticated'] });
    expect(evaluatePolicy(ir('allow if device approved'), request, { ...alice, device: { id: 'd', type: 'any', approved: false } })).toEqual({ verdict: 'deny', reasons: ['device-unauthorized'] });
    expect(evaluatePolicy(ir('allow if device approved'), request, { ...alice, device: { id: 'd', type: 't', approved: true } }).verdict).toBe('allow');
    const fp = 'ab'.repeat(32);
    expect(evaluatePolicy(ir(`allow if client_certificate is "${fp}"`), { ...request, clientCertificate: { fingerprint: fp, valid: true } }, null).verdict).toBe('allow');
    expect(evaluatePolicy(ir(`allow if client_certificate is "${fp}"`), { ...request, clientCertificate: { fingerprint: fp, valid: false } }, null).verdict).toBe('deny');
    expect(evaluatePolicy(ir('deny if invalid_client_certificate\nallow if accept'), { ...request, clientCertificate: { fingerprint: fp, valid: false } }, null)).toEqual({
      verdict: 'deny',
      reasons: ['invalid-client-certificate-ok'],
    });
  });
});
