import { RouteWithoutPolicy } from '../../diagnostics/codes/routes.ts';
import type { ValidationRule } from '../rule.ts';
import { fieldPath, fieldSpan, isGiven } from './helpers.ts';

/**
 * `route-without-policy` (warning): a lowered route whose policy has no rule at all (no `policy`,
 * no allow option) denies every request. Not reported when a `policy` is written but did not
 * lower (its own diagnostics say why). Located at the route's `from`.
 */
export const routeWithoutPolicy: ValidationRule = {
  reports: [RouteWithoutPolicy],
  check(input, r) {
    for (const route of input.routes) {
      if (!route.lowered || route.lowered.public || route.lowered.policy.rules.length > 0) continue;
      if (isGiven(route.raw, 'policy')) continue;
      r.report(RouteWithoutPolicy, fieldSpan(input, route, 'from'), {}, fieldPath(route, 'from'));
    }
  },
};
