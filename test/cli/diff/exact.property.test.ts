/**
 * The exact check of `svc diff` (docs/diff.md "Exact check") against brute force: generated plan
 * pairs (a few routes on one host, policies over a small vocabulary, then policies changed, routes
 * added, removed or moved) are compared over every identity and request of a small universe with the
 * reference interpreter (test/reference/). Whenever brute force finds a request that one plan allows
 * and the other does not, the check must report that change (on the route, or as a routing move),
 * never "none"; every witness it reports must be confirmed by svc's real policy programs and by the
 * reference. `FC_SEED=<n>` replays a seed.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exactCheck } from '../../../cli/diff/exact/check.ts';
import type { Z3 } from '../../../cli/diff/exact/encode.ts';
import { stopZ3, z3 } from '../../../cli/diff/exact/z3.ts';
import type { ExactReport, ExactWitness } from '../../../cli/diff/types.ts';
import type { PlanBody, PlanEnvelope, Route } from '../../../compiler/plan/types.ts';
import type { Identity } from '../../../runtime/core/types.ts';
import { compilePolicy } from '../../../runtime/policy/program.ts';
import { firstMatchingRoute } from '../../reference/interpreter.ts';
import { parseIp } from '../../reference/ip.ts';
import { evaluatePolicy } from '../../reference/policy.ts';
import { makeRequest } from '../../reference/support.ts';
import { planOf, route } from './helpers.ts';

const HOST = 'a.example.com';
const FP = 'ab'.repeat(32);
const CRITERIA = [
  'groups has "g1"', 'groups has "g2"', 'groups starts_with "g"', 'domain is "x.com"', 'email is "a@x.com"', 'user is "u1"',
  'claim/team has "blue"', 'device approved', 'http_method is "DELETE"', 'http_path starts_with "/api"', 'source_ip in ["10.0.0.0/8"]',
  'authenticated_user', 'cors_preflight', `client_certificate in ["${FP}"]`, 'time_of_day after "10:00" before "14:00"',
  'date after "2025-06-02T00:00:00Z"', 'day_of_week is "mon"', 'true', 'false',
] as const;

const exprArb: fc.Arbitrary<string> = fc.letrec<{ e: string }>((tie) => ({
  e: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom(...CRITERIA),
    tie('e').map((a) => `not (${a})`),
    fc.tuple(tie('e'), tie('e')).map(([a, b]) => `(${a}) and (${b})`),
    fc.tuple(tie('e'), tie('e')).map(([a, b]) => `(${a}) or (${b})`),
  ),
})).e;

const policyArb = fc.array(fc.tuple(fc.constantFrom('allow', 'allow', 'deny'), exprArb).map(([a, e]) => `${a} if ${e}`), { minLength: 1, maxLength: 3 }).map((rs) => rs.join('\n'));

interface RouteSpec {
  readonly name: string;
  readonly match: Record<string, string>;
  readonly policy: string | null; // null: public
}

const MATCHES: Record<string, string>[] = [{}, { prefix: '/api' }, { path: '/b' }, { prefix: '/' }, { prefix: '/api/' }, { regex: '/api/[a-z]+' }, { regex: '/(b|c)' }];
const routeArb = (name: string): fc.Arbitrary<RouteSpec> =>
  fc.record({ name: fc.constant(name), match: fc.constantFrom(...MATCHES), policy: fc.option(policyArb, { freq: 6, nil: null }) });

/** Old routes, and new ones made from them: policies changed, routes added, removed, moved. */
const pairArb = fc
  .tuple(fc.tuple(routeArb('r0'), routeArb('r1'), routeArb('r2')), fc.integer({ min: 1, max: 3 }), routeArb('r3'), fc.array(fc.nat(3), { maxLength: 3 }), fc.array(fc.tuple(fc.nat(3), policyArb), { maxLength: 2 }), fc.boolean(), fc.nat(3))
  .map(([all, n, extra, swaps, edits, add, remove]) => {
    const old = all.slice(0, n);
    let next: RouteSpec[] = [...old];
    for (const [k, p] of edits) if (next[k % next.length]) next[k % next.length] = { ...next[k % next.length]!, policy: p };
    for (const s of swaps) {
      const i = s % next.length;
      const j = (i + 1) % next.length;
      [next[i], next[j]] = [next[j]!, next[i]!];
    }
    if (add) next.splice(remove % (next.length + 1), 0, extra);
    else if (next.length > 1 && remove < next.length) next = next.filter((_, k) => k !== remove);
    return { old, next };
  });

function plan(specs: readonly RouteSpec[]): PlanEnvelope {
  return planOf(specs.map((s) => route(HOST, { name: s.name, ...s.match, ...(s.policy === null ? { allow_public_unauthenticated_access: true } : { policy: s.policy }) })));
}

// The universe: identities and requests that tell the vocabulary's values apart.
const IDENTITIES: (Identity | null)[] = [null];
for (const user of ['u1', 'u2'])
  for (const email of [undefined, 'a@x.com', 'b@y.org'])
    for (const groups of [[], ['g1'], ['g2']])
      for (const team of [[], ['blue']])
        for (const device of [undefined, { id: 'd1', type: 't', approved: true }])
          if (user === 'u1' || (email === undefined && team.length === 0 && device === undefined))
            IDENTITIES.push({ user, ...(email ? { email } : {}), groups, claims: { team }, ...(device ? { device } : {}) });

interface Req {
  readonly method: string;
  readonly cors: boolean;
  readonly path: string;
  readonly address: string;
  readonly nowMs: number;
  readonly cert: { fingerprint: string; valid: boolean } | undefined;
}
const REQUESTS: Req[] = [];
for (const [method, cors] of [['GET', false], ['DELETE', false], ['OPTIONS', true]] as const)
  for (const path of ['/', '/api', '/api/x', '/b', '/c'])
    for (const address of ['10.1.2.3', '192.0.2.1'])
      for (const nowMs of [Date.parse('2025-06-02T12:00:00Z'), Date.parse('2025-06-01T08:00:00Z')])
        for (const cert of [undefined, { fingerprint: FP, valid: true }]) REQUESTS.push({ method, cors, path, address, nowMs, cert });

const CORS = { origin: ['https://o.example'], 'access-control-request-method': ['GET'] };

/** The reference's decision: the route §3 picks, then its policy (public: allow). */
const routed = new WeakMap<PlanBody, Map<string, Route | undefined>>();

/** The route the reference picks for a path (requests differ only in their path for routing here). */
function routeOf(body: PlanBody, path: string): Route | undefined {
  let paths = routed.get(body);
  if (!paths) routed.set(body, (paths = new Map()));
  if (!paths.has(path)) {
    const ref = firstMatchingRoute(body, makeRequest({ host: HOST, target: path }));
    paths.set(path, ref && body.routes[ref.index]);
  }
  return paths.get(path);
}

function reference(body: PlanBody, r: Req, identity: Identity | null): { route: Route | undefined; allowed: boolean } {
  const route = routeOf(body, r.path);
  if (!route) return { route: undefined, allowed: false };
  if (route.public) return { route, allowed: true };
  const result = evaluatePolicy(route.policy, { method: r.method, path: r.path, headers: r.cors ? CORS : {}, clientIp: parseIp(r.address)!, nowMs: r.nowMs, ...(r.cert ? { clientCertificate: r.cert } : {}) }, identity);
  return { route, allowed: result.verdict === 'allow' };
}

/** Both real programs and the reference agree with a witness's decisions. */
function confirm(w: ExactWitness, oldRoute: Route | undefined, newRoute: Route | undefined): void {
  const identity = w.identity as Identity | null;
  const path = new URL(w.request.url).pathname;
  const input = { method: w.request.method, path, headers: w.request.corsPreflightHeaders ? CORS : {}, clientAddress: w.request.clientAddress, clientCertificate: w.request.clientCertificate, nowMs: Date.parse(w.request.time), identity };
  const real = (r: Route | undefined) => (r === undefined ? 'absent' : r.public ? 'allow' : compilePolicy(r.policy).verdict(input));
  const ref = (r: Route | undefined) =>
    r === undefined ? 'absent' : r.public ? 'allow' : evaluatePolicy(r.policy, { method: input.method, path, headers: input.headers, nowMs: input.nowMs, clientIp: parseIp(input.clientAddress)!, ...(input.clientCertificate ? { clientCertificate: input.clientCertificate } : {}) }, identity).verdict;
  expect(real(oldRoute)).toBe(w.old);
  expect(real(newRoute)).toBe(w.new);
  expect(ref(oldRoute)).toBe(w.old);
  expect(ref(newRoute)).toBe(w.new);
  expect(w.old === 'allow').not.toBe(w.new === 'allow');
}

let z: Z3;
beforeAll(async () => {
  z = await z3();
}, 30_000);
afterAll(async () => {
  await stopZ3();
});

describe('svc diff exact check ≡ brute force over a small universe', () => {
  it('reports every change brute force finds, and every witness is confirmed', async () => {
    const seed = process.env['FC_SEED'] === undefined ? undefined : Number(process.env['FC_SEED']);
    let changes = 0;
    let proofs = 0;
    await fc.assert(
      fc.asyncProperty(pairArb, async ({ old, next }) => {
        const a = plan(old);
        const b = plan(next);
        const report: ExactReport = await exactCheck(z, a, b, { budgetMs: 5_000 });
        // Nothing here is beyond the encoding: every question is decided, unless the time budget ran
        // out on a loaded machine ("not proved" for that reason only, never a refuted witness or a
        // gap in the encoding). A "not proved" answer is never "none": brute force below still holds.
        const undecided = [...report.access.flatMap((x) => [x.gains, x.loses]), ...report.routing.map((r) => r.answer)].filter((x) => x.result === 'not-proved');
        for (const x of undecided) expect(x.reason, JSON.stringify(report, null, 1)).toBe('the time budget ran out');
        for (const acc of report.access) {
          const newRoute = acc.status === 'removed' ? undefined : b.body.routes[acc.route.index];
          const oldRoute = acc.status === 'added' ? undefined : acc.status === 'removed' ? a.body.routes[acc.route.index] : a.body.routes.find((r) => r.name === acc.route.name);
          for (const ans of [acc.gains, acc.loses]) {
            if (ans.result === 'change') confirm(ans.witness!, oldRoute, newRoute);
            else if (ans.result === 'none') proofs++;
          }
        }
        for (const r of report.routing) {
          for (const c of r.changes) {
            const path = new URL(c.url).pathname;
            const o = firstMatchingRoute(a.body, makeRequest({ host: HOST, target: path }));
            const n = firstMatchingRoute(b.body, makeRequest({ host: HOST, target: path }));
            expect(o?.name ?? null).toBe(c.old?.name ?? null);
            expect(n?.name ?? null).toBe(c.new?.name ?? null);
            expect(o?.name ?? null).not.toBe(n?.name ?? null);
          }
        }
        // Brute force: each request one plan allows and the other does not must be reported.
        const same = (r: Req) => {
          const x = routeOf(a.body, r.path);
          const y = routeOf(b.body, r.path);
          return x !== undefined && y !== undefined && x.name === y.name && x.public === y.public && JSON.stringify(x.policy) === JSON.stringify(y.policy);
        };
        const requests = REQUESTS.filter((r) => !same(r));
        for (const identity of IDENTITIES) {
          for (const req of requests) {
            const x = reference(a.body, req, identity);
            const y = reference(b.body, req, identity);
            if (x.allowed === y.allowed) continue;
            changes++;
            const what = `${JSON.stringify(identity)} ${JSON.stringify(req)}: old ${x.route?.name} ${x.allowed}, new ${y.route?.name} ${y.allowed}`;
            if (x.route && y.route && x.route.name === y.route.name) {
              const acc = report.access.find((e) => e.status === 'changed' && e.route.name === y.route!.name);
              expect(acc, what).toBeDefined();
              expect((y.allowed ? acc!.gains : acc!.loses).result, what).not.toBe('none');
            } else {
              const moved = report.routing.find((e) => e.host === HOST);
              // A move is listed, unless the budget ran out before the host was decided.
              if (moved?.answer.result !== 'not-proved') expect(moved?.changes.length ?? 0, what).toBeGreaterThan(0);
            }
          }
        }
      }),
      { numRuns: 20, ...(seed === undefined ? {} : { seed }) },
    );
    // The property can fail: the runs met real changes and real proofs.
    expect(changes).toBeGreaterThan(0);
    expect(proofs).toBeGreaterThan(0);
  }, 180_000);
});
