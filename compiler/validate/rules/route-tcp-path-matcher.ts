import { RouteTcpPathMatcher } from '../../diagnostics/codes/routes.ts';
import type { ValidationRule } from '../rule.ts';
import { fieldKeySpan, fieldPath, isTcpRoute } from './helpers.ts';

/** Route fields that act on the HTTP path or answer with an HTTP redirect. */
const HTTP_ONLY = [
  'path', 'prefix', 'regex', 'prefix_rewrite', 'regex_rewrite_pattern', 'regex_rewrite_substitution',
  'host_path_regex_rewrite_pattern', 'host_path_regex_rewrite_substitution', 'redirect',
] as const;

/**
 * `route-tcp-path-matcher`: a `tcp+https` route tunnels a byte stream, so path matchers, path
 * rewrites and redirects cannot apply. One report per such field, at its key.
 */
export const routeTcpPathMatcher: ValidationRule = {
  reports: [RouteTcpPathMatcher],
  check(input, r) {
    for (const route of input.routes) {
      if (!isTcpRoute(route)) continue;
      for (const field of HTTP_ONLY) {
        if (route.raw[field] === undefined) continue;
        r.report(RouteTcpPathMatcher, fieldKeySpan(input, route, field), { field }, fieldPath(route, field));
      }
    }
  },
};
