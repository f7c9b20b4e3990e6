import { RoutePrefixRewriteWithoutPrefix } from '../../diagnostics/codes/routes.ts';
import type { ValidationRule } from '../rule.ts';
import { fieldKeySpan, fieldPath, isTcpRoute } from './helpers.ts';

/**
 * `route-prefix-rewrite-without-match` (warning): `prefix_rewrite` without `prefix` or `path`
 * replaces only the leading `/`, which is rarely what was meant. Not reported on `tcp+https`
 * routes (route-tcp-path-matcher already rejects the field there).
 */
export const routePrefixRewriteWithoutMatch: ValidationRule = {
  reports: [RoutePrefixRewriteWithoutPrefix],
  check(input, r) {
    for (const route of input.routes) {
      if (typeof route.raw['prefix_rewrite'] !== 'string' || isTcpRoute(route)) continue;
      if (typeof route.raw['prefix'] === 'string' || typeof route.raw['path'] === 'string') continue;
      r.report(RoutePrefixRewriteWithoutPrefix, fieldKeySpan(input, route, 'prefix_rewrite'), {}, fieldPath(route, 'prefix_rewrite'));
    }
  },
};
