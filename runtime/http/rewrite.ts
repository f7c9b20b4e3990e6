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

/** Tells whether `path` matches an RE2 source as a whole (implicitly anchored; docs/decisions.md §3). */
export function compileWholeMatch(source: string): (path: string) => boolean {
  const re = RE2JS.compile(source);
  return (path) => re.matches(path);
}
