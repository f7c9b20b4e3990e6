import { RouteNoAction } from '../../diagnostics/codes/routes.ts';
import type { ValidationRule } from '../rule.ts';
import { fieldSpan, isGiven } from './helpers.ts';

/**
 * `route-no-action`: a route needs `to` or `redirect` (docs/configuration.md "Route fields"). Located at the empty `to` when
 * one is written (`to: []`), else at the route's `from`.
 */
export const routeNoAction: ValidationRule = {
  reports: [RouteNoAction],
  check(input, r) {
    for (const route of input.routes) {
      if (isGiven(route.raw, 'to') || route.raw['redirect'] !== undefined) continue;
      const where = route.raw['to'] !== undefined ? 'to' : 'from';
      r.report(RouteNoAction, fieldSpan(input, route, where), {}, route.path);
    }
  },
};
