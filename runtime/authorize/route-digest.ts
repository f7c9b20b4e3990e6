/**
 * A route's digest: the hex SHA-256 of its canonical JSON (compiler/plan/canonical-json.ts). A proxy
 * names a route to the authorize service by index and digest; equal digests mean the same route
 * with the same policy, whatever else differs between the two plans.
 */
import { createHash } from 'node:crypto';
import type { Route } from '../../compiler/plan/types.ts';
import { canonicalJson } from '../../compiler/plan/canonical-json.ts';

const digests = new WeakMap<Route, string>();

/** The digest of `route` (computed once per route object: plans are frozen). */
export function routeDigest(route: Route): string {
  let d = digests.get(route);
  if (d === undefined) {
    d = createHash('sha256').update(canonicalJson(route)).digest('hex');
    digests.set(route, d);
  }
  return d;
}
