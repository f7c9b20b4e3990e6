import { RouteFromHasPath } from '../../diagnostics/codes/routes.ts';
import type { ValidationRule } from '../rule.ts';
import { fieldPath, fieldSpan, parseFromUrl, strField } from './helpers.ts';

/**
 * `route-from-has-path`: a route's `from` names a host (and port), nothing else. A path other than
 * `/`, a query or a fragment is an error (docs/architecture.md §3): paths are matched with `path`, `prefix`
 * or `regex`, and a path in `from` would otherwise be silently ignored.
 */
export const routeFromHasPath: ValidationRule = {
  reports: [RouteFromHasPath],
  check(input, r) {
    for (const route of input.routes) {
      const from = strField(route.raw, 'from');
      if (from === undefined) continue;
      const u = parseFromUrl(from);
      if (!u) continue; // invalid-url, reported by lowering
      const path = u.pathname !== '' && u.pathname !== '/';
      if (path || from.includes('?') || from.includes('#')) {
        r.report(RouteFromHasPath, fieldSpan(input, route, 'from'), { from }, fieldPath(route, 'from'));
      }
    }
  },
};
