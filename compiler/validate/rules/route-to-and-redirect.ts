import { RouteToAndRedirect } from '../../diagnostics/codes/routes.ts';
import type { ValidationRule } from '../rule.ts';
import { fieldKeySpan, fieldPath, isGiven } from './helpers.ts';

/** `route-to-and-redirect`: `to` and `redirect` exclude each other; located at the `redirect` key. */
export const routeToAndRedirect: ValidationRule = {
  reports: [RouteToAndRedirect],
  check(input, r) {
    for (const route of input.routes) {
      if (isGiven(route.raw, 'to') && route.raw['redirect'] !== undefined) {
        r.report(RouteToAndRedirect, fieldKeySpan(input, route, 'redirect'), {}, fieldPath(route, 'redirect'));
      }
    }
  },
};
