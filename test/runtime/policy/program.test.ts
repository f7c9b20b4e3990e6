/**
 * Policy programs: deny wins, Kleene three-valued logic for anonymous requests (never access through
 * negation), reasons per docs/decisions.md §4, and the fast verdict agreeing with the explanation.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { PolicyIR } from '../../../compiler/policy/ir.ts';
import { compilePolicy, type PolicyInput } from '../../../runtime/policy/program.ts';
import type { Identity } from '../../../runtime/core/types.ts';
import { policy as arbitraryPolicyOf } from '../../compiler/policy/arbitrary.ts';
import { text } from '../../compiler/policy/helpers.ts';

function policy(t: string): PolicyIR {
  const r = text(t);
  if (!r.ir) throw new Error(`bad policy: ${r.codes.join(', ')}`);
  return r.ir;
}

const alice: Identity = { user: 'alice', email: 'alice@example.com', groups: ['staff'], claims: { org: { team: 'blue' }, roles: ['editor', 3, null] } };
const bob: Identity = { user: 'bob', email: 'bob@other.example', groups: ['contractors'], claims: {} };

function input(identity: Identity | null, over: Partial<PolicyInput> = {}): PolicyInput {
  return { identity, method: 'GET', path: '/', headers: {}, clientAddress: '10.0.0.1', clientCertificate: null, nowMs: Date.UTC(2025, 0, 6, 10, 30), ...over };
}

const decideWith = (t: string, i: PolicyInput) => compilePolicy(policy(t)).explain(i);

describe('verdicts', () => {
  it('allows a user whose criterion holds, denies one whose does not', () => {
    expect(decideWith('allow if domain is "example.com"', input(alice))).toMatchObject({ verdict: 'allow', reasons: ['domain-ok'] });
    expect(decideWith('allow if domain is "example.com"', input(bob))).toMatchObject({ verdict: 'deny', reasons: ['domain-unauthorized'] });
  });

  it('deny wins over allow', () => {
    const e = decideWith('allow if groups has "staff"\ndeny if http_method is "DELETE"', input(alice, { method: 'DELETE' }));
    expect(e).toMatchObject({ verdict: 'deny', reasons: ['http-method-ok'] });
  });

  it('an anonymous request meets a session criterion as unknown, even under `not`', () => {
    expect(decideWith('allow if not groups has "contractors"', input(null))).toMatchObject({ verdict: 'unauthenticated', reasons: ['user-unauthenticated'] });
    expect(decideWith('deny if not authenticated_user\nallow if accept', input(null)).verdict).toBe('unauthenticated');
  });

  it('Kleene logic: true or unknown is true; false and unknown is false', () => {
    expect(decideWith('allow if accept or groups has "x"', input(null)).verdict).toBe('allow');
    expect(decideWith('allow if reject and groups has "x"', input(null))).toMatchObject({ verdict: 'deny', reasons: ['reject-unauthorized'] });
  });

  it('a true deny rule decides before an unknown one', () => {
    expect(decideWith('deny if groups has "x"\ndeny if http_path starts_with "/admin"\nallow if accept', input(null, { path: '/admin/x' }))).toMatchObject({ verdict: 'deny', reasons: ['http-path-ok'] });
  });

  it('a policy without rules denies with `no-matching-rule`', () => {
    expect(compilePolicy({ rules: [] }).explain(input(alice))).toMatchObject({ verdict: 'deny', reasons: ['no-matching-rule'] });
  });
});

describe('criteria', () => {
  it('claims: direct, dotted through nested objects, lists of scalars', () => {
    expect(decideWith('allow if claim/org.team is "blue"', input(alice)).verdict).toBe('allow');
    expect(decideWith('allow if claim/roles has "3"', input(alice)).verdict).toBe('allow');
    expect(decideWith('allow if claim/roles not_in ["viewer"]', input(alice)).verdict).toBe('allow');
    expect(decideWith('allow if claim/missing not_in ["x"]', input(alice)).verdict).toBe('allow');
    expect(decideWith('allow if claim/missing has "x"', input(alice)).verdict).toBe('deny');
  });

  it('source_ip: CIDR membership over IPv4 and IPv6', () => {
    expect(decideWith('allow if source_ip in ["10.0.0.0/8"]', input(alice)).verdict).toBe('allow');
    expect(decideWith('allow if source_ip in ["10.0.0.0/8"]', input(alice, { clientAddress: '11.0.0.1' })).verdict).toBe('deny');
    expect(decideWith('allow if source_ip in ["2001:db8::/32"]', input(alice, { clientAddress: '2001:db8::7' })).verdict).toBe('allow');
    expect(decideWith('allow if source_ip not_in ["2001:db8::/32"]', input(alice, { clientAddress: '10.0.0.1' })).verdict).toBe('allow');
  });

  it('time criteria read the request time in the matcher time zone', () => {
    // 2025-01-06 is a Monday; 10:30 UTC is 11:30 in Paris.
    expect(decideWith('allow if day_of_week is "mon"', input(alice)).verdict).toBe('allow');
    expect(decideWith('allow if time_of_day after "11:00" before "12:00" timezone "Europe/Paris"', input(alice)).verdict).toBe('allow');
    expect(decideWith('allow if time_of_day after "11:00" before "12:00"', input(alice)).verdict).toBe('deny');
    expect(decideWith('allow if time_of_day after "22:00" before "11:00"', input(alice)).verdict).toBe('allow');
    expect(decideWith('allow if date after "2025-01-06T10:30:00Z"', input(alice)).verdict).toBe('deny');
  });

  it('cors_preflight and client certificates', () => {
    const pre = { method: 'OPTIONS', headers: { origin: ['https://a'], 'access-control-request-method': ['GET'] } };
    expect(decideWith('allow if cors_preflight', input(null, pre)).verdict).toBe('allow');
    expect(decideWith('allow if cors_preflight', input(null, { method: 'OPTIONS' })).verdict).toBe('deny');
    const fp = 'a'.repeat(64);
    expect(decideWith(`allow if client_certificate is "${fp}"`, input(null, { clientCertificate: { fingerprint: fp, valid: true } })).verdict).toBe('allow');
    expect(decideWith(`allow if client_certificate is "${fp}"`, input(null, { clientCertificate: { fingerprint: fp, valid: false } })).verdict).toBe('deny');
    expect(decideWith('deny if invalid_client_certificate\nallow if accept', input(null, { clientCertificate: { fingerprint: fp, valid: false } })).verdict).toBe('deny');
  });
});

describe('properties', () => {
  const arbitraryPolicy = arbitraryPolicyOf();
  const identities = fc.constantFrom<Identity | null>(null, alice, bob);
  it('the fast verdict equals the explained verdict', () => {
    fc.assert(
      fc.property(arbitraryPolicy, identities, fc.constantFrom('GET', 'DELETE', 'OPTIONS'), (ir, id, method) => {
        const p = compilePolicy(ir);
        const i = input(id, { method });
        expect(p.verdict(i)).toBe(p.explain(i).verdict);
      }),
      { numRuns: 300 },
    );
  });

  it('a definite anonymous verdict holds for every identity (unknown is never resolved by guessing)', () => {
    fc.assert(
      fc.property(arbitraryPolicy, (ir) => {
        const p = compilePolicy(ir);
        const anonymous = p.verdict(input(null));
        if (anonymous === 'unauthenticated') return;
        for (const id of [alice, bob]) expect(p.verdict(input(id))).toBe(anonymous);
      }),
      { numRuns: 300 },
    );
  });
});
