/**
 * Policy programs: a route's policy IR compiled once per plan into closures. `verdict` is the fast
 * path (short-circuit, no allocation); `explain` evaluates every leaf and says why, for 403 pages,
 * logs, `svc explain` and `svc test`. Both follow docs/policy.md and docs/decisions.md §4:
 *
 * - deny wins: a true `deny` rule → deny; else an unknown `deny` rule → unauthenticated; else a true
 *   `allow` rule → allow; else an unknown `allow` rule → unauthenticated; else deny;
 * - three-valued `and`/`or`/`not` (Kleene): session criteria are unknown for anonymous requests.
 *
 * INVARIANT (fail-closed): an exception while evaluating counts as deny, never allow.
 */
import type { Expr, PolicyIR, Criterion } from '../../compiler/plan/types.ts';
import type { Verdict } from '../core/types.ts';
import { F, T, U, compileCriterion, type Leaf, type PolicyInput, type Tri } from './criteria.ts';

export type { PolicyInput, Tri };
export { F, T, U };

/** One criterion leaf's value in an explanation. */
export interface LeafTrace {
  readonly criterion: Criterion;
  readonly value: Tri;
  /** `<name>-ok`, `<name>-unauthorized`, `user-unauthenticated` or `device-unauthenticated` (docs/decisions.md §4). */
  readonly reason: string;
}

/** One rule's value in an explanation, with its leaves in written order. */
export interface RuleTrace {
  readonly action: 'allow' | 'deny';
  readonly value: Tri;
  readonly leaves: readonly LeafTrace[];
}

export interface PolicyExplanation {
  readonly verdict: Verdict;
  readonly reasons: readonly string[];
  readonly rules: readonly RuleTrace[];
  /**
   * The leaves whose reasons are `reasons` (the same choice, without repeated leaves), so a page can
   * say why in words with the matcher's values (runtime/policy/words.ts).
   */
  readonly because: readonly LeafTrace[];
}

/** The reasons a decision can give that are not a criterion leaf's `<name>-ok`/`<name>-unauthorized`. */
export const POLICY_REASONS = ['user-unauthenticated', 'no-matching-rule', 'evaluation-error', 'device-unauthenticated'] as const;

/** The reason of a `device` leaf that is false for the session's device: answered 450 (docs/decisions.md §4). */
export const DEVICE_UNAUTHORIZED = 'device-unauthorized';
/** The reason of a `device` leaf for a signed-in user whose session has no device yet: the device page. */
export const DEVICE_UNAUTHENTICATED = POLICY_REASONS[3];

export interface PolicyProgram {
  /** The verdict alone: the request path's fast evaluation. */
  verdict(input: PolicyInput): Verdict;
  /** The verdict with every rule's and leaf's value and the decision's reasons. */
  explain(input: PolicyInput): PolicyExplanation;
}

type Node = { readonly kind: 'and' | 'or'; readonly args: readonly Node[] } | { readonly kind: 'not'; readonly arg: Node } | { readonly kind: 'leaf'; readonly leaf: Leaf; readonly index: number };

/** Compiles a policy. Criteria are compiled once (time-zone formatters, CIDR lists, sets). */
export function compilePolicy(policy: PolicyIR): PolicyProgram {
  const leaves: { criterion: Criterion; leaf: Leaf }[] = [];
  const lower = (e: Expr): Node => {
    switch (e.op) {
      case 'and':
      case 'or':
        return { kind: e.op, args: e.args.map(lower) };
      case 'not':
        return { kind: 'not', arg: lower(e.arg) };
      case 'criterion': {
        const leaf = compileCriterion(e);
        leaves.push({ criterion: e, leaf });
        return { kind: 'leaf', leaf, index: leaves.length - 1 };
      }
    }
  };
  const rules = policy.rules.map((r) => ({ action: r.action, node: lower(r.when), first: 0, end: 0 }));
  // Leaves are numbered depth first, so each rule's leaves are one contiguous run.
  let next = 0;
  for (const r of rules) {
    r.first = next;
    next += countLeaves(r.node);
    r.end = next;
  }
  const denies = rules.filter((r) => r.action === 'deny').map((r) => r.node);
  const allows = rules.filter((r) => r.action === 'allow').map((r) => r.node);

  const verdict = (input: PolicyInput): Verdict => {
    try {
      let unknown = false;
      for (const n of denies) {
        const v = evaluate(n, input);
        if (v === T) return 'deny';
        if (v === U) unknown = true;
      }
      if (unknown) return 'unauthenticated';
      for (const n of allows) {
        const v = evaluate(n, input);
        if (v === T) return 'allow';
        if (v === U) unknown = true;
      }
      return unknown ? 'unauthenticated' : 'deny';
    } catch {
      return 'deny';
    }
  };

  const explain = (input: PolicyInput): PolicyExplanation => {
    let values: Tri[];
    try {
      values = leaves.map((l) => l.leaf(input));
    } catch {
      return { verdict: 'deny', reasons: [POLICY_REASONS[2]], rules: [], because: [] };
    }
    const traces: RuleTrace[] = rules.map((r) => ({
      action: r.action,
      value: evaluateWith(r.node, values),
      leaves: leaves.slice(r.first, r.end).map((l, k) => {
        const value = values[r.first + k]!;
        return { criterion: l.criterion, value, reason: reasonOf(l.criterion, value, input.identity !== null) };
      }),
    }));
    const pick = (action: 'allow' | 'deny', value: Tri) => traces.filter((t) => t.action === action && t.value === value);
    let decided: RuleTrace[];
    let v: Verdict;
    if ((decided = pick('deny', T)).length) v = 'deny';
    else if ((decided = pick('deny', U)).length) v = 'unauthenticated';
    else if ((decided = pick('allow', T)).length) v = 'allow';
    else if ((decided = pick('allow', U)).length) v = 'unauthenticated';
    else {
      v = 'deny';
      decided = traces.filter((t) => t.action === 'allow');
    }
    const deciding = [...new Set(decided.flatMap((t) => why(rules[traces.indexOf(t)]!.node, values)))];
    const because = deciding.map((i) => ({ criterion: leaves[i]!.criterion, value: values[i]!, reason: reasonOf(leaves[i]!.criterion, values[i]!, input.identity !== null) }));
    const reasons = [...new Set(because.map((l) => l.reason))];
    return { verdict: v, reasons: reasons.length ? reasons : [POLICY_REASONS[1]], rules: traces, because };
  };

  return { verdict, explain };
}

function countLeaves(n: Node): number {
  switch (n.kind) {
    case 'leaf':
      return 1;
    case 'not':
      return countLeaves(n.arg);
    default:
      return n.args.reduce((s, a) => s + countLeaves(a), 0);
  }
}

/** Kleene evaluation with short-circuit: `and` stops at false, `or` at true. */
function evaluate(n: Node, input: PolicyInput): Tri {
  switch (n.kind) {
    case 'leaf':
      return n.leaf(input);
    case 'not': {
      const v = evaluate(n.arg, input);
      return v === U ? U : v === T ? F : T;
    }
    case 'and': {
      let r: Tri = T;
      for (const a of n.args) {
        const v = evaluate(a, input);
        if (v === F) return F;
        if (v === U) r = U;
      }
      return r;
    }
    case 'or': {
      let r: Tri = F;
      for (const a of n.args) {
        const v = evaluate(a, input);
        if (v === T) return T;
        if (v === U) r = U;
      }
      return r;
    }
  }
}

/** The same evaluation over precomputed leaf values (explanations evaluate every leaf once). */
function evaluateWith(n: Node, values: readonly Tri[]): Tri {
  switch (n.kind) {
    case 'leaf':
      return values[n.index]!;
    case 'not': {
      const v = evaluateWith(n.arg, values);
      return v === U ? U : v === T ? F : T;
    }
    case 'and': {
      const vs = n.args.map((a) => evaluateWith(a, values));
      return vs.includes(F) ? F : vs.includes(U) ? U : T;
    }
    case 'or': {
      const vs = n.args.map((a) => evaluateWith(a, values));
      return vs.includes(T) ? T : vs.includes(U) ? U : F;
    }
  }
}

/**
 * The leaves (their indices) that decide a node's value (docs/decisions.md §4): all parts of a true
 * `and` or a false `or`; otherwise only the parts with the node's own value (a false `and` is false
 * because of its false parts, a true `or` true because of its true parts, unknown because of the
 * unknown ones). Depth first, written order.
 */
function why(n: Node, values: readonly Tri[]): number[] {
  switch (n.kind) {
    case 'leaf':
      return [n.index];
    case 'not':
      return why(n.arg, values);
    default: {
      const v = evaluateWith(n, values);
      const all = (n.kind === 'and' && v === T) || (n.kind === 'or' && v === F);
      return n.args.filter((a) => all || evaluateWith(a, values) === v).flatMap((a) => why(a, values));
    }
  }
}

/**
 * The reason string of one leaf (docs/decisions.md §4). `signedIn`: a user is signed in, so an
 * unknown leaf can only be a `device` leaf without a device in the session.
 */
export function reasonOf(c: Criterion, value: Tri, signedIn = false): string {
  if (value === U) return signedIn && c.name === 'device' ? DEVICE_UNAUTHENTICATED : POLICY_REASONS[0];
  return `${c.name.replaceAll('_', '-')}-${value === T ? 'ok' : 'unauthorized'}`;
}
