import { RouteAnyUserWithAllowList } from '../../diagnostics/codes/routes.ts';
import type { ValidationRule } from '../rule.ts';
import { fieldKeySpan, fieldList, fieldPath, isAllowListGiven, writtenOrder } from './helpers.ts';

const ALLOW_LISTS = ['allowed_users', 'allowed_domains', 'allowed_groups', 'allowed_idp_claims'] as const;

/**
 * `route-any-user-with-allow-list`: `allow_any_authenticated_user: true` beside an
 * `allowed_*` list. Any signed-in user passes, so the list means nothing and hides a mistake (the
 * established proxy refuses it too). One report per route, at the first allow-list written. Public
 * routes are left to `route-public-with-policy`, which already names every field.
 */
export const routeAnyUserWithAllowList: ValidationRule = {
  reports: [RouteAnyUserWithAllowList],
  check(input, r) {
    for (const route of input.routes) {
      if (route.raw['allow_any_authenticated_user'] !== true || route.raw['allow_public_unauthenticated_access'] === true) continue;
      const lists = writtenOrder(input, route, ALLOW_LISTS).filter((f) => isAllowListGiven(route.raw, f));
      if (lists.length === 0) continue;
      const first = lists[0]!;
      r.report(RouteAnyUserWithAllowList, fieldKeySpan(input, route, first), { fields: fieldList(lists) }, fieldPath(route, first));
    }
  },
};
