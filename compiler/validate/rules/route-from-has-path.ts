import { RouteFromHasPath } from '../../diagnostics/codes/routes.ts';
import type { ValidationRule } from '../rule.ts';
import { fieldPath, fieldSpan, fromUrlOf } from './helpers.ts';

/**
 * `route-from-has-path`: a route's `from` names a host (and port), nothing else. A path other than
 * `/`, a query or a fragment is an error (docs/architecture.md §3): paths are matched with `path`, `prefix`
 * or `regex`, and a path in `from` would otherwise be silently ignored.
 */
export const routeFromHasPath: ValidationRule = {
  reports: [RouteFromHasPath],
  check(input, r) {
    for (const route of input.routes) {
      const parsed = fromUrlOf(route);
      if (!parsed) continue; // invalid-url, reported by lowering
      const { from, url } = parsed;
      const path = url.pathname !== '' && url.pathname !== '/';
      if (path || from.includes('?') || from.includes('#')) {
        r.report(RouteFromHasPath, fieldSpan(input, route, 'from'), { from }, fieldPath(route, 'from'));
      }
    }
  },
};
