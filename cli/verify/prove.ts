/**
 * Proving the properties of `svc verify` (docs/verify.md "How a property is proved") with the exact
 * check's encoding (cli/diff/exact/): per host of the plan in a property's scope, Z3 is asked for an
 * identity and request in the scope that breaks the property, given how svc routes (the first route
 * of the host whose matcher holds) and decides (the route's policy program, or public). Every answer
 * is one of:
 *
 * - `holds`: the solver proved, for every host in scope, that no identity and request breaks it;
 * - `violated`: a counterexample that svc's real route matcher (runtime/request/route.ts) and real
 *   policy programs (runtime/policy/program.ts) confirmed;
 * - `not-proved`: the budget ran out, the solver gave up, or the question holds something the
 *   encoding does not express. Never reported as `holds`.
 *
 * A model the real programs refute is never reported: the exact check's refinement (check.ts
 * `solve`) learns what it got wrong and asks again.
 */
import type { Bool } from 'z3-solver';
import { hostName, hostPatternMatches, policyRuleLocations, printRule, type Property, type Scope } from '../../compiler/index.ts';
import type { Expr, PlanEnvelope, PolicyIR } from '../../compiler/plan/types.ts';
import { F, T, U, compilePolicy, type PolicyInput } from '../../runtime/policy/program.ts';
import type { CompiledRoute, PlanIndex } from '../../runtime/plan/index.ts';
import type { CanonicalRequest } from '../../runtime/request/canonical-request.ts';
import { matchRoute } from '../../runtime/request/route.ts';
import { Query, realAccess, realPathMatches, solve, witnessJson, type Access } from '../diff/exact/check.ts';
import { NotEncoded, isMethodToken, isOwnPath, lit, matcherKey, type Witness, type Z3 } from '../diff/exact/encode.ts';
import type { ExactWitness } from '../diff/types.ts';
import { routeLocation } from '../explain-render.ts';

type B = Bool<'main'>;

export type VerifyResult = 'holds' | 'violated' | 'not-proved';

/** A route as the report names it, with where it is written. */
export interface RouteAt {
  readonly index: number;
  readonly id: string;
  readonly name: string | null;
  readonly at: string;
}

/** A request and identity that break a property, as svc's real programs decide them. */
export interface Counterexample extends Pick<ExactWitness, 'identity' | 'request'> {
  /** The route svc picks for the request, or null: no route (404). */
  readonly route: RouteAt | null;
  /** svc's decision: `allow`, `deny`, `unauthenticated`, or `absent` (no route). */
  readonly decision: Access;
  /** Why svc allows it: the public route, or the first allow rule that holds (1-based). Null unless allowed. */
  readonly allowedBy: { readonly public: true; readonly at: string } | ({ readonly public: false } & RuleAt) | null;
  /**
   * Why svc does not allow it, when it does not and a route took it: the first deny rule that holds
   * or is unknown (1-based), or null when no allow rule holds.
   */
  readonly deniedBy: RuleAt | null;
  /** The property's condition on this identity and request: `true`, `false` or `unknown` (no one signed in). */
  readonly condition: 'true' | 'false' | 'unknown';
}

/** A rule of a route's policy: its number (1-based), its text, and where it is written. */
export interface RuleAt {
  readonly rule: number;
  readonly text: string;
  /** The rule's own `file:line:col` when it can be found in the config file, else the route's `policy` field's. */
  readonly at: string;
  /** True when `at` is the rule's own position; false when it is the `policy` field's. */
  readonly exact: boolean;
}

export interface PropertyReport {
  readonly name: string;
  readonly at: string;
  readonly form: Property['form'];
  readonly condition: string;
  readonly result: VerifyResult;
  /** Why it is not proved; null otherwise. */
  readonly reason: string | null;
  /** Hosts of the plan in the property's scope, each proved or searched. */
  readonly hosts: readonly string[];
  readonly counterexample: Counterexample | null;
}

export interface ProveOptions {
  /** The time each property may take (ms); hosts left when it is spent make it "not proved". */
  readonly budgetMs: number;
  /** The clock (ms); injectable for tests. */
  readonly now?: () => number;
  /**
   * Look for an easier counterexample (a `GET`, a time near 2025-01-06, `user@…`: check.ts `nicer`)
   * once one is found. Default true; every counterexample is confirmed either way.
   */
  readonly polish?: boolean;
  /** Reads a config file to locate single rules (docs/verify.md "Output"); undefined when unreadable. Default: none. */
  readonly readSource?: (file: string) => string | undefined;
}

/**
 * The hosts a scope takes (docs/verify.md "The properties file"): the route hosts of the plan its
 * patterns match (every route host when it has none), and the host of each exact pattern even when
 * no route answers it (there every request is 404: not allowed). One key per set of routes
 * (`a.example.com` and `a.example.com:443` are one); svc's own hosts are left out (their requests
 * never reach a route).
 */
export function hostsInScope(index: PlanIndex, scope: Scope): string[] {
  const out = new Set<string>();
  const same = (a: readonly CompiledRoute[] | undefined, b: readonly CompiledRoute[]) => a !== undefined && a.length === b.length && a.every((r, i) => r === b[i]);
  for (const [key, routes] of index.hosts) {
    if (index.internalHosts.has(key)) continue;
    if (key.endsWith(':443') && same(index.hosts.get(key.slice(0, -4)), routes)) continue;
    if (scope.hosts !== null && !scope.hosts.some((h) => hostPatternMatches(h.pattern, hostName(key)))) continue;
    if (scope.routes !== null && !routes.some((r) => scope.routes!.some((x) => x.name === r.route.name))) continue;
    out.add(key);
  }
  for (const h of scope.hosts ?? []) {
    if (h.pattern.startsWith('*.') || scope.routes !== null || index.internalHosts.has(h.pattern)) continue;
    if (![...out].some((key) => hostName(key) === h.pattern)) out.add(h.pattern);
  }
  return [...out].sort();
}

/** The policy a condition is read with: `allow if <condition>` (verdict allow ⇔ the condition is true). */
function conditionPolicy(e: Expr): PolicyIR {
  return { rules: [{ action: 'allow', when: e }] };
}

/** A condition's value for an input, by svc's real policy program (unknown when it cannot be evaluated). */
function truthOf(e: Expr, input: PolicyInput): number {
  return compilePolicy(conditionPolicy(e)).explain(input).rules[0]?.value ?? U;
}

/** Proves one property against a plan (module comment). */
export async function proveProperty(z: Z3, plan: PlanEnvelope, index: PlanIndex, p: Property, options: ProveOptions): Promise<PropertyReport> {
  const clock = options.now ?? (() => performance.now());
  const deadline = clock() + options.budgetMs;
  const hosts = hostsInScope(index, p.scope);
  const base = { name: p.name, at: p.at, form: p.form, condition: p.conditionText, hosts };
  const reasons: string[] = [];
  for (const host of hosts) {
    const r = await proveOnHost(z, plan, index, p, host, deadline, clock, options.polish ?? true);
    if (r.kind === 'violated') return { ...base, result: 'violated', reason: null, counterexample: counterexample(plan, index, host, r.witness, p, options.readSource) };
    if (r.kind === 'unknown') reasons.push(`${host}: ${r.reason}`);
  }
  if (reasons.length) return { ...base, result: 'not-proved', reason: reasons.join('; '), counterexample: null };
  return { ...base, result: 'holds', reason: null, counterexample: null };
}

type HostAnswer = { kind: 'holds' } | { kind: 'violated'; witness: Witness } | { kind: 'unknown'; reason: string };

async function proveOnHost(z: Z3, plan: PlanEnvelope, index: PlanIndex, p: Property, host: string, deadline: number, clock: () => number, polish: boolean): Promise<HostAnswer> {
  const routes = index.hosts.get(host) ?? [];
  const cond = compilePolicy(conditionPolicy(p.condition));
  try {
    const q = new Query(z, [...routes.filter((r) => !r.route.public).map((r) => r.route.policy), conditionPolicy(p.condition)]);
    const scopes = [p.scope, ...p.except];
    if (scopes.some((s) => s.methods !== null)) useMethod(z, q);
    const ms = routes.map((r) => q.matches(r));
    const chosen = ms.map((m, i) => z.And(m, ...ms.slice(0, i).map((x) => z.Not(x))));
    const allowed = routes.length === 0 ? z.Bool.val(false) : z.Or(...routes.map((r, i) => z.And(chosen[i]!, r.route.public ? z.Bool.val(true) : q.encoder.allows(r.route.policy))));
    const inScope = (s: Scope): B => {
      const parts: B[] = [];
      if (s.hosts !== null && !s.hosts.some((h) => hostPatternMatches(h.pattern, hostName(host)))) return z.Bool.val(false);
      if (s.paths !== null) parts.push(z.Or(...s.paths.map((x) => lit(z, x).prefixOf(q.input.path))));
      if (s.methods !== null) parts.push(z.Or(...s.methods.map((x) => q.input.method.eq(lit(z, x)))));
      if (s.routes !== null) {
        const names = new Set(s.routes.map((x) => x.name));
        parts.push(z.Or(...routes.flatMap((r, i) => (r.route.name !== null && names.has(r.route.name) ? [chosen[i]!] : []))));
      }
      return z.And(...parts);
    };
    const c = q.encoder.expr(p.condition);
    const breaks = p.form === 'only' ? z.And(allowed, z.Not(c.t)) : p.form === 'never' ? z.And(allowed, z.Not(c.f)) : z.And(c.t, z.Not(allowed));
    const goal = z.And(inScope(p.scope), ...p.except.map((s) => z.Not(inScope(s))), breaks);
    const compiledOf = (key: string) => routes.find((r) => matcherKey(r.route.match, r.foldCase) === key)!;
    const confirm = (w: Witness) => {
      if (isOwnPath(w.request.path)) return false;
      const real = realDecision(index, host, w);
      if (!realInScope(p.scope, host, w, real.route) || p.except.some((s) => realInScope(s, host, w, real.route))) return false;
      const value = cond.explain({ ...w.request, identity: w.identity }).rules[0]?.value ?? U;
      const allows = real.decision === 'allow';
      return p.form === 'only' ? allows && value !== T : p.form === 'never' ? allows && value !== F : value === T && !allows;
    };
    const r = await solve(q, goal, confirm, deadline, clock, compiledOf, polish);
    if (r.kind === 'unsat') return { kind: 'holds' };
    if (r.kind === 'unknown') return { kind: 'unknown', reason: r.reason };
    return { kind: 'violated', witness: r.witness };
  } catch (e) {
    if (e instanceof NotEncoded) return { kind: 'unknown', reason: `not encoded: ${e.message}` };
    throw e;
  }
}

/** The method is read by a scope: make it a variable of the witness, an HTTP token as in encode.ts. */
function useMethod(z: Z3, q: Query): void {
  const i = q.input;
  if (!i.used.has('http_method') && !i.used.has('cors_preflight')) i.facts.push(isMethodToken(z, i.method));
  i.used = new Set([...i.used, 'http_method']);
}

/** svc's real route and decision for a witness on `host`. */
function realDecision(index: PlanIndex, host: string, w: Witness): { route: CompiledRoute | undefined; decision: Access } {
  const route = matchRoute(index, { host, path: w.request.path } as CanonicalRequest);
  return { route, decision: realAccess(route ? { route: route.route, compiled: route } : null, w) };
}

function realInScope(s: Scope, host: string, w: Witness, route: CompiledRoute | undefined): boolean {
  if (s.hosts !== null && !s.hosts.some((h) => hostPatternMatches(h.pattern, hostName(host)))) return false;
  if (s.paths !== null && !s.paths.some((x) => w.request.path.startsWith(x))) return false;
  if (s.methods !== null && !s.methods.includes(w.request.method)) return false;
  if (s.routes !== null && !(route?.route.name != null && s.routes.some((x) => x.name === route.route.name))) return false;
  return true;
}

const TRI_WORD: Record<number, Counterexample['condition']> = { [F]: 'false', [T]: 'true', [U]: 'unknown' };

/** Where a route's policy is written: its `policy` (or legacy `allowed_*`) field, else the route. */
function policyLocation(plan: PlanEnvelope, route: CompiledRoute['route']): string {
  const pos = plan.body.routes.findIndex((r) => r.index === route.index && r.id === route.id);
  const fields = plan.sourceMap.routes[pos]?.fields ?? {};
  if (route.public) return fields['allow_public_unauthenticated_access'] ?? routeLocation(plan, route);
  const key = ['policy', 'allowed_users', 'allowed_domains', 'allowed_groups', 'allowed_idp_claims', 'allow_any_authenticated_user'].find((k) => fields[k] !== undefined);
  return key === undefined ? routeLocation(plan, route) : fields[key]!;
}

/** Rule `k` (0-based) of a route's policy, located in its config file when it can be (compiler/verify/rule-locations.ts). */
function ruleAt(plan: PlanEnvelope, route: CompiledRoute['route'], k: number, readSource: ((file: string) => string | undefined) | undefined): RuleAt {
  const field = policyLocation(plan, route);
  const base = { rule: k + 1, text: printRule(route.policy.rules[k]!) };
  const m = /^(.*):(\d+):(\d+)$/.exec(field);
  const text = m && readSource?.(m[1]!);
  const all = m && text !== undefined && text !== null ? policyRuleLocations(m[1]!, text, Number(m[2]), Number(m[3]), route.policy) : undefined;
  return all?.[k] !== undefined ? { ...base, at: all[k]!, exact: true } : { ...base, at: field, exact: false };
}

/** The report of a confirmed witness: route, decision, the rule that allows it, the condition's value. */
function counterexample(plan: PlanEnvelope, index: PlanIndex, host: string, w: Witness, p: Property, readSource: ((file: string) => string | undefined) | undefined): Counterexample {
  const real = realDecision(index, host, w);
  const input = { ...w.request, identity: w.identity };
  const r = real.route?.route;
  let allowedBy: Counterexample['allowedBy'] = null;
  if (r && real.decision === 'allow') {
    if (r.public) allowedBy = { public: true, at: policyLocation(plan, r) };
    else {
      const k = r.policy.rules.findIndex((rule) => rule.action === 'allow' && compilePolicy({ rules: [rule] }).verdict(input) === 'allow');
      allowedBy = { public: false, ...ruleAt(plan, r, k, readSource) };
    }
  }
  let deniedBy: Counterexample['deniedBy'] = null;
  if (r && !r.public && real.decision !== 'allow') {
    const denies = (v: number) => r.policy.rules.findIndex((rule) => rule.action === 'deny' && truthOf(rule.when, input) === v);
    const k = denies(T) >= 0 ? denies(T) : denies(U);
    if (k >= 0) deniedBy = ruleAt(plan, r, k, readSource);
  }
  const value = truthOf(p.condition, input);
  return {
    ...witnessJson(w, host),
    route: r ? { index: r.index, id: r.id, name: r.name, at: routeLocation(plan, r) } : null,
    decision: real.decision,
    allowedBy,
    deniedBy,
    condition: TRI_WORD[value]!,
  };
}
