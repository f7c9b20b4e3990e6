/**
 * The exact check of `svc diff` (docs/diff.md "Exact check") on chosen cases: what sampling misses,
 * equivalences it proves, three-valued negation, CIDRs and IPv4-mapped addresses, a time zone learnt
 * by refinement, routes that shadow others (prefix and regex), and a budget that runs out. One Z3
 * context for the file.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exactCheck } from '../../../cli/diff/exact/check.ts';
import type { Z3 } from '../../../cli/diff/exact/encode.ts';
import { stopZ3, z3 } from '../../../cli/diff/exact/z3.ts';
import type { ExactAnswer, ExactReport } from '../../../cli/diff/types.ts';
import type { PlanEnvelope } from '../../../compiler/plan/types.ts';
import { planOf, route } from './helpers.ts';

let z: Z3;
beforeAll(async () => {
  z = await z3();
}, 30_000);
afterAll(async () => {
  await stopZ3();
});

const HOST = 'app.example.com';
const one = (policy: string): PlanEnvelope => planOf([route(HOST, { name: 'app', policy })]);

// The budget is wall time: generous, so a machine busy with other work cannot run it out on a
// question the solver settles in a second when idle (the budget's own test gives a tiny one).
async function check(a: PlanEnvelope, b: PlanEnvelope, budgetMs = 50_000): Promise<ExactReport> {
  return exactCheck(z, a, b, { budgetMs });
}

async function access(oldPolicy: string, newPolicy: string): Promise<{ gains: ExactAnswer; loses: ExactAnswer }> {
  const r = await check(one(oldPolicy), one(newPolicy));
  expect(r.access).toHaveLength(1);
  return { gains: r.access[0]!.gains, loses: r.access[0]!.loses };
}

const NONE: ExactAnswer = { result: 'none', witness: null, reason: null };

describe('exact check: access', () => {
  it('finds what sampling cannot: a group the policies never name', async () => {
    const r = await access('allow if groups starts_with "team-"', 'allow if groups has "team-a"');
    expect(r.gains).toEqual(NONE);
    expect(r.loses.result).toBe('change');
    const groups = (r.loses.witness!.identity as { groups: string[] }).groups;
    expect(groups.some((g) => g.startsWith('team-'))).toBe(true);
    expect(groups).not.toContain('team-a');
    expect([r.loses.witness!.old, r.loses.witness!.new]).toEqual(['allow', 'deny']);
  });

  it('proves that equivalent policies change nothing', async () => {
    expect(await access('allow if groups has "a" or groups has "b"', 'allow if groups in ["a", "b"]')).toEqual({ gains: NONE, loses: NONE });
    expect(await access('allow if domain is "Corp.Example"', 'allow if domain in ["corp.example"]')).toEqual({ gains: NONE, loses: NONE });
    expect(await access('deny if http_method is "DELETE"\nallow if accept', 'allow if not http_method is "DELETE"')).toEqual({ gains: NONE, loses: NONE });
  });

  it('keeps negation three-valued: an anonymous request never gains through `not`', async () => {
    const r = await access('allow if authenticated_user', 'allow if not groups has "contractors"');
    // Nobody gains (anonymous stays "sign in first"); contractors lose.
    expect(r.gains).toEqual(NONE);
    expect(r.loses.result).toBe('change');
    expect((r.loses.witness!.identity as { groups: string[] }).groups).toContain('contractors');
    const anon = await access('allow if authenticated_user', 'allow if accept');
    expect(anon.gains.witness!.identity).toBeNull();
    expect([anon.gains.witness!.old, anon.gains.witness!.new]).toEqual(['unauthenticated', 'allow']);
  });

  it('reads CIDRs as node:net does, IPv4-mapped forms included', async () => {
    const narrower = await access('allow if source_ip in ["10.0.0.0/8"]', 'allow if source_ip in ["10.0.0.0/9"]');
    expect(narrower.gains).toEqual(NONE);
    expect(narrower.loses.witness!.request.clientAddress).toMatch(/^10\.(1[2-9]\d|2[0-5]\d)\./);
    // Every IPv4 client is in ::ffff:0:0/96, every IPv4-mapped client in 0.0.0.0/0: the same clients.
    expect(await access('allow if source_ip in ["::ffff:0:0/96"]', 'allow if source_ip in ["0.0.0.0/0"]')).toEqual({ gains: NONE, loses: NONE });
  });

  it('learns a time zone: Paris office hours are not UTC office hours', async () => {
    const r = await access('allow if time_of_day after "09:00" before "17:00" timezone "Europe/Paris"', 'allow if time_of_day after "09:00" before "17:00"');
    for (const a of [r.gains, r.loses]) expect(a.result).toBe('change');
    // The same window written with the zone's alias is proved equal (one canonical zone).
    expect(await access('allow if day_of_week in ["sat", "sun"] timezone "Europe/Paris"', 'allow if day_of_week not_in ["mon", "tue", "wed", "thu", "fri"] timezone "Europe/Paris"')).toEqual({ gains: NONE, loses: NONE });
  });

  it('finds the email and claim values a change lets in', async () => {
    const r = await access('allow if email ends_with "@corp.example"', 'allow if domain ends_with "corp.example"');
    expect(r.loses).toEqual(NONE);
    const email = (r.gains.witness!.identity as { email: string }).email;
    expect(email.endsWith('corp.example') && !email.endsWith('@corp.example')).toBe(true);
    const c = await access('allow if claim/team has "blue"', 'allow if claim/team in ["blue", "red"]');
    expect((c.gains.witness!.identity as { claims: { team: string[] } }).claims.team).toContain('red');
  });

  it("svc's own paths never reach a route", async () => {
    expect(await access('allow if reject', 'allow if http_path is "/.svc/x" or http_path is "/.well-known/svc"')).toEqual({ gains: NONE, loses: NONE });
    const r = await access('allow if reject', 'allow if http_path starts_with "/.svc"');
    expect(r.gains.witness!.request.url).toMatch(/^https:\/\/app\.example\.com\/\.svc[^/]/);
  });

  it('an added route is compared with nobody', async () => {
    const r = await check(planOf([route(HOST, { name: 'app', policy: 'allow if accept' })]), planOf([route(HOST, { name: 'app', policy: 'allow if accept' }), route('new.example.com', { name: 'new', allow_public_unauthenticated_access: true })]));
    const added = r.access.find((x) => x.route.name === 'new')!;
    expect(added.status).toBe('added');
    expect([added.gains.witness!.old, added.gains.witness!.new]).toEqual(['absent', 'allow']);
    expect(added.gains.witness!.request.url).toBe('https://new.example.com/');
    expect(added.loses).toEqual(NONE);
  });
});

describe('exact check: routing', () => {
  it('a new route shadowing an old one moves requests, with their URL', async () => {
    const a = planOf([route(HOST, { name: 'api', prefix: '/api', policy: 'allow if accept' }), route(HOST, { name: 'rest', policy: 'allow if accept' })]);
    const b = planOf([route(HOST, { name: 'all', prefix: '/', policy: 'allow if accept' }), route(HOST, { name: 'api', prefix: '/api', policy: 'allow if accept' }), route(HOST, { name: 'rest', policy: 'allow if accept' })]);
    const r = await check(a, b);
    const moves = r.routing.find((x) => x.host === HOST)!;
    expect(moves.answer.result).toBe('change');
    expect(moves.changes.map((c) => [c.old?.name, c.new?.name]).sort()).toEqual([['api', 'all'], ['rest', 'all']]);
    expect(moves.changes.find((c) => c.old?.name === 'api')!.url).toMatch(/^https:\/\/app\.example\.com\/api/);
  });

  it('proves that a reorder of disjoint routes moves nothing', async () => {
    const x = route(HOST, { name: 'x', path: '/x', policy: 'allow if accept' });
    const y = route(HOST, { name: 'y', prefix: '/y/', policy: 'allow if accept' });
    const r = await check(planOf([x, y]), planOf([y, x]));
    expect(r.routing).toEqual([{ host: HOST, answer: NONE, changes: [] }]);
  });

  it('regex matchers are learnt from the real matcher on the witness paths', async () => {
    const rx = route(HOST, { name: 'rx', regex: '^/a/[0-9]+$', policy: 'allow if accept' });
    const all = route(HOST, { name: 'all', policy: 'allow if accept' });
    const r = await check(planOf([rx, all]), planOf([all, rx]));
    const moves = r.routing[0]!;
    expect(moves.answer.result).toBe('change');
    expect(moves.changes).toHaveLength(1);
    expect(moves.changes[0]!.url).toMatch(/^https:\/\/app\.example\.com\/a\/[0-9]+$/);
  });
});

describe('exact check: regexes', () => {
  const REGEXES = ['/api/.*', '/api/v[0-9]+(/.*)?', '/(admin|public)(/.*)?', '.*public.*', '/[a-z]+', '/x/?', '/a\\.b/.*', '(/api)?/admin/.*', '/[^/]*', '^/API.*$', '/a{2,3}', '/\\d+-\\w*'];
  const PATHS = ['/', '/api', '/api/', '/api/v1', '/api/v12/x', '/admin', '/admin/', '/public', '/x', '/x/', '/a.b/c', '/axb/c', '/API', '/aa', '/aaaa', '/12-ab_', '/-', '/publicx'];

  it('translates plain RE2 exactly: the solver and RE2 agree on every path', async () => {
    const { regexToZ3 } = await import('../../../cli/diff/exact/regex.ts');
    const { compileWholeMatch } = await import('../../../runtime/plan/rewrite.ts');
    const { lit } = await import('../../../cli/diff/exact/encode.ts');
    for (const source of REGEXES) {
      const re = regexToZ3(z, source);
      const real = compileWholeMatch(source);
      for (const path of PATHS) {
        const solver = new z.Solver();
        solver.add(z.InRe(lit(z, path), re));
        expect(await solver.check(), `${source} on ${path}`).toBe(real(path) ? 'sat' : 'unsat');
      }
    }
  });

  it('a regex it does not translate is learnt or not proved, never "none"', async () => {
    const rx = route(HOST, { name: 'rx', regex: '(?i)/a/b', policy: 'allow if accept' });
    const all = route(HOST, { name: 'all', policy: 'allow if accept' });
    const r = await check(planOf([rx, all]), planOf([all, rx]), 5_000);
    expect(r.routing[0]!.answer.result).not.toBe('none');
  });
});

describe('exact check: budget', () => {
  it('a budget that runs out is "not proved", never "none"', async () => {
    const r = await check(one('allow if groups has "a"'), one('allow if groups has "b"'), 0);
    expect(r.complete).toBe(false);
    expect(r.access[0]!.gains.result).toBe('not-proved');
    expect(r.access[0]!.gains.reason).toContain('budget');
  });
});
