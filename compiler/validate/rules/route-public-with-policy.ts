import { RoutePublicWithPolicy } from '../../diagnostics/codes/routes.ts';
import type { ValidationRule } from '../rule.ts';
import { fieldKeySpan, fieldList, fieldPath, isAllowListGiven, writtenOrder } from './helpers.ts';

const ALLOW_FIELDS = ['policy', 'allowed_users', 'allowed_domains', 'allowed_groups', 'allowed_idp_claims', 'allow_any_authenticated_user'] as const;

/**
 * `route-public-with-policy`: a public route (`allow_public_unauthenticated_access: true`) that
 * also says who may pass (a `policy`, an `allowed_*` list, `allow_any_authenticated_user: true`).
 * The public flag would make the rest meaningless, which hides a mistake (docs/architecture.md §3). One report
 * per route, at the first such field written.
 */
export const routePublicWithPolicy: ValidationRule = {
  reports: [RoutePublicWithPolicy],
  check(input, r) {
    for (const route of input.routes) {
      if (route.raw['allow_public_unauthenticated_access'] !== true) continue;
      const extra = writtenOrder(input, route, ALLOW_FIELDS).filter((f) =>
        f === 'allow_any_authenticated_user' ? route.raw[f] === true : isAllowListGiven(route.raw, f),
      );
      if (extra.length === 0) continue;
      const first = extra[0]!;
      r.report(RoutePublicWithPolicy, fieldKeySpan(input, route, first), { fields: fieldList(extra) }, fieldPath(route, first));
    }
  },
};
