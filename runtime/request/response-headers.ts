/**
 * Response header edits on a forwarded response (docs/decisions.md §8): `rewrite_response_headers`
 * on the upstream's headers first, then the route's `set_response_headers` merged over the global
 * ones (the plan has them merged) replace headers of the same name.
 */
import type { Route } from '../../compiler/plan/types.ts';

/** Hop-by-hop response headers: never passed from the upstream to the client. */
export const HOP_BY_HOP_RESPONSE: ReadonlySet<string> = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'http2-settings']);

/** The route's set headers with lower-case names, computed once per plan route (runs per response). */
const setEntries = new WeakMap<Route, readonly (readonly [string, string])[]>();

function setHeadersOf(route: Route): readonly (readonly [string, string])[] {
  let entries = setEntries.get(route);
  if (entries === undefined) {
    entries = Object.entries(route.responseHeaders.set).map(([name, value]) => [name.toLowerCase(), value] as const);
    setEntries.set(route, entries);
  }
  return entries;
}

/**
 * Returns the edited headers (lower-case names); the input is not modified. Names in `drop`
 * (lower-case) are left out before the edits: the hop-by-hop set of {@link responseDropSet}.
 */
export function editResponseHeaders(route: Route, headers: Readonly<Record<string, string | string[] | undefined>>, drop?: ReadonlySet<string>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined) continue;
    const lower = name.toLowerCase();
    if (drop !== undefined && drop.has(lower)) continue;
    out[lower] = value;
  }
  const rewrite = route.responseHeaders.rewrite;
  for (let i = 0; i < rewrite.length; i++) {
    const { header, prefix, value } = rewrite[i]!;
    const name = header.toLowerCase();
    const v = out[name];
    if (v === undefined) continue;
    const edit = (s: string) => (s.startsWith(prefix) ? value + s.slice(prefix.length) : s);
    out[name] = Array.isArray(v) ? v.map(edit) : edit(v);
  }
  const set = setHeadersOf(route);
  for (let i = 0; i < set.length; i++) out[set[i]![0]] = set[i]![1];
  return out;
}

/**
 * The names to drop from an upstream response with this `Connection` header: the hop-by-hop set,
 * plus every header the upstream listed in `Connection` (RFC 9110 §7.6.1).
 */
export function responseDropSet(connection: string | string[] | undefined): ReadonlySet<string> {
  if (connection === undefined || connection === 'keep-alive' || connection === 'close') return HOP_BY_HOP_RESPONSE;
  let extra: Set<string> | undefined;
  for (const part of (Array.isArray(connection) ? connection.join(',') : connection).split(',')) {
    const token = part.trim().toLowerCase();
    if (token === '' || token === 'close' || HOP_BY_HOP_RESPONSE.has(token)) continue;
    (extra ??= new Set(HOP_BY_HOP_RESPONSE)).add(token);
  }
  return extra ?? HOP_BY_HOP_RESPONSE;
}
