/**
 * The policy IR: one plain boolean tree per rule, shared by both surfaces (YAML/JSON documents and
 * the text syntax), the printer, the plan and the runtime.
 *
 * INVARIANT (plan-json): JSON-only data. No Map/RegExp/Date, no `undefined` values (optional fields
 * are omitted), no spans. Every type is deeply readonly.
 *
 * INVARIANT (normal-form): every IR built by this module's constructors (`andOf`, `orOf`) has `and`/`or`
 * nodes with at least two arguments; a one-argument list is its argument. `true`/`false` in the text
 * syntax are the `accept`/`reject` criteria. Values are canonical (see each matcher), so two
 * spellings of one policy give one IR.
 */

/** What a rule does when its condition holds. Deny wins over allow. */
export type Action = 'allow' | 'deny';

/** A route's policy: every rule is evaluated; a matching `deny` wins over a matching `allow`. */
export interface PolicyIR {
  readonly rules: readonly Rule[];
}

/** One rule: `allow if <when>` or `deny if <when>`. */
export interface Rule {
  readonly action: Action;
  readonly when: Expr;
}

/** A boolean condition: `and`/`or` of two or more, `not` of one, or a criterion leaf. */
export type Expr = AndExpr | OrExpr | NotExpr | Criterion;

/** All of `args` (two or more). */
export interface AndExpr {
  readonly op: 'and';
  readonly args: readonly Expr[];
}

/** Any of `args` (two or more). */
export interface OrExpr {
  readonly op: 'or';
  readonly args: readonly Expr[];
}

/** The negation of `arg` (never grants access to an anonymous request; see `isSessionCriterion`). */
export interface NotExpr {
  readonly op: 'not';
  readonly arg: Expr;
}

// ---------------------------------------------------------------------------------------------
// Matchers

/** Single-string comparisons. Case-sensitive, exact code-unit comparison. */
export type StringOp = 'is' | 'starts_with' | 'ends_with' | 'contains';

/** Set membership; `not_in` is exactly the negation of `in`. */
export type SetOp = 'in' | 'not_in';

/** Matchers of single-string criteria (`domain`, `email`, `user`, `http_method`, `http_path`). */
export type StringMatcher =
  | { readonly op: StringOp; readonly value: string }
  | { readonly op: SetOp; readonly values: readonly string[] };

/**
 * Matchers of list-valued criteria (`groups`, `claim/<name>`). `has v` holds when `v` is one of
 * the values; a string matcher holds when some value satisfies it; `not_in` is the negation of `in`.
 */
export type ListMatcher = StringMatcher | { readonly op: 'has'; readonly value: string };

/**
 * `device`: the device id is `value`, the device type is `value`, the device is approved, or the
 * device is registered and not approved (`not_approved`: the established proxy's `approved: false`).
 * Without a registered device, every device matcher is false (for `not_approved` too).
 */
export type DeviceMatcher =
  | { readonly op: 'is'; readonly value: string }
  | { readonly op: 'type'; readonly value: string }
  | { readonly op: 'approved' }
  | { readonly op: 'not_approved' };

/** `client_certificate`: SHA-256 fingerprints as 64 lower-case hex digits, no colons. */
export type CertificateMatcher =
  | { readonly op: 'is'; readonly value: string }
  | { readonly op: 'in'; readonly values: readonly string[] };

/** `source_ip`: CIDR blocks `address/prefix` (a bare address gets `/32` or `/128`; IPv6 lower-case). */
export type SourceIpMatcher =
  | { readonly op: 'is'; readonly value: string }
  | { readonly op: SetOp; readonly values: readonly string[] };

/**
 * `date`: the request time is strictly after `after` and strictly before `before` (at least one is
 * given). Instants are canonical UTC `toISOString()` strings (`2025-01-31T17:00:00.000Z`).
 */
export interface DateMatcher {
  readonly op: 'range';
  readonly after?: string;
  readonly before?: string;
}

/**
 * `time_of_day`: the local time in `timezone` (default `UTC`) is at or after `after` and before
 * `before` (`HH:MM`, at least one given). When `after` > `before` the window wraps midnight.
 * `timezone` is the canonical IANA name `Intl` resolves it to.
 */
export interface TimeOfDayMatcher {
  readonly op: 'range';
  readonly after?: string;
  readonly before?: string;
  readonly timezone?: string;
}

/** Day names, canonical three-letter lower-case. */
export type Day = 'mon' | 'tue' | 'wed' | 'thu' | 'fri' | 'sat' | 'sun';

/** `day_of_week`: the local day in `timezone` (default `UTC`) is / is in / is not in the given days. */
export type DayOfWeekMatcher =
  | { readonly op: 'is'; readonly value: Day; readonly timezone?: string }
  | { readonly op: SetOp; readonly values: readonly Day[]; readonly timezone?: string };

// ---------------------------------------------------------------------------------------------
// Criteria

/** Criteria that are `true` or absent: they have no matcher. */
export type BooleanCriterionName = 'accept' | 'reject' | 'authenticated_user' | 'cors_preflight' | 'invalid_client_certificate';

/** Criteria over one string of the request or the session's user. */
export type StringCriterionName = 'domain' | 'email' | 'user' | 'http_method' | 'http_path';

/** Every criterion name as it appears in the IR (`claim/<name>` is `claim` plus a `claim` field). */
export type CriterionName =
  | BooleanCriterionName
  | StringCriterionName
  | 'groups'
  | 'claim'
  | 'device'
  | 'client_certificate'
  | 'source_ip'
  | 'date'
  | 'time_of_day'
  | 'day_of_week';

/** A criterion leaf. The `name` decides the matcher's type; boolean criteria have none. */
export type Criterion =
  | { readonly op: 'criterion'; readonly name: BooleanCriterionName }
  | { readonly op: 'criterion'; readonly name: StringCriterionName; readonly match: StringMatcher }
  | { readonly op: 'criterion'; readonly name: 'groups'; readonly match: ListMatcher }
  | { readonly op: 'criterion'; readonly name: 'claim'; readonly claim: string; readonly match: ListMatcher }
  | { readonly op: 'criterion'; readonly name: 'device'; readonly match: DeviceMatcher }
  | { readonly op: 'criterion'; readonly name: 'client_certificate'; readonly match: CertificateMatcher }
  | { readonly op: 'criterion'; readonly name: 'source_ip'; readonly match: SourceIpMatcher }
  | { readonly op: 'criterion'; readonly name: 'date'; readonly match: DateMatcher }
  | { readonly op: 'criterion'; readonly name: 'time_of_day'; readonly match: TimeOfDayMatcher }
  | { readonly op: 'criterion'; readonly name: 'day_of_week'; readonly match: DayOfWeekMatcher };

/** Every criterion name, in the order docs/policy.md lists them. */
export const CRITERION_NAMES: readonly CriterionName[] = [
  'accept', 'reject', 'authenticated_user', 'domain', 'email', 'user', 'groups', 'claim', 'device',
  'http_method', 'http_path', 'cors_preflight', 'client_certificate', 'invalid_client_certificate',
  'source_ip', 'date', 'time_of_day', 'day_of_week',
];

/** The boolean criteria (no matcher; `true` only). */
export const BOOLEAN_CRITERIA: readonly BooleanCriterionName[] = [
  'accept', 'reject', 'authenticated_user', 'cors_preflight', 'invalid_client_certificate',
];

/** The days in week order, Monday first. */
export const DAYS: readonly Day[] = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'];

const SESSION_CRITERIA: ReadonlySet<string> = new Set(['domain', 'email', 'user', 'groups', 'claim', 'device', 'authenticated_user']);

/**
 * Tells whether a criterion needs a signed-in user (`domain`, `email`, `user`, `groups`, `claim`,
 * `device`, `authenticated_user`). The runtime's rule: such a criterion seen by an anonymous request
 * is "unknown", and a rule left unknown yields "unauthenticated" (sign in), never access through
 * negation. `claim/<name>` may be passed as `claim` or in full.
 */
export function isSessionCriterion(name: string): boolean {
  return SESSION_CRITERIA.has(name.startsWith('claim/') ? 'claim' : name);
}

/** Tells whether a criterion name is one of the boolean criteria. */
export function isBooleanCriterion(name: string): name is BooleanCriterionName {
  return (BOOLEAN_CRITERIA as readonly string[]).includes(name);
}

// ---------------------------------------------------------------------------------------------
// Constructors keeping the normal form

/** Builds the conjunction of `args`: the argument itself when there is one. Throws on none (a bug). */
export function andOf(args: readonly Expr[]): Expr {
  if (args.length === 0) throw new Error('andOf: no arguments');
  return args.length === 1 ? args[0]! : { args: [...args], op: 'and' };
}

/** Builds the disjunction of `args`: the argument itself when there is one. Throws on none (a bug). */
export function orOf(args: readonly Expr[]): Expr {
  if (args.length === 0) throw new Error('orOf: no arguments');
  return args.length === 1 ? args[0]! : { args: [...args], op: 'or' };
}

/** Builds the negation of `arg`. */
export function notOf(arg: Expr): Expr {
  return { arg, op: 'not' };
}

// ---------------------------------------------------------------------------------------------
// Queries used by validation rules

/** Lists every criterion leaf of a policy, rule or expression, depth first in written order. */
export function criteriaOf(x: PolicyIR | Rule | Expr): Criterion[] {
  const out: Criterion[] = [];
  const walk = (e: Expr): void => {
    switch (e.op) {
      case 'and':
      case 'or':
        for (const a of e.args) walk(a);
        return;
      case 'not':
        walk(e.arg);
        return;
      case 'criterion':
        out.push(e);
    }
  };
  if ('rules' in x) for (const r of x.rules) walk(r.when);
  else if ('action' in x) walk(x.when);
  else walk(x);
  return out;
}

/** Tells whether a policy, rule or expression uses the `groups` criterion (needs group data). */
export function usesGroups(x: PolicyIR | Rule | Expr): boolean {
  return criteriaOf(x).some((c) => c.name === 'groups');
}

/** Tells whether a policy, rule or expression uses any session criterion (see `isSessionCriterion`). */
export function usesSession(x: PolicyIR | Rule | Expr): boolean {
  return criteriaOf(x).some((c) => isSessionCriterion(c.name));
}
