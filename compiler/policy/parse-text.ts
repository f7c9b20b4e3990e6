/**
 * The entry point of the policy text syntax: lex (tokens.ts), parse with recovery (parser.ts),
 * report every syntax error, then build the IR (to-ast.ts) when the text parsed cleanly.
 */
import type { ILexingError, IRecognitionException, IToken } from 'chevrotain';
import * as D from '../diagnostics/codes/policy.ts';
import { q } from '../diagnostics/define.ts';
import type { Reporter } from '../diagnostics/diagnostic.ts';
import { span, type Span } from '../source/source-file.ts';
import type { PolicyIR } from './ir.ts';
import { policyParser, tokenEnd } from './parser.ts';
import { policyToIR, type Locate } from './to-ast.ts';
import { UnterminatedString, policyLexer } from './tokens.ts';

/**
 * Parses policy text into the IR, reporting syntax and semantic problems located inside `at` (the
 * span of the string in the config) and tagged with config path `path`. Returns undefined when any
 * error was reported. Never throws for any input text.
 */
export function parsePolicyText(text: string, at: Span, r: Reporter, path: string): PolicyIR | undefined {
  const known = clean.get(text);
  if (known !== undefined) return known;
  const before = r.diagnostics.length;
  const ir = parsePolicyTextAt(text, locator(text, at), r, path);
  // Only a text that parsed without a single diagnostic is remembered: one that reported anything
  // is parsed again wherever it appears, so every place gets its own located report.
  if (ir !== undefined && r.diagnostics.length === before) {
    if (clean.size >= MAX_REMEMBERED) clean.clear();
    clean.set(text, ir);
  }
  return ir;
}

/**
 * Policy texts that parsed cleanly, with their IR: configs repeat the same policy on many routes,
 * and a reload parses them all again. The IR holds no span (its locations were only for reports),
 * so one IR serves every place the text appears; nothing changes an IR once built. Bounded.
 */
const clean = new Map<string, PolicyIR>();
const MAX_REMEMBERED = 10_000;

/** `parsePolicyText` with a given offset-to-span map (text that is not written verbatim in a source). */
export function parsePolicyTextAt(text: string, locate: Locate, r: Reporter, path: string): PolicyIR | undefined {
  const problems: { start: number; end: number; found: string; expected: string }[] = [];

  const lexed = policyLexer.tokenize(text);
  for (const e of lexed.errors as ILexingError[]) {
    const bad = text.slice(e.offset, e.offset + Math.max(1, e.length));
    problems.push({ start: e.offset, end: e.offset + Math.max(1, e.length), found: q(bad), expected: 'a name, a string, `(`, `)`, `[`, `]`, `,`, `/` or `;`' });
  }
  const tokens: IToken[] = [];
  for (const t of lexed.tokens) {
    if (t.tokenType === UnterminatedString) {
      problems.push({ start: t.startOffset, end: tokenEnd(t, text.length), found: 'unterminated string', expected: 'a closing `"` on the same line' });
    } else tokens.push(t);
  }

  policyParser.input = tokens;
  const cst = policyParser.policy();
  for (const e of policyParser.errors as IRecognitionException[]) {
    const t = e.token;
    const isEof = !Number.isFinite(t.startOffset) || t.tokenType.name === 'EOF';
    const start = isEof ? text.length : t.startOffset;
    problems.push({ start, end: isEof ? text.length : tokenEnd(t, text.length), found: isEof ? 'end of text' : q(t.image), expected: e.message });
  }

  if (problems.length > 0) {
    // Recovery can fail twice at one token; report each place once, in text order.
    const seen = new Set<string>();
    problems.sort((a, b) => a.start - b.start);
    for (const p of problems) {
      const key = `${p.start}:${p.expected}`;
      if (seen.has(key)) continue;
      seen.add(key);
      r.report(D.PolicySyntaxError, locate(p.start, p.end), { found: p.found, expected: p.expected }, path);
    }
    return undefined;
  }
  return policyToIR(cst, text, locate, r, path);
}

/**
 * Where each rule of policy text starts (offsets in `text`, in order), or undefined when the text
 * does not parse cleanly. The IR of clean text has one rule per entry (to-ast.ts).
 */
export function ruleStartOffsets(text: string): number[] | undefined {
  const lexed = policyLexer.tokenize(text);
  if (lexed.errors.length > 0 || lexed.tokens.some((t) => t.tokenType === UnterminatedString)) return undefined;
  policyParser.input = lexed.tokens;
  const cst = policyParser.policy();
  if (policyParser.errors.length > 0) return undefined;
  const out: number[] = [];
  for (const n of cst.children['rule'] ?? []) {
    const start = 'children' in n ? n.location?.startOffset : undefined;
    if (start === undefined || !Number.isFinite(start)) return undefined;
    out.push(start);
  }
  return out;
}

/**
 * Maps offsets of `text` to spans of the config source. When the source holds `text` verbatim
 * inside `at` (a plain or single-line quoted scalar) offsets shift by its position; when it holds
 * each line verbatim (a YAML block scalar, indented) each line is found in turn; otherwise (escapes,
 * folding, env vars) every offset maps to `at` itself.
 */
export function locator(text: string, at: Span): Locate {
  // Search only the value's own text: a miss must not scan the rest of a large config file.
  const region = at.source.text.slice(at.start, at.end);
  const inRegion = region.indexOf(text);
  if (inRegion >= 0) {
    const whole = at.start + inRegion;
    return (s, e) => span(at.source, whole + s, whole + e);
  }
  const lines = text.split('\n');
  const starts: number[] = [];
  let cursor = 0;
  for (const line of lines) {
    const i = region.indexOf(line, cursor);
    if (i < 0) return () => at;
    starts.push(at.start + i);
    cursor = i + line.length;
  }
  const lineStarts: number[] = [];
  let off = 0;
  for (const line of lines) {
    lineStarts.push(off);
    off += line.length + 1;
  }
  const map = (o: number): number => {
    let k = lineStarts.length - 1;
    while (k > 0 && lineStarts[k]! > o) k--;
    return starts[k]! + Math.min(o - lineStarts[k]!, lines[k]!.length);
  };
  return (s, e) => {
    const a = map(s);
    return span(at.source, a, Math.max(a, map(Math.max(s, e - 1)) + (e > s ? 1 : 0)));
  };
}
