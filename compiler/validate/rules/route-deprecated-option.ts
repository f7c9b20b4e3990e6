import { RouteDeprecatedOption } from '../../diagnostics/codes/routes.ts';
import type { ValidationRule } from '../rule.ts';
import { fieldKeySpan, fieldPath } from './helpers.ts';

/**
 * The route options documented as deprecated (docs/policy.md "Legacy route options"): the list-style rules of the old `policy` key.
 * `allow_public_unauthenticated_access`, `allow_any_authenticated_user` and `cors_allow_preflight`
 * are not marked deprecated (route-without-policy even recommends the first), so they
 * are not reported.
 */
export const DEPRECATED_ROUTE_OPTIONS = ['allowed_users', 'allowed_domains', 'allowed_groups', 'allowed_idp_claims'] as const;

/** `route-deprecated-option` (warning): one report per deprecated option a route uses, at its key. */
export const routeDeprecatedOption: ValidationRule = {
  reports: [RouteDeprecatedOption],
  check(input, r) {
    for (const route of input.routes) {
      for (const field of DEPRECATED_ROUTE_OPTIONS) {
        if (route.raw[field] === undefined) continue;
        r.report(RouteDeprecatedOption, fieldKeySpan(input, route, field), { field }, fieldPath(route, field));
      }
    }
  },
};
