/**
 * The printer: any policy IR back to canonical policy text, the form `svc diff` and `svc explain`
 * show. One rule per line; strings JSON-quoted; parentheses only where the tree needs them.
 *
 * INVARIANT (round-trip): for every IR in normal form (ir.ts), `parsePolicyText(printPolicy(ir))`
 * deep-equals `ir`. So a nested `and` inside an `and` (or `or` inside `or`) keeps its parentheses:
 * the tree, not just the truth table, survives printing.
 */
import type { Criterion, Expr, PolicyIR, Rule } from './ir.ts';
import { KEYWORDS } from './tokens.ts';

/** Prints a policy as canonical text: one `allow if ...`/`deny if ...` rule per line, no trailing newline. */
export function printPolicy(ir: PolicyIR): string {
  return ir.rules.map(printRule).join('\n');
}

/** Prints one rule: `allow if <condition>`. */
export function printRule(rule: Rule): string {
  return `${rule.action} if ${printExpr(rule.when)}`;
}

// Binding strength: `or` < `and` < `not` < atoms.
const PREC = { or: 1, and: 2, not: 3, criterion: 4 } as const;

/** Prints a condition with minimal parentheses. */
export function printExpr(e: Expr): string {
  switch (e.op) {
    case 'or':
    case 'and':
      // A child binding no tighter than this node (including a same-operator child) is parenthesised,
      // and so is an `and` inside an `or`: precedence alone would make it right, but a reader of
      // `svc diff` should not need to know the precedence table to see which rules combine how.
      return e.args.map((a) => wrap(a, PREC[a.op] <= PREC[e.op] || (e.op === 'or' && a.op === 'and'))).join(` ${e.op} `);
    case 'not':
      return `not ${wrap(e.arg, PREC[e.arg.op] < PREC.not)}`;
    case 'criterion':
      return printCriterion(e);
  }
}

function wrap(e: Expr, paren: boolean): string {
  const s = printExpr(e);
  return paren ? `(${s})` : s;
}

const str = (s: string): string => JSON.stringify(s);
const list = (xs: readonly string[]): string => `[${xs.map(str).join(', ')}]`;
const BARE_NAME = /^[A-Za-z_][A-Za-z0-9_.\-]*$/;

/** Prints one criterion: `email is "a@b"`, `claim/"odd name" has "x"`, `authenticated_user`. */
export function printCriterion(c: Criterion): string {
  switch (c.name) {
    case 'accept':
    case 'reject':
    case 'authenticated_user':
    case 'cors_preflight':
    case 'invalid_client_certificate':
      return c.name;
    case 'claim': {
      const bare = BARE_NAME.test(c.claim) && !KEYWORDS.includes(c.claim);
      return `claim/${bare ? c.claim : str(c.claim)} ${matcher(c.match)}`;
    }
    case 'date':
    case 'time_of_day': {
      const m = c.match;
      const parts: string[] = [c.name];
      if (m.after !== undefined) parts.push(`after ${str(m.after)}`);
      if (m.before !== undefined) parts.push(`before ${str(m.before)}`);
      if ('timezone' in m && m.timezone !== undefined) parts.push(`timezone ${str(m.timezone)}`);
      return parts.join(' ');
    }
    case 'day_of_week': {
      const tz = c.match.timezone !== undefined ? ` timezone ${str(c.match.timezone)}` : '';
      return `day_of_week ${matcher(c.match)}${tz}`;
    }
    default:
      return `${c.name} ${matcher(c.match)}`;
  }
}

type AnyMatcher = { readonly op: string; readonly value?: string; readonly values?: readonly string[] };

function matcher(m: AnyMatcher): string {
  if (m.values !== undefined) return `${m.op} ${list(m.values)}`;
  if (m.value !== undefined) return `${m.op} ${str(m.value)}`;
  return m.op; // `device approved`
}
