/**
 * The canonical request (docs/architecture.md §2 invariant 2): the one normalized form of a request's host and
 * target that route matching, policy and forwarding all use. Computed once at the door; a target
 * that could be read two ways is refused (400) rather than guessed at.
 *
 * Host: lower-cased; the scheme's default port is dropped; other ports kept (`host:port`).
 * Path, in this order:
 * 1. the raw target may hold only visible ASCII: control characters, spaces, non-ASCII, a raw `#`
 *    (docs/security.md S09) or a raw `\` are refused;
 * 2. each `%XX` is checked: malformed escapes are refused; escapes of `/`, `\`, NUL, `;`, `?`, `#`
 *    (S07) and of any control character are refused; escapes of unreserved characters
 *    (`A-Z a-z 0-9 - . _ ~`) are decoded (so `%2e%2e` is `..`, S06); every other escape is kept with
 *    upper-case hex;
 *    a raw `;` in the path (a path parameter, `/admin;x`, `/..;/admin`, which Java and some Node
 *    servers strip before routing) is refused too (docs/decisions.md §1);
 * 3. runs of `/` are merged into one (S08);
 * 4. dot segments are removed as RFC 3986 §5.2.4 does; `..` never climbs above the root.
 * The query is kept verbatim (after the checks of step 1 and the escape checks of step 2 minus the
 * refusals of `/`, `?` and `;`, which are ordinary in queries); path matchers never see it (S10).
 */

import type { TargetProblem } from '../core/types.ts';
export type { TargetProblem };

export interface CanonicalRequest {
  /** Lower-case host name or bracketed IPv6 literal, without the port. */
  readonly hostname: string;
  /** The port when it is not the scheme's default, else `undefined`. */
  readonly port: number | undefined;
  /** `hostname` or `hostname:port`: the key of the host table. */
  readonly host: string;
  /** The normalized path: starts with `/`, no dot segments, no empty segments. */
  readonly path: string;
  /** The raw query without its `?`; `''` when there is none (or it is empty). */
  readonly query: string;
}

export type CanonicalResult = { readonly ok: true; readonly request: CanonicalRequest } | { readonly ok: false; readonly problem: TargetProblem };

const DEFAULT_PORT: Readonly<Record<string, number>> = { http: 80, https: 443 };

export interface CanonicalOptions {
  /**
   * Keep the escapes step 2 refuses (`%2F`, `%5C`, `%00`, `%3B`, `%3F`, `%23`, control characters)
   * verbatim, upper-case hex, instead of refusing the target: the raw form that routes with
   * `allow_encoded_path_characters` match on and forward (docs/security.md S07 opt-in). Every other step
   * is unchanged, so an escaped `/` is never a separator.
   */
  readonly keepForbiddenEscapes?: boolean;
  /**
   * Keep a raw `;` in the path instead of refusing the target: the form routes with
   * `allow_path_parameters` match on and forward (opt-in, docs/decisions.md §1).
   */
  readonly keepPathParameters?: boolean;
  /**
   * HTTP/2's `:authority`, when the request has one: then it is the request's authority, and a
   * `hostHeader` naming another host (after the normalization of the Host rules) is refused
   * (`host-conflict`, RFC 9113 §8.3.1), never read instead.
   */
  readonly authority?: string | undefined;
}

/**
 * Canonicalizes a request. `target` is the request target as received (origin-form `/p?q`, or
 * absolute-form `http://host/p?q`); `hostHeader` the Host header; `scheme` how the request came in.
 *
 * INVARIANT (one-authority): a request has exactly one authority, read from one place: an
 * absolute-form target's (RFC 9112 §3.2.2), else HTTP/2's `:authority` (`options.authority`), else
 * the Host header. A Host header beside it that names another host — or is not a valid host — is
 * refused (`host-conflict`, `host-invalid`), so no upstream or log can read a second host. The
 * values are compared after normalization (case, default port); whitespace is never trimmed.
 */
export function canonicalRequest(target: string, hostHeader: string | undefined, scheme: 'http' | 'https', options: CanonicalOptions = {}): CanonicalResult {
  let authority = options.authority ?? hostHeader;
  let rest = target;
  // Origin-form (`/…`) is nearly every request; only another first character can be absolute-form.
  const absolute = target.charCodeAt(0) === 0x2f ? null : /^https?:\/\/([^/?#]*)/i.exec(target);
  if (absolute) {
    if (options.authority !== undefined) {
      const conflict = authorityConflict(absolute[1]!, options.authority, scheme);
      if (conflict) return fail(conflict);
    }
    authority = absolute[1]!;
    rest = target.slice(absolute[0].length) || '/';
  }
  if (hostHeader !== undefined && authority !== hostHeader) {
    const conflict = authorityConflict(authority, hostHeader, scheme);
    if (conflict) return fail(conflict);
  }
  if (!rest.startsWith('/')) return fail('target-not-origin-form');
  // One scan: refusals of step 1, and whether the path is already canonical (no escape, no `//`,
  // no `.` segment), which lets the common request skip steps 2 to 4.
  let q = -1;
  let plain = true;
  const keepParameters = options.keepPathParameters === true;
  for (let i = 0; i < rest.length; i++) {
    const c = rest.charCodeAt(i);
    if (c <= 0x20 || c >= 0x7f) return fail('target-invalid-character');
    if (c === 0x23) return fail('target-fragment');
    if (c === 0x5c) return fail('target-backslash');
    if (q < 0) {
      if (c === 0x3f) q = i;
      else if (c === 0x3b && !keepParameters) return fail('target-path-parameter');
      else if (c === 0x25 || (c === 0x2f && i > 0 && rest.charCodeAt(i - 1) === 0x2f) || (c === 0x2e && rest.charCodeAt(i - 1) === 0x2f)) plain = false;
    }
  }
  const rawPath = q < 0 ? rest : rest.slice(0, q);
  const query = q < 0 ? '' : rest.slice(q + 1);

  let path = rawPath;
  if (!plain) {
    const decoded = decodePath(rawPath, options.keepForbiddenEscapes === true);
    if (typeof decoded !== 'string') return fail(decoded.problem);
    path = removeDotSegments(mergeSlashes(decoded));
  }
  if (query !== '') {
    const queryProblem = checkQueryEscapes(query);
    if (queryProblem) return fail(queryProblem);
  }

  const host = cachedHost(authority, scheme);
  if ('problem' in host) return fail(host.problem);
  return { ok: true, request: { hostname: host.hostname, port: host.port, host: host.host, path, query } };
}

/**
 * Why a second statement of the authority (`other`) cannot stand beside the request's (`authority`):
 * `host-invalid` when it is no host, `host-conflict` when it names another; undefined when both
 * normalize to the same host (or the request's own authority is invalid: that is refused later).
 */
function authorityConflict(authority: string | undefined, other: string, scheme: 'http' | 'https'): TargetProblem | undefined {
  const mine = cachedHost(authority, scheme);
  if ('problem' in mine) return undefined;
  const theirs = cachedHost(other, scheme);
  if ('problem' in theirs) return 'host-invalid';
  return mine.host === theirs.host ? undefined : 'host-conflict';
}

function fail(problem: TargetProblem): CanonicalResult {
  return { ok: false, problem };
}

const HEX = /^[0-9A-Fa-f]{2}$/;

function isUnreserved(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x2e || c === 0x5f || c === 0x7e;
}

/** Escapes refused in a path: they would let the path be read two ways (S07). */
const FORBIDDEN_IN_PATH = new Set([0x2f, 0x5c, 0x00, 0x3b, 0x3f, 0x23]);

/** Step 2 on a path: decodes unreserved escapes, upper-cases the others, refuses the dangerous ones. */
function decodePath(raw: string, keepForbidden: boolean): string | { problem: TargetProblem } {
  if (!raw.includes('%')) return raw;
  let out = '';
  for (let i = 0; i < raw.length; i++) {
    const ch = raw[i]!;
    if (ch !== '%') {
      out += ch;
      continue;
    }
    const hex = raw.slice(i + 1, i + 3);
    if (!HEX.test(hex)) return { problem: 'target-malformed-escape' };
    const code = parseInt(hex, 16);
    if (FORBIDDEN_IN_PATH.has(code) || code < 0x20 || code === 0x7f) {
      if (!keepForbidden) return { problem: 'target-forbidden-escape' };
      out += `%${hex.toUpperCase()}`;
      i += 2;
      continue;
    }
    out += isUnreserved(code) ? String.fromCharCode(code) : `%${hex.toUpperCase()}`;
    i += 2;
  }
  return out;
}

/** Step 2 on a query: malformed escapes, encoded NUL, `#`, `\` and control characters are refused. */
function checkQueryEscapes(query: string): TargetProblem | undefined {
  for (let i = query.indexOf('%'); i >= 0; i = query.indexOf('%', i + 1)) {
    const hex = query.slice(i + 1, i + 3);
    if (!HEX.test(hex)) return 'target-malformed-escape';
    const code = parseInt(hex, 16);
    if (code < 0x20 || code === 0x7f || code === 0x23 || code === 0x5c) return 'target-forbidden-escape';
  }
  return undefined;
}

function mergeSlashes(path: string): string {
  return path.replace(/\/{2,}/g, '/');
}

/** RFC 3986 §5.2.4 on a path that starts with `/` and has no empty segments. */
export function removeDotSegments(path: string): string {
  const segments = path.split('/').slice(1);
  const out: string[] = [];
  for (let i = 0; i < segments.length; i++) {
    const s = segments[i]!;
    const last = i === segments.length - 1;
    if (s === '.' || s === '..') {
      if (s === '..') out.pop();
      if (last) out.push(''); // `/a/.` and `/a/b/..` end in a directory: keep the trailing slash
      continue;
    }
    out.push(s);
  }
  return `/${out.join('/')}`;
}

/**
 * Re-normalizes a path after rewrites and the `to` join (docs/decisions.md §6 step 5, docs/architecture.md §2.2):
 * runs of `/` are merged, as the canonical request merges them; `undefined` when a segment is a dot
 * segment (`.` or `..`, a dot also written `%2E`/`%2e`), which an upstream would resolve to a path
 * other than the one svc matched and judged (docs/decisions.md §6). One scan, no allocation for a path that is
 * already normal (nearly every request).
 */
export function renormalizedPath(path: string): string | undefined {
  let merged = false;
  let start = 0; // start of the current segment (just after its `/`)
  let dots = 0; // the dots the current segment holds, while it holds nothing else; -1 once it does
  for (let i = 0; i <= path.length; i++) {
    const c = i < path.length ? path.charCodeAt(i) : 0x2f;
    if (c === 0x2f) {
      if (dots > 0 && dots <= 2) return undefined;
      if (i === start && i > 0 && i < path.length) merged = true;
      start = i + 1;
      dots = 0;
    } else if (dots < 0) continue;
    else if (c === 0x2e) dots++;
    else if (c === 0x25 && path.charCodeAt(i + 1) === 0x32 && (path.charCodeAt(i + 2) | 0x20) === 0x65) {
      dots++;
      i += 2;
    } else dots = -1;
  }
  return merged ? mergeSlashes(path) : path;
}

type HostResult = ReturnType<typeof canonicalHost>;
const hostCache = { https: new Map<string, HostResult>(), http: new Map<string, HostResult>() };
const HOST_CACHE_SIZE = 4096;

/**
 * `canonicalHost` with a small per-process memo: a server sees the same few Host values over and
 * over. Bounded (cleared when full), so arbitrary Host headers cannot grow it.
 */
function cachedHost(authority: string | undefined, scheme: 'http' | 'https'): HostResult {
  if (authority === undefined) return canonicalHost(authority, scheme);
  const cache = hostCache[scheme];
  let r = cache.get(authority);
  if (r === undefined) {
    r = canonicalHost(authority, scheme);
    if (cache.size >= HOST_CACHE_SIZE) cache.clear();
    cache.set(authority, r);
  }
  return r;
}

const REG_NAME = /^[a-z0-9\-._~!$&'()*+,;=]+$/;
const IPV6 = /^\[[0-9a-f:.]+\]$/;

/** The host part: lower-cased, port split off and dropped when it is the scheme's default. */
function canonicalHost(authority: string | undefined, scheme: 'http' | 'https'): { hostname: string; port: number | undefined; host: string } | { problem: TargetProblem } {
  if (authority === undefined || authority === '') return { problem: 'host-missing' };
  const lower = authority.toLowerCase();
  if (lower.includes('@')) return { problem: 'host-invalid' }; // userinfo has no place in a request
  const m = /^(\[[^\]]*\]|[^:]*)(?::(\d*))?$/.exec(lower);
  if (!m) return { problem: 'host-invalid' };
  const hostname = m[1]!;
  if (!(IPV6.test(hostname) || REG_NAME.test(hostname))) return { problem: 'host-invalid' };
  let port: number | undefined;
  if (m[2] !== undefined && m[2] !== '') {
    if (m[2].length > 5) return { problem: 'host-invalid' };
    port = Number(m[2]);
    if (port < 1 || port > 65535) return { problem: 'host-invalid' };
    if (port === DEFAULT_PORT[scheme]) port = undefined;
  }
  return { hostname, port, host: port === undefined ? hostname : `${hostname}:${port}` };
}
