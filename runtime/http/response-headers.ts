/**
 * Response header edits on a forwarded response (docs/decisions.md §8): `rewrite_response_headers`
 * on the upstream's headers first, then the route's `set_response_headers` merged over the global
 * ones (the plan has them merged) replace headers of the same name.
 */
import type { Route } from '../../compiler/plan/types.ts';

/** Returns the edited headers (lower-case names); the input is not modified. */
export function editResponseHeaders(route: Route, headers: Record<string, string | string[]>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) out[name.toLowerCase()] = value;
  for (const { header, prefix, value } of route.responseHeaders.rewrite) {
    const name = header.toLowerCase();
    const v = out[name];
    if (v === undefined) continue;
    const edit = (s: string) => (s.startsWith(prefix) ? value + s.slice(prefix.length) : s);
    out[name] = Array.isArray(v) ? v.map(edit) : edit(v);
  }
  for (const [name, value] of Object.entries(route.responseHeaders.set)) out[name.toLowerCase()] = value;
  return out;
}
