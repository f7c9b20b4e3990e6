/**
 * Regex substitutions of the route options `regex_rewrite_*` and `host_path_regex_rewrite_*`
 * (docs/decisions.md §6): every match of an RE2 pattern is replaced; in the substitution `\1`…`\9`
 * insert capture groups (empty when the group did not take part or does not exist; `\0` is the whole
 * match) and `\\` is one backslash, as the
 * data plane's regex rewrites read them.
 */
import { RE2JS } from 're2js';

/** Replaces every match; `null` when the pattern does not match at all. */
export type Substitution = (input: string) => string | null;

/** Compiles a pattern/substitution pair once per plan. */
export function compileSubstitution(pattern: string, substitution: string): Substitution {
  const re = RE2JS.compile(pattern);
  const groups = re.groupCount();
  // A group the pattern does not have inserts nothing (replaceAll's callback would otherwise hand
  // over its offset and input arguments in those positions).
  const parts = parseSubstitution(substitution).map((p) => (typeof p === 'number' && p > groups ? '' : p));
  return (input) => {
    if (!re.test(input)) return null;
    return re.matcher(input).replaceAll((...args: unknown[]) => {
      let out = '';
      for (const p of parts) out += typeof p === 'string' ? p : ((args[p] as string | undefined) ?? '');
      return out;
    });
  };
}

/** Literal text and group numbers (`\0` is the whole match). */
function parseSubstitution(s: string): (string | number)[] {
  const parts: (string | number)[] = [];
  let lit = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    const n = s[i + 1];
    if (c === '\\' && n !== undefined && n >= '0' && n <= '9') {
      if (lit) parts.push(lit);
      lit = '';
      parts.push(Number(n));
      i++;
    } else if (c === '\\' && n === '\\') {
      lit += '\\';
      i++;
    } else lit += c;
  }
  if (lit) parts.push(lit);
  return parts;
}

/**
 * Tells whether `path` matches an RE2 source as a whole (implicitly anchored; docs/decisions.md §3).
 * A path that does not start with the pattern's literal prefix cannot match, so it is refused
 * without running the regex engine (most requests on a host with regex routes).
 */
export function compileWholeMatch(source: string, foldCase = false): (path: string) => boolean {
  if (foldCase) {
    // `path_case: insensitive`: RE2's own case folding; the literal-prefix shortcut is skipped.
    const folded = RE2JS.compile(source, RE2JS.CASE_INSENSITIVE);
    return (path) => folded.matches(path);
  }
  const re = RE2JS.compile(source);
  const prefix = literalPrefix(source);
  if (prefix === '') return (path) => re.matches(path);
  return (path) => path.startsWith(prefix) && re.matches(path);
}

const LITERAL = /[A-Za-z0-9/_~%,:=@&!;'" -]/;
const ESCAPED_LITERAL = /[./\-_~%,:=@&!;'" #]/;

/**
 * The literal text every whole match must start with, or `''` when unsure. Conservative: stops at
 * the first metacharacter; gives `''` for any alternation or flag group; drops a character a
 * quantifier applies to.
 */
export function literalPrefix(source: string): string {
  if (source.includes('|') || source.startsWith('(?')) return '';
  let i = source.startsWith('^') ? 1 : 0;
  let out = '';
  for (;;) {
    const c = source[i];
    if (c === undefined) break;
    let lit: string;
    let width: number;
    if (c === '\\') {
      const n = source[i + 1];
      if (n === undefined || !ESCAPED_LITERAL.test(n)) break;
      lit = n;
      width = 2;
    } else if (LITERAL.test(c)) {
      lit = c;
      width = 1;
    } else break;
    const next = source[i + width];
    if (next === '*' || next === '?' || next === '+' || next === '{') break;
    out += lit;
    i += width;
  }
  return out;
}
