/**
 * The shadow decision (runtime/request/shadow.ts): a candidate plan decides the same request, and
 * each way it can differ is classified (allow_to_deny, deny_to_allow, outcome_changed,
 * route_changed, upstream_changed); a candidate deciding alike gives no difference and counts
 * nothing; a candidate that throws is the shadow's failure, never the request's.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Identity } from '../../../runtime/core/types.ts';
import { buildIndex, type PlanIndex } from '../../../runtime/plan/index.ts';
import { canonicalize, rule } from '../../../runtime/request/decide.ts';
import { planIndependent, shadowDifference, type ShadowChange, type ShadowPlan } from '../../../runtime/request/shadow.ts';
import { compileBody, configText, makeRequest } from '../../reference/support.ts';

const ALICE: Identity = { user: 'u-alice', email: 'alice@example.com', groups: ['staff'], claims: {} };
const BOB: Identity = { user: 'u-bob', email: 'bob@other.example', groups: [], claims: {} };

const indexOf = (routes: readonly Record<string, unknown>[]): PlanIndex => buildIndex(compileBody(configText(routes)));

const ENFORCED = [
  { name: 'admin', from: 'https://admin.example.com', to: 'http://admin-up', policy: 'allow if domain is "example.com"' },
  { name: 'app', from: 'https://app.example.com', to: 'http://app-up', policy: 'allow if authenticated_user' },
  { name: 'docs', from: 'https://docs.example.com', to: 'http://docs-up', allow_public_unauthenticated_access: true },
];

/** A shadow plan of `candidate` that records what it is told. */
function shadowOf(candidate: readonly Record<string, unknown>[]): ShadowPlan & { readonly told: [string, ShadowChange][]; readonly failures: unknown[] } {
  const told: [string, ShadowChange][] = [];
  const failures: unknown[] = [];
  return { index: indexOf(candidate), checksum: 'sha256:candidate', differed: (route, change) => void told.push([route, change]), failed: (e) => void failures.push(e), told, failures };
}

/** The enforced ruling of a request to `url` by `identity`, and the shadow's difference, as the gate computes them. */
function both(enforced: PlanIndex, shadow: ShadowPlan, url: string, identity: Identity | null, accept = 'application/json') {
  const u = new URL(url);
  const request = makeRequest({ host: u.host, target: u.pathname + u.search, headers: { accept: [accept] } });
  const canonical = canonicalize(enforced, request);
  const ruling = rule(enforced, request, identity, { reasons: false, canonical });
  const difference = shadowDifference(shadow, enforced, ruling, (index) => rule(index, request, identity, { reasons: false, canonical: planIndependent(canonical), template: false }));
  return { ruling, difference };
}

describe('shadowDifference', () => {
  const enforced = indexOf(ENFORCED);

  it('an identical candidate decides alike: no difference, nothing counted, whatever the request', () => {
    const shadow = shadowOf(ENFORCED);
    for (const url of ['https://admin.example.com/', 'https://app.example.com/x?y=1', 'https://docs.example.com/', 'https://nowhere.example.com/', 'https://app.example.com/%2e%2e/']) {
      for (const identity of [ALICE, BOB, null]) expect(both(enforced, shadow, url, identity).difference).toBeUndefined();
    }
    expect(shadow.told).toEqual([]);
    expect(shadow.failures).toEqual([]);
  });

  it('allow_to_deny: a user the candidate would refuse, with its outcome, route and reasons', () => {
    const shadow = shadowOf([{ ...ENFORCED[0], policy: 'allow if email is "bob@other.example"' }, ...ENFORCED.slice(1)]);
    const { ruling, difference } = both(enforced, shadow, 'https://admin.example.com/', ALICE);
    expect(ruling.outcome).toBe('forward'); // the enforced decision is untouched
    expect(difference).toMatchObject({ change: 'allow_to_deny', outcome: 'deny', route: 'admin' });
    expect(difference!.reasons!.length).toBeGreaterThan(0);
    expect(shadow.told).toEqual([['admin', 'allow_to_deny']]);
  });

  it('deny_to_allow: a user the candidate would let in (a public route, or a wider policy)', () => {
    const shadow = shadowOf([{ ...ENFORCED[0], policy: 'allow if authenticated_user' }, ...ENFORCED.slice(1)]);
    const { ruling, difference } = both(enforced, shadow, 'https://admin.example.com/', BOB);
    expect(ruling.outcome).toBe('deny');
    expect(difference).toEqual({ change: 'deny_to_allow', outcome: 'allow', route: 'admin' });
    expect(shadow.told).toEqual([['admin', 'deny_to_allow']]);
    // A route the enforced plan does not have: 404 → allow is access gained too.
    const wider = shadowOf([...ENFORCED, { name: 'new', from: 'https://new.example.com', to: 'http://new-up', allow_public_unauthenticated_access: true }]);
    expect(both(enforced, wider, 'https://new.example.com/', null).difference).toEqual({ change: 'deny_to_allow', outcome: 'allow', route: 'new', reasons: ['public-route'] });
    expect(wider.told).toEqual([['new', 'deny_to_allow']]);
  });

  it('outcome_changed: both refuse, differently (403 becomes 404 when the candidate drops the route)', () => {
    const shadow = shadowOf(ENFORCED.slice(1));
    const { difference } = both(enforced, shadow, 'https://admin.example.com/', BOB);
    expect(difference).toEqual({ change: 'outcome_changed', outcome: 'not_found', reasons: ['no-route'] });
    expect(shadow.told).toEqual([['admin', 'outcome_changed']]);
  });

  it('route_changed: the same outcome from another route', () => {
    const shadow = shadowOf([{ name: 'app-api', from: 'https://app.example.com', prefix: '/api', to: 'http://app-up', policy: 'allow if authenticated_user' }, ...ENFORCED]);
    expect(both(enforced, shadow, 'https://app.example.com/api/x', ALICE).difference).toEqual({ change: 'route_changed', outcome: 'allow', route: 'app-api' });
    expect(both(enforced, shadow, 'https://app.example.com/other', ALICE).difference).toBeUndefined();
    expect(shadow.told).toEqual([['app', 'route_changed']]);
  });

  it('upstream_changed: the same route sent elsewhere', () => {
    const shadow = shadowOf([ENFORCED[0]!, { ...ENFORCED[1], to: 'http://app-up-2' }, ENFORCED[2]!]);
    expect(both(enforced, shadow, 'https://app.example.com/', ALICE).difference).toEqual({ change: 'upstream_changed', outcome: 'allow', route: 'app' });
    // Refused alike: where it would have gone does not matter.
    expect(both(enforced, shadow, 'https://app.example.com/', null).difference).toBeUndefined();
    expect(shadow.told).toEqual([['app', 'upstream_changed']]);
  });

  it('a candidate that throws is the shadow failing: no difference, counted as a failure, never thrown', () => {
    const shadow = shadowOf(ENFORCED);
    const request = makeRequest({ host: 'app.example.com' });
    const ruling = rule(enforced, request, ALICE);
    expect(
      shadowDifference(shadow, enforced, ruling, () => {
        throw new Error('boom');
      }),
    ).toBeUndefined();
    expect(shadow.failures).toHaveLength(1);
    expect(shadow.told).toEqual([]);
  });

  it('the plan itself as candidate never differs (property: any host, path, method and identity)', () => {
    const shadow = shadowOf(ENFORCED);
    const host = fc.constantFrom('admin.example.com', 'app.example.com', 'docs.example.com', 'auth.example.com', 'x.example.com');
    const path = fc.oneof(fc.webPath(), fc.constantFrom('/', '/.svc/sign_in', '/a%2fb', '/a;b', '/..'));
    const identity = fc.constantFrom(ALICE, BOB, null);
    fc.assert(
      fc.property(host, path, fc.constantFrom('GET', 'POST', 'DELETE'), identity, fc.constantFrom('text/html', 'application/json'), (h, p, method, who, accept) => {
        const request = makeRequest({ host: h, target: p === '' ? '/' : p, method, headers: { accept: [accept] } });
        const canonical = canonicalize(enforced, request);
        const ruling = rule(enforced, request, who, { reasons: false, canonical });
        expect(shadowDifference(shadow, enforced, ruling, (index) => rule(index, request, who, { reasons: false, canonical: planIndependent(canonical), template: false }))).toBeUndefined();
      }),
      { numRuns: 300 },
    );
    expect(shadow.told).toEqual([]);
  });
});
