import { RouteRedirectEmpty } from '../../diagnostics/codes/routes.ts';
import type { ValidationRule } from '../rule.ts';
import { fieldKeySpan, fieldPath, isGiven, mapField } from './helpers.ts';

/**
 * `route-redirect-empty`: a `redirect` that changes none of scheme, host, port, path or query
 * (`response_code` alone changes nothing) would send the client back to the same URL forever.
 * Reported at the `redirect` key.
 */
export const routeRedirectEmpty: ValidationRule = {
  reports: [RouteRedirectEmpty],
  check(input, r) {
    for (const route of input.routes) {
      const red = mapField(route.raw, 'redirect');
      if (!red) continue;
      const changes =
        red['https_redirect'] === true ||
        red['strip_query'] === true ||
        typeof red['port_redirect'] === 'number' ||
        ['scheme_redirect', 'host_redirect', 'path_redirect', 'prefix_rewrite'].some((f) => isGiven(red, f));
      if (!changes) r.report(RouteRedirectEmpty, fieldKeySpan(input, route, 'redirect'), {}, fieldPath(route, 'redirect'));
    }
  },
};
