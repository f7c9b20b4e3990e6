/** access.ts and probes.ts: who gains or loses access, evaluated with the runtime's policy programs. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareAccess, describeClassChange, routeAccess } from '../../../cli/diff/access.ts';
import { identityProbes, requestProbes } from '../../../cli/diff/probes.ts';
import { pairRoutes } from '../../../cli/diff/routes.ts';
import type { ClassChange } from '../../../cli/diff/types.ts';
import type { PolicyIR } from '../../../compiler/plan/types.ts';
import { policy as arbitraryPolicy } from '../../compiler/policy/arbitrary.ts';
import { text as parseText } from '../../compiler/policy/helpers.ts';
import { planOf, route } from './helpers.ts';

function ir(text: string): PolicyIR {
  const r = parseText(text);
  if (!r.ir || r.codes.length) throw new Error(`bad policy in test: ${text}: ${r.codes.join(', ')}`);
  return r.ir;
}
const side = (text: string) => ({ policy: ir(text), public: false });
const summary = (d: ReturnType<typeof compareAccess>) => ({
  gains: d.gains.map(describeClassChange),
  loses: d.loses.map(describeClassChange),
});

describe('compareAccess', () => {
  it('a group added with `or` gains access, and nobody else changes', () => {
    const d = compareAccess(side('allow if domain is "example.com"'), side('allow if domain is "example.com" or groups has "contractors"'));
    expect(summary(d)).toEqual({ gains: ['group contractors'], loses: [] });
    expect(d.gains[0]?.all).toBe(true);
  });

  it('a route made public: every class without access gains, anonymous included', () => {
    const d = compareAccess(side('allow if domain is "example.com"'), { policy: ir('allow if accept'), public: true });
    expect(summary(d)).toEqual({ gains: ['any authenticated user', 'anonymous'], loses: [] });
  });

  it('a new deny for one method loses access only for that method', () => {
    const d = compareAccess(side('allow if groups has "eng"'), side('allow if groups has "eng"\ndeny if http_method in ["DELETE", "PUT"] and not groups has "ops"'));
    expect(summary(d)).toEqual({ gains: [], loses: ['group eng (for DELETE /, PUT /)'] });
    expect(d.loses[0]).toEqual({ identity: 'group eng', all: false, requests: ['DELETE /', 'PUT /'] });
  });

  it('reports a combination of two values only when its parts do not explain the change', () => {
    const d = compareAccess(side('allow if groups has "a"'), side('allow if groups has "a" and not groups has "b"'));
    expect(summary(d)).toEqual({ gains: [], loses: ['group a + group b'] });
  });

  it('a narrower time window loses access at the instants outside it', () => {
    const d = compareAccess(side('allow if groups has "oncall"'), side('allow if groups has "oncall" and day_of_week not_in ["sat", "sun"]'));
    expect(d.gains).toEqual([]);
    expect(d.loses).toHaveLength(1);
    const lost = d.loses[0]!;
    expect(lost.identity).toBe('group oncall');
    expect(lost.all).toBe(false);
    const days = lost.requests.map((r) => new Date(/at (\S+)/.exec(r)?.[1] ?? '').getUTCDay());
    expect(days.length).toBeGreaterThan(0);
    expect(days.every((d) => d === 0 || d === 6)).toBe(true);
  });

  it('a time-of-day window in a time zone is sampled at its boundaries', () => {
    const d = compareAccess(side('allow if user is "alice"'), side('allow if user is "alice" and time_of_day after "09:00" before "17:00" timezone "Europe/Paris"'));
    const times = d.loses[0]?.requests.map((r) => /T(\d\d:\d\d)/.exec(r)?.[1]);
    // 08:59 and 17:00 Paris time (UTC+1 in January) are outside; 09:00 and 16:59 are inside.
    expect(new Set(times)).toEqual(new Set(['07:59', '16:00']));
  });

  it('an added route (compared with none) gains for whoever it allows; a removed one loses', () => {
    expect(summary(compareAccess(null, side('allow if email is "a@example.com"')))).toEqual({ gains: ['email a@example.com'], loses: [] });
    expect(summary(compareAccess(side('allow if authenticated_user'), null)).loses).toEqual(['any authenticated user']);
  });

  it('equal policies change nothing; gains one way are losses the other way (property)', () => {
    fc.assert(
      fc.property(arbitraryPolicy(), arbitraryPolicy(), (a, b) => {
        const same = compareAccess({ policy: a, public: false }, { policy: a, public: false });
        expect(same).toEqual({ gains: [], loses: [] });
        const ab = compareAccess({ policy: a, public: false }, { policy: b, public: false });
        const ba = compareAccess({ policy: b, public: false }, { policy: a, public: false });
        // Classes, requests and the two halves of a pair follow the order the policies name them,
        // so compare as sets of (class, request) with pair halves sorted.
        const key = (identity: string) => identity.split(' + ').sort().join(' + ');
        const cells = (xs: readonly ClassChange[]) => new Set(xs.flatMap((c) => c.requests.map((r) => `${key(c.identity)} | ${r}`)));
        expect(cells(ab.gains)).toEqual(cells(ba.loses));
        expect(cells(ab.loses)).toEqual(cells(ba.gains));
      }),
      { numRuns: 20 },
    );
  });
});

describe('probes', () => {
  it('one identity class per named value, then any authenticated user and anonymous, then pairs', () => {
    const labels = identityProbes([ir('allow if groups has "admins" or domain is "example.com" or claim/dept in ["eng", "ops"]')]).map((p) => p.label);
    expect(labels.slice(0, 6)).toEqual(['group admins', 'domain example.com', 'claim/dept eng', 'claim/dept ops', 'any authenticated user', 'anonymous']);
    expect(labels).toContain('group admins + domain example.com');
  });

  it('claims named like Object members (toString, __proto__, constructor) are plain data (found by the property test)', () => {
    const d = compareAccess(side('allow if claim/toString has "a"'), side('allow if claim/toString has "a" or claim/__proto__ has "b" or claim/constructor has "c"'));
    expect(summary(d)).toEqual({ gains: ['claim/__proto__ b', 'claim/constructor c'], loses: [] });
    const probe = identityProbes([ir('allow if claim/__proto__ has "b"')])[0]!;
    expect(Object.getPrototypeOf(probe.identity!.claims)).toBe(Object.prototype);
    expect(Object.keys(probe.identity!.claims)).toEqual(['__proto__']);
  });

  it('requests: each named method plus GET, each named path plus /', () => {
    const labels = requestProbes([ir('allow if http_method is "POST" and http_path starts_with "/admin"')]).map((r) => r.label);
    expect(labels).toEqual(['GET /', 'GET /admin', 'POST /', 'POST /admin']);
  });

  it('keeps the request set bounded when many request criteria are named', () => {
    const text = 'allow if http_method in ["A", "B", "C", "D", "E", "F"] and http_path in ["/1", "/2", "/3", "/4", "/5", "/6"] and source_ip in ["10.0.0.0/8", "10.1.0.0/16", "10.2.0.0/16", "10.3.0.0/16", "10.4.0.0/16", "10.5.0.0/16"]\nallow if date after "2030-01-01T00:00:00Z" and time_of_day after "09:00"';
    const n = requestProbes([ir(text)]).length;
    expect(n).toBeGreaterThan(6);
    expect(n).toBeLessThanOrEqual(256);
  });
});

describe('routeAccess', () => {
  it('reports per route only routes whose policy or publicity changed and where someone gains or loses', () => {
    const a = planOf([
      route('a.example.com', { name: 'a', policy: 'allow if domain is "example.com"' }),
      route('b.example.com', { name: 'b', policy: 'allow if groups has "x"', timeout: '5s' }),
      route('c.example.com', { name: 'c', policy: 'allow if groups has "x"' }),
    ]);
    const b = planOf([
      route('a.example.com', { name: 'a', policy: 'allow if domain is "example.com" or groups has "contractors"' }),
      route('b.example.com', { name: 'b', policy: 'allow if groups has "x"', timeout: '9s' }),
      route('c.example.com', { name: 'c', policy: 'allow if groups has "x" or groups has "x"' }),
      route('d.example.com', { name: 'd', allow_public_unauthenticated_access: true }),
    ]);
    const acc = routeAccess(pairRoutes(a.body.routes, b.body.routes));
    expect(acc.map((x) => [x.route.name, x.status, x.gains.map(describeClassChange)])).toEqual([
      ['a', 'changed', ['group contractors']],
      ['d', 'added', ['any authenticated user', 'anonymous']],
    ]);
  });

  it('samples requests on a path the route matches', () => {
    const a = planOf([route('a.example.com', { name: 'api', prefix: '/api', policy: 'allow if groups has "dev"' })]);
    const b = planOf([route('a.example.com', { name: 'api', prefix: '/api', policy: 'allow if groups has "dev"\ndeny if http_method is "DELETE"' })]);
    const acc = routeAccess(pairRoutes(a.body.routes, b.body.routes));
    expect(acc[0]?.loses).toEqual([{ identity: 'group dev', all: false, requests: ['DELETE /api'] }]);
  });
});
