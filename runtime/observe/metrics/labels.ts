/**
 * Bounded label values (cardinality): a series per route, method and status class, never per raw
 * host, path or header of a request. An operator's config bounds the route label; the rest are
 * fixed sets.
 */
import type { Route } from '../../../compiler/plan/types.ts';

/** The route label of a request that matched no route (or was refused before routing). */
export const NO_ROUTE = '(none)';

/** A route's label: its `name` (`dp_cluster_name`, docs/observability.md "Metric reference"), else its position in the route list. */
export function routeLabel(route: Pick<Route, 'name' | 'index'> | undefined): string {
  if (route === undefined) return NO_ROUTE;
  return route.name ?? String(route.index);
}

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH']);

/** The method label: one of the RFC 9110 methods and PATCH, else `other` (methods are client text). */
export function methodLabel(method: string | undefined): string {
  return method !== undefined && METHODS.has(method) ? method : 'other';
}

/**
 * The status-class label: `2xx` … `5xx` (`1xx` for a switched protocol), or `aborted` when the
 * exchange ended without a complete response (the client went away, the upstream reset).
 */
export function statusClass(status: number | undefined): string {
  if (status === undefined || !Number.isInteger(status) || status < 100 || status > 599) return 'aborted';
  return `${Math.floor(status / 100)}xx`;
}

/** The `service` label (docs/observability.md), shared with the logs and traces. */
export { serviceLabel } from '../service-label.ts';
