/**
 * The key paths of `.properties` files: how a flat key names a place in the nested configuration.
 *
 * Grammar (on the key after escapes are decoded):
 * ```
 * path    = name { "." name | "[" index "]" | "[" quoted "]" }
 * name    = one or more characters other than ".", "[" and "]"
 * index   = "0" | digit1-9 { digit }          (a list item)
 * quoted  = a JSON string literal              (a map key that may hold ".", "[" or "]")
 * ```
 * A dot always separates map keys, so `set_response_headers.X-Frame-Options` is the header
 * `X-Frame-Options` (header names hold dashes, never dots) and
 * `allowed_idp_claims.org.team=a` nests like the YAML `allowed_idp_claims: {org: {team: a}}`.
 * A key that must hold a dot is quoted: `allowed_idp_claims["https://example.com/roles"][0]=admin`.
 */

/** One step of a key path: a map key or a list index, with its offsets in the decoded key. */
export type PathSegment =
  | { readonly kind: 'name'; readonly name: string; readonly start: number; readonly end: number }
  | { readonly kind: 'index'; readonly index: number; readonly start: number; readonly end: number };

export type ParsedPath = { readonly ok: true; readonly segments: readonly PathSegment[] } | { readonly ok: false; readonly problem: string };

/** List indices above this are refused: no configuration lists that many items in one file. */
export const MAX_INDEX = 100_000;

/** Splits a decoded `.properties` key into its path (see the module comment for the grammar). */
export function parseKeyPath(key: string): ParsedPath {
  const segments: PathSegment[] = [];
  let i = 0;
  const name = (): PathSegment | string => {
    const start = i;
    while (i < key.length && key[i] !== '.' && key[i] !== '[' && key[i] !== ']') i++;
    if (i === start) return i >= key.length ? 'the key ends with `.`' : `expected a name at \`${key[i]}\``;
    return { kind: 'name', name: key.slice(start, i), start, end: i };
  };
  if (key === '') return { ok: false, problem: 'the key is empty' };
  const first = name();
  if (typeof first === 'string') return { ok: false, problem: key[0] === '[' ? 'the key must start with a name' : first };
  segments.push(first);
  while (i < key.length) {
    const c = key[i];
    if (c === '.') {
      i++;
      const seg = name();
      if (typeof seg === 'string') return { ok: false, problem: seg };
      segments.push(seg);
    } else if (c === '[') {
      const start = i;
      const close = bracketEnd(key, i + 1);
      if (close < 0) return { ok: false, problem: 'missing `]`' };
      const inner = key.slice(i + 1, close);
      i = close + 1;
      if (inner.startsWith('"')) {
        let decoded: unknown;
        try {
          decoded = JSON.parse(inner);
        } catch {
          decoded = undefined;
        }
        if (typeof decoded !== 'string' || decoded === '') return { ok: false, problem: `${'`'}[${inner}]${'`'} is not a quoted name` };
        segments.push({ kind: 'name', name: decoded, start, end: i });
      } else {
        if (!/^(0|[1-9]\d*)$/.test(inner)) return { ok: false, problem: `list index \`[${inner}]\` must be a number without leading zeros` };
        const index = Number(inner);
        if (index > MAX_INDEX) return { ok: false, problem: `list index ${inner} is larger than ${MAX_INDEX}` };
        segments.push({ kind: 'index', index, start, end: i });
      }
    } else {
      return { ok: false, problem: `unexpected \`${c ?? ''}\`` };
    }
  }
  return { ok: true, segments };
}

/** The index of the `]` closing a bracket whose content starts at `from` (quoted content may hold `]`). */
function bracketEnd(key: string, from: number): number {
  if (key[from] !== '"') return key.indexOf(']', from);
  for (let i = from + 1; i < key.length; i++) {
    if (key[i] === '\\') i++;
    else if (key[i] === '"') return key[i + 1] === ']' ? i + 1 : -1;
  }
  return -1;
}

/** A path as text, for messages: `routes[0].to[1]`. */
export function formatPath(segments: readonly PathSegment[]): string {
  let out = '';
  for (const s of segments) {
    if (s.kind === 'index') out += `[${s.index}]`;
    else if (/^[^.[\]]+$/.test(s.name)) out += out === '' ? s.name : `.${s.name}`;
    else out += `[${JSON.stringify(s.name)}]`;
  }
  return out;
}
