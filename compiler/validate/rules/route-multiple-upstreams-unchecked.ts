import { RouteMultipleUpstreamsUnchecked } from '../../diagnostics/codes/routes.ts';
import type { ValidationRule } from '../rule.ts';
import { fieldPath, fieldSpan, isGiven } from './helpers.ts';

/**
 * `route-multiple-upstreams-unchecked` (warning): a route balancing over two or more `to` URLs
 * without `health_checks` or `outlier_detection` keeps sending a dead upstream its share
 * (docs/running.md "Load balancing and health"). Reported at `to`.
 */
export const routeMultipleUpstreamsUnchecked: ValidationRule = {
  reports: [RouteMultipleUpstreamsUnchecked],
  check(input, r) {
    for (const route of input.routes) {
      const to = route.raw['to'];
      if (!Array.isArray(to) || to.length < 2 || route.raw['redirect'] !== undefined) continue;
      if (isGiven(route.raw, 'health_checks') || route.raw['outlier_detection'] !== undefined) continue;
      r.report(RouteMultipleUpstreamsUnchecked, fieldSpan(input, route, 'to'), {}, fieldPath(route, 'to'));
    }
  },
};
