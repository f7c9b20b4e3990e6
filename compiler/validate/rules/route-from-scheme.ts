import { RouteFromScheme } from '../../diagnostics/codes/routes.ts';
import type { ValidationRule } from '../rule.ts';
import { fieldPath, fieldSpan, fromUrlOf } from './helpers.ts';

/**
 * `route-from-scheme`: a route's `from` must be `https` or `tcp+https` (docs/architecture.md §3). Lowering
 * maps any other scheme to `https` so later rules still see the route; this rule is what rejects it.
 */
export const routeFromScheme: ValidationRule = {
  reports: [RouteFromScheme],
  check(input, r) {
    for (const route of input.routes) {
      const parsed = fromUrlOf(route);
      if (!parsed) continue;
      const { from, url } = parsed;
      const scheme = url.scheme;
      if (scheme !== 'https' && scheme !== 'tcp+https') {
        r.report(RouteFromScheme, fieldSpan(input, route, 'from'), { from, scheme }, fieldPath(route, 'from'));
      }
    }
  },
};
