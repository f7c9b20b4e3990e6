/**
 * Lowers a route's `policy:` value into the policy IR. The value is the text syntax (a string), one
 * policy statement (a map), or a list of statements (a string item in the list is text syntax too).
 *
 * A statement holds `allow` and/or `deny`; each holds a condition: a map with one or more of `and`,
 * `or`, `not` (none of) and `nor` (not all of), each a list of criteria or nested conditions. Several
 * keys in one condition are or-ed (any of them), in written order, with a warning (SVC4023). An
 * empty statement, condition or operator list matches nothing, with a warning (SVC4025), as in the
 * established proxy. Criteria are checked by criteria.ts, shared with the text syntax.
 */
import * as D from '../diagnostics/codes/policy.ts';
import { q } from '../diagnostics/define.ts';
import type { Reporter } from '../diagnostics/diagnostic.ts';
import { suggest } from '../schema/suggest.ts';
import type { MapNode, Node } from '../source/tree.ts';
import { buildCriterion, type RawCriterion, type RawValue } from './criteria.ts';
import { CRITERION_NAMES, andOf, notOf, orOf, type Expr, type PolicyIR, type Rule } from './ir.ts';
import { parsePolicyText } from './parse-text.ts';

const OPERATORS: readonly string[] = ['and', 'or', 'not', 'nor'];

/** What an empty condition compiles to: a criterion that holds for no request. */
const NOTHING: Expr = { name: 'reject', op: 'criterion' };

/** What an empty condition means for its rule, for SVC4025. */
const NOBODY = { allow: 'it matches no request, so this `allow` allows nobody', deny: 'it matches no request, so this `deny` denies nobody' } as const;
const ACTIONS: readonly string[] = ['allow', 'deny'];

/**
 * Lowers `node` (the route's `policy:` value at config path `path`) to the IR, reporting every
 * problem with its span and path. Returns undefined when any error was reported.
 */
export function lowerPolicyNode(node: Node, r: Reporter, path: string): PolicyIR | undefined {
  const before = r.errorCount;
  const rules: Rule[] = [];
  if (node.kind === 'scalar' && typeof node.value === 'string') {
    const ir = parsePolicyText(node.value, node.span, r, path);
    if (ir) rules.push(...ir.rules);
  } else if (node.kind === 'map') {
    rules.push(...statement(node, r, path));
  } else if (node.kind === 'list') {
    node.items.forEach((item, i) => {
      const p = `${path}[${i}]`;
      if (item.kind === 'map') rules.push(...statement(item, r, p));
      else if (item.kind === 'scalar' && typeof item.value === 'string') {
        const ir = parsePolicyText(item.value, item.span, r, p);
        if (ir) rules.push(...ir.rules);
      } else r.report(D.PolicyWrongValueType, item.span, { what: 'a policy statement', expected: 'a map with `allow` or `deny`', got: kindOf(item) }, p);
    });
  } else {
    r.report(D.PolicyWrongValueType, node.span, { what: '`policy`', expected: 'a list of statements, a statement or policy text', got: kindOf(node) }, path);
  }
  return r.errorCount > before ? undefined : { rules };
}

function statement(node: MapNode, r: Reporter, path: string): Rule[] {
  const rules: Rule[] = [];
  let hasAction = false;
  if (node.entries.length === 0) {
    r.report(D.PolicyMatchesNothing, node.span, { what: 'the policy statement', meaning: 'it adds no rule' }, path);
    return rules;
  }
  for (const e of node.entries) {
    const p = `${path}.${e.key}`;
    if (e.key === 'allow' || e.key === 'deny') {
      hasAction = true;
      const when = condition(e.value, r, p, `\`${e.key}\``, e.key);
      if (when) rules.push({ action: e.key, when });
    } else {
      r.report(D.PolicyUnknownStatementKey, e.keySpan, { key: e.key, suggestion: suggest(e.key, ACTIONS) }, p);
    }
  }
  if (!hasAction) r.report(D.PolicyStatementWithoutAction, node.span, {}, path);
  return rules;
}

/**
 * A condition map: its operator keys, or-ed in written order (SVC4023 when there are several).
 * `action` is set for a rule's own condition (not a nested one), which may also be written empty
 * (`allow:` with no value).
 */
function condition(node: Node, r: Reporter, path: string, what: string, action?: 'allow' | 'deny'): Expr | undefined {
  const empty = node.kind === 'map' ? node.entries.length === 0 : action !== undefined && node.kind === 'scalar' && node.value === null;
  if (empty) {
    r.report(D.PolicyMatchesNothing, node.span, { what: `the condition of ${what}`, meaning: action === undefined ? 'it matches no request' : NOBODY[action] }, path);
    return NOTHING;
  }
  if (node.kind !== 'map') {
    r.report(D.PolicyWrongValueType, node.span, { what, expected: 'a map of `and`, `or`, `not` or `nor`', got: kindOf(node) }, path);
    return undefined;
  }
  const parts: Expr[] = [];
  let ok = true;
  for (const e of node.entries) {
    const p = `${path}.${e.key}`;
    if (!OPERATORS.includes(e.key)) {
      const isCriterion = CRITERION_NAMES.includes(e.key as never) || e.key.startsWith('claim/');
      r.report(D.PolicyUnknownOperator, e.keySpan, { key: e.key, suggestion: suggest(e.key, OPERATORS), isCriterion }, p);
      ok = false;
      continue;
    }
    const v = e.value;
    if (v.kind !== 'list') {
      r.report(D.PolicyWrongValueType, v.span, { what: `\`${e.key}\``, expected: 'a list of criteria', got: kindOf(v) }, p);
      ok = false;
      continue;
    }
    if (v.items.length === 0) {
      // Empty `not`/`nor` too: the established proxy matches nothing for any empty operator list.
      const meaning = action !== undefined && node.entries.length === 1 ? NOBODY[action] : 'it matches no request';
      r.report(D.PolicyMatchesNothing, v.span, { what: `\`${e.key}\``, meaning }, p);
      parts.push(NOTHING);
      continue;
    }
    const args: Expr[] = [];
    v.items.forEach((item, i) => {
      const x = term(item, r, `${p}[${i}]`);
      if (x) args.push(x);
      else ok = false;
    });
    if (args.length !== v.items.length) continue;
    // `not` is "none of" and `nor` is "not all of" (docs/architecture.md §3).
    if (e.key === 'and') parts.push(andOf(args));
    else if (e.key === 'or') parts.push(orOf(args));
    else if (e.key === 'not') parts.push(notOf(orOf(args)));
    else parts.push(notOf(andOf(args)));
  }
  if (!ok || parts.length === 0) return undefined;
  // Several operators side by side: any of them (the established proxy's reading: one rule body per
  // operator). Pointed out, since "and" is the easy misreading.
  if (parts.length > 1) r.report(D.PolicyMixedOperators, node.span, { what, keys: node.entries.map((e) => e.key) }, path);
  return parts.length === 1 ? parts[0] : orOf(parts);
}

/** A list item: a nested condition (all keys are operators) or a one-key criterion. */
function term(node: Node, r: Reporter, path: string): Expr | undefined {
  if (node.kind !== 'map' || node.entries.length === 0) {
    r.report(D.PolicyCriterionShape, node.span, { got: node.kind === 'map' ? 'an empty map' : kindOf(node) }, path);
    return undefined;
  }
  if (node.entries.every((e) => OPERATORS.includes(e.key))) return condition(node, r, path, 'a nested condition');
  if (node.entries.length > 1) {
    r.report(D.PolicyCriterionShape, node.span, { got: `a map with ${node.entries.length} keys (${node.entries.map((e) => q(e.key)).join(', ')})` }, path);
    return undefined;
  }
  const e = node.entries[0]!;
  const p = `${path}.${e.key}`;
  const slash = e.key.indexOf('/');
  const name = slash < 0 ? e.key : e.key.slice(0, slash);
  const isClaim = name === 'claim';
  const raw: RawCriterion = {
    surface: 'document',
    name: isClaim || slash < 0 ? name : e.key,
    nameSpan: e.keySpan,
    ...(isClaim && slash >= 0 ? { claim: { value: e.key.slice(slash + 1), span: e.keySpan } } : {}),
    ...(e.value.kind !== 'map' ? { bare: rawValue(e.value, p) } : {}),
    matchers: e.value.kind === 'map' ? e.value.entries.map((m) => ({ name: m.key, nameSpan: m.keySpan, value: rawValue(m.value, `${p}.${m.key}`), path: `${p}.${m.key}` })) : [],
    span: node.span,
    path: p,
  };
  return buildCriterion(raw, r);
}

function rawValue(node: Node, path: string): RawValue {
  switch (node.kind) {
    case 'list':
      return { kind: 'list', items: node.items.map((it, i) => rawValue(it, `${path}[${i}]`)), span: node.span, path };
    case 'map':
      return { kind: 'other', got: 'a map', span: node.span, path };
    case 'scalar':
      if (typeof node.value === 'string') return { kind: 'string', value: node.value, untyped: node.untyped, span: node.span, path };
      if (typeof node.value === 'boolean') return { kind: 'bool', value: node.value, span: node.span, path };
      return { kind: 'other', got: node.value === null ? 'null' : 'a number', scalar: String(node.value), span: node.span, path };
  }
}

function kindOf(node: Node): string {
  if (node.kind === 'list') return 'a list';
  if (node.kind === 'map') return 'a map';
  const v = node.value;
  return v === null ? 'null' : typeof v === 'string' ? 'a string' : typeof v === 'boolean' ? 'a boolean' : 'a number';
}

