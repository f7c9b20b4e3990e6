/**
 * The CST → IR visitor of the policy text syntax. It walks the CST parser.ts built (plain recursive
 * functions over chevrotain's `CstNode`s, which keeps every step typed), hands each criterion to the
 * shared checks in criteria.ts, and builds the IR with the normal-form constructors of ir.ts.
 *
 * Contract: called only on a CST without syntax errors; it still never throws on a malformed CST
 * (it returns undefined), so arbitrary text can never crash the compiler.
 */
import type { CstNode, IToken } from 'chevrotain';
import * as D from '../diagnostics/codes/policy.ts';
import { q } from '../diagnostics/define.ts';
import type { Reporter } from '../diagnostics/diagnostic.ts';
import type { Span } from '../source/source-file.ts';
import { buildCriterion, type RawMatcher, type RawValue } from './criteria.ts';
import { andOf, notOf, orOf, type Action, type Expr, type PolicyIR, type Rule } from './ir.ts';

/** Maps a half-open offset range of the policy text to a span of the config source. */
export type Locate = (start: number, end: number) => Span;

interface Ctx {
  readonly text: string;
  readonly locate: Locate;
  readonly r: Reporter;
  readonly path: string;
}

function nodes(n: CstNode, name: string): CstNode[] {
  return (n.children[name] ?? []).filter((c): c is CstNode => 'children' in c);
}

function tokens(n: CstNode, name: string): IToken[] {
  return (n.children[name] ?? []).filter((c): c is IToken => 'image' in c);
}

function tokSpan(cx: Ctx, t: IToken): Span {
  return cx.locate(t.startOffset, (t.endOffset ?? t.startOffset) + 1);
}

function nodeSpan(cx: Ctx, n: CstNode): Span {
  const loc = n.location;
  return loc && Number.isFinite(loc.startOffset) ? cx.locate(loc.startOffset, (loc.endOffset ?? loc.startOffset) + 1) : cx.locate(0, cx.text.length);
}

/**
 * Builds the IR of a parsed policy, reporting semantic problems (and two rules on one line without
 * `;`). Returns undefined when anything was reported.
 */
export function policyToIR(cst: CstNode, text: string, locate: Locate, r: Reporter, path: string): PolicyIR | undefined {
  const cx: Ctx = { text, locate, r, path };
  const before = r.errorCount;
  const rules: Rule[] = [];
  let prevEnd: number | undefined;
  for (const rn of nodes(cst, 'rule')) {
    const loc = rn.location;
    const actionTok = tokens(rn, 'Allow')[0] ?? tokens(rn, 'Deny')[0];
    if (prevEnd !== undefined && loc && actionTok && !/[\n\r;]/.test(text.slice(prevEnd, loc.startOffset))) {
      r.report(D.PolicySyntaxError, tokSpan(cx, actionTok), { found: q(actionTok.image), expected: 'a line break or `;` before a new rule' }, path);
    }
    if (loc?.endOffset !== undefined) prevEnd = loc.endOffset + 1;
    const rule = ruleOf(cx, rn);
    if (rule) rules.push(rule);
  }
  if (rules.length === 0 && r.errorCount === before) {
    r.report(D.PolicySyntaxError, locate(0, text.length), { found: 'end of text', expected: '`allow` or `deny`' }, path);
  }
  return r.errorCount > before ? undefined : { rules };
}

function ruleOf(cx: Ctx, n: CstNode): Rule | undefined {
  const action: Action = tokens(n, 'Deny').length > 0 ? 'deny' : 'allow';
  const e = nodes(n, 'orExpr')[0];
  const when = e && orExpr(cx, e);
  return when && { action, when };
}

/** Builds `or`/`and` of the operands; undefined when any operand failed (errors are already reported). */
function all(parts: (Expr | undefined)[], combine: (xs: Expr[]) => Expr): Expr | undefined {
  if (parts.length === 0 || parts.some((p) => p === undefined)) return undefined;
  return combine(parts as Expr[]);
}

function orExpr(cx: Ctx, n: CstNode): Expr | undefined {
  return all(nodes(n, 'andExpr').map((a) => andExpr(cx, a)), orOf);
}

function andExpr(cx: Ctx, n: CstNode): Expr | undefined {
  return all(nodes(n, 'notExpr').map((a) => notExpr(cx, a)), andOf);
}

function notExpr(cx: Ctx, n: CstNode): Expr | undefined {
  const inner = nodes(n, 'notExpr')[0];
  if (inner) {
    const x = notExpr(cx, inner);
    return x && notOf(x);
  }
  const a = nodes(n, 'atom')[0];
  return a && atom(cx, a);
}

function atom(cx: Ctx, n: CstNode): Expr | undefined {
  const group = nodes(n, 'orExpr')[0];
  if (group) return orExpr(cx, group);
  // `true`/`false` are spellings of `accept`/`reject` (ir.ts normal form).
  if (tokens(n, 'True').length > 0) return { name: 'accept', op: 'criterion' };
  if (tokens(n, 'False').length > 0) return { name: 'reject', op: 'criterion' };
  const c = nodes(n, 'criterion')[0];
  return c && criterion(cx, c);
}

function criterion(cx: Ctx, n: CstNode): Expr | undefined {
  const nameTok = tokens(n, 'Identifier')[0];
  if (!nameTok) return undefined;
  let claim: { value: string; span: Span } | undefined;
  const cn = nodes(n, 'claimName')[0];
  if (cn) {
    const id = tokens(cn, 'Identifier')[0];
    const str = tokens(cn, 'StringLiteral')[0];
    const tok = id ?? str;
    if (!tok) return undefined;
    const value = id ? id.image : decode(cx, str!);
    if (value === undefined) return undefined;
    claim = { value, span: tokSpan(cx, tok) };
  } else if (tokens(n, 'Slash').length > 0) return undefined;
  const matchers: RawMatcher[] = [];
  for (const m of nodes(n, 'matcher')) {
    const mt = tokens(m, 'Identifier')[0];
    if (!mt) return undefined;
    const vn = nodes(m, 'value')[0];
    let value: RawValue | undefined;
    if (vn) {
      value = valueOf(cx, vn);
      if (value === undefined) return undefined;
    }
    matchers.push({ name: mt.image, nameSpan: tokSpan(cx, mt), value, path: cx.path });
  }
  return buildCriterion(
    {
      surface: 'text',
      name: nameTok.image,
      nameSpan: tokSpan(cx, nameTok),
      ...(claim ? { claim } : {}),
      matchers,
      span: nodeSpan(cx, n),
      path: cx.path,
    },
    cx.r,
  );
}

function valueOf(cx: Ctx, n: CstNode): RawValue | undefined {
  const s = tokens(n, 'StringLiteral')[0];
  if (s) return stringValue(cx, s);
  const l = nodes(n, 'list')[0];
  if (!l) return undefined;
  const items: RawValue[] = [];
  for (const t of tokens(l, 'StringLiteral')) {
    const v = stringValue(cx, t);
    if (!v) return undefined;
    items.push(v);
  }
  return { kind: 'list', items, span: nodeSpan(cx, l), path: cx.path };
}

function stringValue(cx: Ctx, t: IToken): RawValue | undefined {
  const value = decode(cx, t);
  return value === undefined ? undefined : { kind: 'string', value, untyped: false, span: tokSpan(cx, t), path: cx.path };
}

const ESCAPES: Readonly<Record<string, string>> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

/**
 * Decodes a string literal with JSON's escapes (hand-written because JSON.parse also rejects raw
 * control characters, which criteria.ts reports with its own, clearer code). Reports an undefined
 * escape as a syntax error.
 */
function decode(cx: Ctx, t: IToken): string | undefined {
  const raw = t.image.slice(1, -1);
  let out = '';
  for (let i = 0; i < raw.length; i++) {
    const ch = raw[i]!;
    if (ch !== '\\') {
      out += ch;
      continue;
    }
    const e = raw[i + 1] ?? '';
    const simple = ESCAPES[e];
    if (simple !== undefined && Object.hasOwn(ESCAPES, e)) {
      out += simple;
      i++;
    } else if (e === 'u' && /^[0-9A-Fa-f]{4}$/.test(raw.slice(i + 2, i + 6))) {
      out += String.fromCharCode(parseInt(raw.slice(i + 2, i + 6), 16));
      i += 5;
    } else {
      const at = t.startOffset + 1 + i;
      cx.r.report(
        D.PolicySyntaxError,
        cx.locate(at, at + 2),
        { found: `escape ${q(`\\${e}`)}`, expected: 'one of the JSON escapes `\\"`, `\\\\`, `\\/`, `\\b`, `\\f`, `\\n`, `\\r`, `\\t`, `\\uXXXX`' },
        cx.path,
      );
      return undefined;
    }
  }
  return out;
}
