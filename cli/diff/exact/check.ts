/**
 * The exact check of `svc diff` (docs/diff.md "Exact check"): instead of sampling, ask Z3 for an
 * identity and request that one plan allows and the other does not (per changed, added or removed
 * route), and for a request that the two plans send to routes that are not the same route (per
 * host). Every answer is one of:
 *
 * - `none`: the solver proved that no identity and request separates the two sides;
 * - `change`: a witness, which svc's real policy programs (runtime/policy/program.ts) and route
 *   matcher (runtime/request/route.ts) confirmed under both plans;
 * - `not-proved`: the budget ran out, the solver gave up, or the query needs something the encoding
 *   does not express exactly (a regex it could not pin down, a character Z3 does not hold).
 *
 * A model the real programs refute is never reported: what it got wrong (a regex's answer on its
 * path, a time zone's offset at its instant) is added as a fact, and the solver asked again.
 */
import type { Bool, Model, Seq } from 'z3-solver';
import type { PlanEnvelope, Route } from '../../../compiler/plan/types.ts';
import type { Verdict } from '../../../runtime/core/types.ts';
import { buildIndex, type CompiledRoute, type PlanIndex } from '../../../runtime/plan/index.ts';
import { parseEmail } from '../../../runtime/policy/email.ts';
import { compilePolicy } from '../../../runtime/policy/program.ts';
import type { CanonicalRequest } from '../../../runtime/request/canonical-request.ts';
import { matchRoute, pathMatches } from '../../../runtime/request/route.ts';
import { pairRoutes, policyChange, routeRef, type RoutePairing } from '../routes.ts';
import type { ExactAccess, ExactAnswer, ExactReport, ExactRouting, ExactWitness, RouteRef, RoutingChange } from '../types.ts';
import { Encoder, NotEncoded, intOf, isOwnPath, lit, makeInput, matcherKey, witnessOf, type Input, type Witness, type Z3 } from './encode.ts';
import { Unsupported, regexToZ3 } from './regex.ts';
import { offsetInterval } from './zones.ts';

type B = Bool<'main'>;
type S = Seq<'main'>;

/** How many times one query is asked again after the real programs refuted its model. */
const MAX_REFINEMENTS = 40;
/** At most this many route transitions are listed per host. */
const MAX_ROUTING_CHANGES = 8;

export interface ExactOptions {
  /** The time the whole check may take (ms); queries left when it is spent are "not proved". */
  readonly budgetMs: number;
  /** The clock (ms); injectable for tests. */
  readonly now?: () => number;
}

export type Access = 'allow' | 'deny' | 'unauthenticated' | 'absent';

/** One side of a route: its compiled route in its plan's index, or absent. */
export interface Side {
  readonly route: Route;
  readonly compiled: CompiledRoute;
}

export function realAccess(side: Side | null, w: Witness): Access {
  if (side === null) return 'absent';
  if (side.route.public) return 'allow';
  return compilePolicy(side.route.policy).verdict({ ...w.request, identity: w.identity }) as Verdict;
}

export function realPathMatches(r: CompiledRoute, path: string): boolean {
  return pathMatches(r, r.foldCase && r.matchKind !== 'regex' ? path.toLowerCase() : path);
}

/** The solver state of one query: uninterpreted matchers and the facts learnt about them. */
export class Query {
  readonly input: Input;
  readonly encoder: Encoder;
  private readonly functions = new Map<string, { f: ReturnType<Z3['Function']['declare']>; match: Route['match']; foldCase: boolean }>();
  readonly facts: B[] = [];

  constructor(
    readonly z: Z3,
    policies: readonly Route['policy'][],
  ) {
    this.input = makeInput(z, policies);
    this.encoder = new Encoder(z, this.input, (key, arg) => this.uf(key, arg));
  }

  private uf(key: string, arg: S): B {
    const entry = this.functions.get(key);
    if (!entry) throw new Error(`bug: matcher ${key} used before it was declared`);
    return entry.f.call(arg) as B;
  }

  /** The matcher of a route as a formula over the path. */
  matches(r: CompiledRoute): B {
    const m = r.route.match;
    if (m.kind === 'regex' && !r.foldCase) {
      try {
        return this.z.InRe(this.input.path, regexToZ3(this.z, m.regex));
      } catch (e) {
        if (!(e instanceof Unsupported)) throw e;
      }
    }
    if (m.kind === 'regex' || (r.foldCase && m.kind !== 'any')) {
      const key = matcherKey(m, r.foldCase);
      if (!this.functions.has(key)) this.functions.set(key, { f: this.z.Function.declare(`match${this.functions.size}`, this.z.String.sort(), this.z.Bool.sort()), match: m, foldCase: r.foldCase });
    }
    return this.encoder.pathMatches(m, r.foldCase);
  }

  /**
   * The facts a refuted model got wrong: each uninterpreted matcher's real answer on the model's
   * path, each time zone's real offset around the model's instant, the email's shape and svc's own
   * paths when the witness breaks them. False when the model had them all right (then the
   * refutation is not the encoding's freedom but a bug).
   */
  learn(m: Model<'main'>, w: Witness, compiledOf: (key: string) => CompiledRoute): boolean {
    const z = this.z;
    let learnt = false;
    for (const [key, entry] of this.functions) {
      const real = realPathMatches(compiledOf(key), w.request.path);
      const said = m.eval(entry.f.call(this.input.path), true).toString() === 'true';
      if (said !== real) learnt = true;
      this.facts.push(z.Implies(this.input.path.eq(lit(z, w.request.path)), real ? entry.f.call(this.input.path) as B : z.Not(entry.f.call(this.input.path) as B)));
    }
    // The facts left out at first (encode.ts), when this witness breaks them.
    const lazy = this.input.lazyFacts;
    if (isOwnPath(w.request.path) && lazy.ownPath.length) learnt = true;
    if (isOwnPath(w.request.path)) this.facts.push(...lazy.ownPath.splice(0));
    const email = w.identity?.email;
    if (email !== undefined && parseEmail(email)?.address !== email && lazy.email.length) learnt = true;
    if (email !== undefined && parseEmail(email)?.address !== email) this.facts.push(...lazy.email.splice(0));
    for (const [tz, off] of this.input.offsets) {
      const said = intOf(m, off);
      const real = offsetInterval(w.request.nowMs, tz);
      if (said !== real.offset) learnt = true;
      this.facts.push(z.Implies(z.And(this.input.now.ge(real.from), this.input.now.lt(real.to)), off.eq(real.offset)));
    }
    return learnt;
  }
}

export type Solve = { kind: 'sat'; model: Model<'main'>; witness: Witness } | { kind: 'unsat' } | { kind: 'unknown'; reason: string };

/**
 * Asks for a model of `goal` until one the real programs confirm (`confirm`), refining on each
 * refuted model (Query.learn), within the deadline.
 */
export async function solve(q: Query, goal: B, confirm: (w: Witness) => boolean, deadline: number, clock: () => number, compiledOf: (key: string) => CompiledRoute, polish = true): Promise<Solve> {
  for (let round = 0; round <= MAX_REFINEMENTS; round++) {
    const left = deadline - clock();
    if (left <= 0) return { kind: 'unknown', reason: 'the time budget ran out' };
    const solver = new q.z.Solver();
    solver.set('timeout', Math.max(1, Math.floor(left)));
    solver.add(...q.input.facts, ...q.facts, goal);
    const r = await solver.check();
    if (r === 'unsat') return { kind: 'unsat' };
    if (r === 'unknown') return { kind: 'unknown', reason: clock() >= deadline ? 'the time budget ran out' : `the solver gave up (${solver.reasonUnknown()})` };
    const model = solver.model();
    const witness = witnessOf(q.z, model, q.input);
    if (confirm(witness)) return { kind: 'sat', model, witness: polish ? await nicer(q, goal, witness, confirm, deadline, clock, compiledOf) : witness };
    if (!q.learn(model, witness, compiledOf)) {
      return { kind: 'unknown', reason: 'bug: the real policy program refuted a witness of the encoding' };
    }
  }
  return { kind: 'unknown', reason: `no witness confirmed after ${MAX_REFINEMENTS} refinements (regex matchers or time zones)` };
}

/** Within a week of this instant (the sampling's reference, Monday 2025-01-06 12:00 UTC) when it can be. */
const NEAR_MS = Date.UTC(2025, 0, 6, 12, 0);
const WEEK_MS = 7 * 86_400_000;

/**
 * A witness easier to read, when one exists: the request time within a week of 2025-01-06, then a
 * `GET`, then an IPv4 client, then `user@…`, each kept only when the solver still finds a confirmed
 * witness with it (at most 2 s each; the first witness stands otherwise).
 */
async function nicer(q: Query, goal: B, first: Witness, confirm: (w: Witness) => boolean, deadline: number, clock: () => number, compiledOf: (key: string) => CompiledRoute): Promise<Witness> {
  const z = q.z;
  const i = q.input;
  const wishes: B[] = [];
  if (i.used.has('date') || i.used.has('time_of_day') || i.used.has('day_of_week')) wishes.push(z.And(i.now.ge(NEAR_MS - WEEK_MS), i.now.le(NEAR_MS + WEEK_MS)));
  if (i.used.has('http_method')) wishes.push(i.method.eq(lit(z, 'GET')));
  if (i.used.has('source_ip')) wishes.push(z.Not(i.v6));
  if (i.used.has('email') || i.used.has('domain')) wishes.push(i.local.eq(lit(z, 'user')));
  let best = first;
  const kept: B[] = [];
  for (const wish of wishes) {
    const until = Math.min(deadline, clock() + 2_000);
    const r = await solve(q, z.And(goal, ...kept, wish), confirm, until, clock, compiledOf, false);
    if (r.kind !== 'sat') continue;
    best = r.witness;
    kept.push(wish);
  }
  return best;
}

/** A witness as reported: plain JSON identity and the request as a URL on `host`. */
export function witnessJson(w: Witness, host: string): Pick<ExactWitness, 'identity' | 'request'> {
  const c = w.request.clientCertificate;
  return {
    identity: w.identity === null ? null : JSON.parse(JSON.stringify(w.identity)),
    request: {
      method: w.request.method,
      url: `https://${host}${w.request.path}`,
      corsPreflightHeaders: w.request.headers['origin'] !== undefined,
      clientAddress: w.request.clientAddress,
      clientCertificate: c === null ? null : { fingerprint: c.fingerprint, valid: c.valid },
      time: new Date(w.request.nowMs).toISOString(),
    },
  };
}

function exactWitness(w: Witness, host: string, oldAccess: Access, newAccess: Access): ExactWitness {
  return { ...witnessJson(w, host), old: oldAccess, new: newAccess };
}

function hostOf(r: Route): string {
  return r.from.port === null || r.from.port === 443 ? r.from.host : `${r.from.host}:${r.from.port}`;
}

/** Runs the exact check over two plans (module comment). */
export async function exactCheck(z: Z3, oldPlan: PlanEnvelope, newPlan: PlanEnvelope, options: ExactOptions): Promise<ExactReport> {
  const clock = options.now ?? (() => performance.now());
  const deadline = clock() + options.budgetMs;
  const oldIndex = buildIndex(oldPlan.body);
  const newIndex = buildIndex(newPlan.body);
  const pairing = pairRoutes(oldPlan.body.routes, newPlan.body.routes);
  const access: ExactAccess[] = [];
  const sideOf = (index: PlanIndex, r: Route | null): Side | null => (r === null ? null : { route: r, compiled: index.routes[r.index]! });
  const jobs: { ref: RouteRef; status: ExactAccess['status']; old: Side | null; new: Side | null }[] = [];
  for (const p of pairing.pairs) {
    if (p.old.public === p.new.public && !policyChange(p.old, p.new)) continue;
    jobs.push({ ref: routeRef(p.new), status: 'changed', old: sideOf(oldIndex, p.old), new: sideOf(newIndex, p.new) });
  }
  for (const r of pairing.added) jobs.push({ ref: routeRef(r), status: 'added', old: null, new: sideOf(newIndex, r) });
  for (const r of pairing.removed) jobs.push({ ref: routeRef(r), status: 'removed', old: sideOf(oldIndex, r), new: null });
  for (const job of jobs) {
    const host = hostOf((job.new ?? job.old)!.route);
    const gains = await accessQuery(z, job.old, job.new, host, deadline, clock);
    const loses = await accessQuery(z, job.new, job.old, host, deadline, clock, true);
    access.push({ route: job.ref, status: job.status, gains, loses });
  }
  const routing = await routingCheck(z, oldIndex, newIndex, pairing, deadline, clock);
  const all = [...access.flatMap((a) => [a.gains, a.loses]), ...routing.map((r) => r.answer)];
  return {
    complete: all.every((a) => a.result !== 'not-proved'),
    budgetMs: options.budgetMs,
    access,
    routing,
  };
}

/**
 * Is there an identity and request that `to` allows and `from` does not (on a path both sides'
 * matchers take)? With `swap`, the witness is reported as old = `to`, new = `from` (a loss).
 */
async function accessQuery(z: Z3, from: Side | null, to: Side | null, host: string, deadline: number, clock: () => number, swap = false): Promise<ExactAnswer> {
  if (to === null) return { result: 'none', witness: null, reason: null };
  const sides = [from, to].filter((s): s is Side => s !== null);
  try {
    const q = new Query(z, sides.filter((s) => !s.route.public).map((s) => s.route.policy));
    const allows = (s: Side | null): B => (s === null ? z.Bool.val(false) : s.route.public ? z.Bool.val(true) : q.encoder.allows(s.route.policy));
    const goal = z.And(allows(to), z.Not(allows(from)), ...sides.map((s) => q.matches(s.compiled)));
    const compiledOf = (key: string) => sides.find((s) => matcherKey(s.route.match, s.compiled.foldCase) === key)!.compiled;
    const confirm = (w: Witness) => !isOwnPath(w.request.path) && realAccess(to, w) === 'allow' && realAccess(from, w) !== 'allow' && sides.every((s) => realPathMatches(s.compiled, w.request.path));
    const r = await solve(q, goal, confirm, deadline, clock, compiledOf);
    if (r.kind === 'unsat') return { result: 'none', witness: null, reason: null };
    if (r.kind === 'unknown') return { result: 'not-proved', witness: null, reason: r.reason };
    const a = realAccess(from, r.witness);
    const b = realAccess(to, r.witness);
    return { result: 'change', witness: swap ? exactWitness(r.witness, host, b, a) : exactWitness(r.witness, host, a, b), reason: null };
  } catch (e) {
    if (e instanceof NotEncoded) return { result: 'not-proved', witness: null, reason: `not encoded: ${e.message}` };
    throw e;
  }
}

/** Per host of either plan: requests the plans send to routes that are not the same (paired) route. */
async function routingCheck(z: Z3, oldIndex: PlanIndex, newIndex: PlanIndex, pairing: RoutingPairingLike, deadline: number, clock: () => number): Promise<ExactRouting[]> {
  const partner = new Map<Route, Route>();
  for (const p of pairing.pairs) partner.set(p.old, p.new);
  const hosts = [...new Set([...oldIndex.hosts.keys(), ...newIndex.hosts.keys()])].sort();
  const out: ExactRouting[] = [];
  // `a.example.com` and `a.example.com:443` answer alike: check one of them.
  const seen = new Set<string>();
  for (const host of hosts) {
    const olds = oldIndex.hosts.get(host) ?? [];
    const news = newIndex.hosts.get(host) ?? [];
    const signature = JSON.stringify([olds.map((r) => r.route.index), news.map((r) => r.route.index)]);
    const key = `${host.replace(/:443$/, '')} ${signature}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const same = olds.length === news.length && olds.every((r, k) => partner.get(r.route) === news[k]!.route && JSON.stringify(r.route.match) === JSON.stringify(news[k]!.route.match) && r.foldCase === news[k]!.foldCase);
    if (same) continue;
    out.push(await hostRouting(z, host, olds, news, partner, oldIndex, newIndex, deadline, clock));
  }
  return out;
}

type RoutingPairingLike = Pick<RoutePairing, 'pairs'>;

async function hostRouting(
  z: Z3,
  host: string,
  olds: readonly CompiledRoute[],
  news: readonly CompiledRoute[],
  partner: ReadonlyMap<Route, Route>,
  oldIndex: PlanIndex,
  newIndex: PlanIndex,
  deadline: number,
  clock: () => number,
): Promise<ExactRouting> {
  const q = new Query(z, []);
  const firsts = (list: readonly CompiledRoute[]) => {
    const ms = list.map((r) => q.matches(r));
    return { each: ms.map((m, i) => z.And(m, ...ms.slice(0, i).map((x) => z.Not(x)))), none: z.And(...ms.map((x) => z.Not(x))) };
  };
  const o = firsts(olds);
  const n = firsts(news);
  const sameParts: B[] = [z.And(o.none, n.none)];
  olds.forEach((r, i) => news.forEach((s, j) => {
    if (partner.get(r.route) === s.route) sameParts.push(z.And(o.each[i]!, n.each[j]!));
  }));
  const blocked: B[] = [];
  const changes: RoutingChange[] = [];
  const all = [...olds, ...news];
  const compiledOf = (key: string) => all.find((r) => matcherKey(r.route.match, r.foldCase) === key)!;
  const route = (index: PlanIndex, path: string) => matchRoute(index, { host, path } as CanonicalRequest);
  const differs = (w: Witness) => {
    if (isOwnPath(w.request.path)) return false;
    const a = route(oldIndex, w.request.path);
    const b = route(newIndex, w.request.path);
    return (a === undefined) !== (b === undefined) || (a !== undefined && b !== undefined && partner.get(a.route) !== b.route);
  };
  for (;;) {
    const goal = z.And(z.Not(z.Or(...sameParts)), ...blocked);
    const r = await solve(q, goal, differs, deadline, clock, compiledOf);
    if (r.kind === 'unknown') return { host, answer: { result: 'not-proved', witness: null, reason: r.reason }, changes };
    if (r.kind === 'unsat') break;
    const a = route(oldIndex, r.witness.request.path);
    const b = route(newIndex, r.witness.request.path);
    changes.push({ url: `https://${host}${r.witness.request.path}`, old: a ? routeRef(a.route) : null, new: b ? routeRef(b.route) : null });
    const i = a ? olds.indexOf(a) : -1;
    const j = b ? news.indexOf(b) : -1;
    blocked.push(z.Not(z.And(i < 0 ? o.none : o.each[i]!, j < 0 ? n.none : n.each[j]!)));
    if (changes.length >= MAX_ROUTING_CHANGES) break;
  }
  return { host, answer: { result: changes.length ? 'change' : 'none', witness: null, reason: null }, changes };
}
