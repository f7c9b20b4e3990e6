import { GroupsWithoutServiceAccount } from '../../diagnostics/codes/settings.ts';
import { usesGroups } from '../../policy/ir.ts';
import type { ValidationRule } from '../rule.ts';
import { fieldKeySpan, fieldPath, fieldSpan, isGiven } from './helpers.ts';

/**
 * `groups-without-service-account` (warning): a route policy uses `groups` but
 * `idp_service_account` is not set, so group data is missing and group rules never match
 * (docs/authentication.md). Not reported for the generic `oidc` provider, which may send groups as a claim and
 * then needs no service account (docs/authentication.md), nor when no `idp_provider` is configured here (a split
 * proxy-only config). One report per route, at `allowed_groups` if it uses that, else `policy`.
 */
export const groupsWithoutServiceAccount: ValidationRule = {
  reports: [GroupsWithoutServiceAccount],
  check(input, r) {
    const provider = input.config['idp_provider'];
    if (typeof provider !== 'string' || provider === 'oidc' || isGiven(input.config, 'idp_service_account')) return;
    for (const route of input.routes) {
      if (!route.lowered || !usesGroups(route.lowered.policy)) continue;
      const legacy = isGiven(route.raw, 'allowed_groups');
      const at = legacy ? fieldKeySpan(input, route, 'allowed_groups') : fieldSpan(input, route, 'policy');
      r.report(GroupsWithoutServiceAccount, at, { where: `route \`${route.path}\`` }, fieldPath(route, legacy ? 'allowed_groups' : 'policy'));
    }
  },
};
