/**
 * Desugars the deprecated list-style route options (`allowed_users`, `allowed_domains`,
 * `allowed_groups`, `allowed_idp_claims`, `allow_public_unauthenticated_access`,
 * `allow_any_authenticated_user`, `cors_allow_preflight`) into policy rules.
 *
 * Each option given becomes its own `allow` rule, so the options are or-ed with each other and with
 * the route's `policy`, as they were before the policy language existed. Output order is fixed
 * (the order of the fields of `LegacyOptions`, claim keys sorted), so key order in the config never
 * changes the plan.
 */
import { orOf, type Criterion, type Expr, type Rule } from './ir.ts';

/** The deprecated options, as the schema stage checked them. Absent or empty means "not given". */
export interface LegacyOptions {
  readonly allowedUsers?: readonly string[];
  readonly allowedDomains?: readonly string[];
  readonly allowedGroups?: readonly string[];
  /** Claim name to value(s); nested maps flatten to dotted names, a scalar is a one-element list. */
  readonly allowedIdpClaims?: Readonly<Record<string, unknown>>;
  readonly allowPublicUnauthenticatedAccess?: boolean;
  readonly allowAnyAuthenticatedUser?: boolean;
  readonly corsAllowPreflight?: boolean;
}

/**
 * Builds the `allow` rules the deprecated options stand for:
 * - `allowed_users` → `user in [...] or email in [...]` (an entry matches the user id or the email);
 * - `allowed_domains` → `domain in [...]`;
 * - `allowed_groups` → `groups has "a" or groups has "b"` (any of the groups);
 * - `allowed_idp_claims` → `claim/<dotted> has "v1" or claim/<dotted> has "v2" or ...` over every key;
 * - `allow_public_unauthenticated_access` → `accept`; `allow_any_authenticated_user` →
 *   `authenticated_user`; `cors_allow_preflight` → `cors_preflight`.
 */
export function legacyRules(o: LegacyOptions): Rule[] {
  // The condition of each option given, in this order; each becomes one `allow` rule.
  const when: Expr[] = [];
  const users = o.allowedUsers ?? [];
  if (users.length > 0) {
    when.push(orOf([
      { match: { op: 'in', values: [...users] }, name: 'user', op: 'criterion' },
      { match: { op: 'in', values: [...users] }, name: 'email', op: 'criterion' },
    ]));
  }
  const domains = o.allowedDomains ?? [];
  if (domains.length > 0) when.push({ match: { op: 'in', values: [...domains] }, name: 'domain', op: 'criterion' });
  const groups = o.allowedGroups ?? [];
  if (groups.length > 0) when.push(orOf(groups.map((g): Criterion => ({ match: { op: 'has', value: g }, name: 'groups', op: 'criterion' }))));
  if (o.allowedIdpClaims !== undefined) {
    const leaves: Criterion[] = [];
    for (const [claim, values] of flattenClaims(o.allowedIdpClaims)) {
      for (const value of values) leaves.push({ claim, match: { op: 'has', value }, name: 'claim', op: 'criterion' });
    }
    if (leaves.length > 0) when.push(orOf(leaves));
  }
  if (o.allowPublicUnauthenticatedAccess === true) when.push({ name: 'accept', op: 'criterion' });
  if (o.allowAnyAuthenticatedUser === true) when.push({ name: 'authenticated_user', op: 'criterion' });
  if (o.corsAllowPreflight === true) when.push({ name: 'cors_preflight', op: 'criterion' });
  return when.map((w): Rule => ({ action: 'allow', when: w }));
}

/**
 * Flattens `allowed_idp_claims` to `[dotted name, values]` pairs sorted by name. Nested maps join
 * their keys with `.`; a scalar becomes a one-element list; numbers and booleans become their
 * JSON text (claims compare as strings); `null` and nested lists-of-maps carry no value and are
 * skipped. Duplicate values are kept once, in first-seen order.
 */
export function flattenClaims(claims: Readonly<Record<string, unknown>>): [string, string[]][] {
  const out = new Map<string, string[]>();
  const add = (name: string, v: unknown): void => {
    const s = typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : undefined;
    if (s === undefined) return;
    const vs = out.get(name) ?? [];
    if (!vs.includes(s)) vs.push(s);
    out.set(name, vs);
  };
  const walk = (prefix: string, v: unknown): void => {
    if (Array.isArray(v)) for (const item of v) add(prefix, item);
    else if (v !== null && typeof v === 'object') {
      for (const [k, inner] of Object.entries(v as Record<string, unknown>)) walk(prefix === '' ? k : `${prefix}.${k}`, inner);
    } else add(prefix, v);
  };
  for (const [k, v] of Object.entries(claims)) walk(k, v);
  return [...out.entries()].filter(([, vs]) => vs.length > 0).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}
