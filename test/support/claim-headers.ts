/**
 * The runtime's upstream request as the decision tests compare it with the reference interpreter's:
 * the decision's headers plus the claim headers the identity step adds after the decision
 * (runtime/authn/identity-headers.ts), for an allowed request of a signed-in user on a route with
 * `pass_identity_headers`.
 */
import type { Decision, Identity } from '../../runtime/core/types.ts';
import type { PlanIndex } from '../../runtime/plan/index.ts';
import { claimHeaders } from '../../runtime/authn/identity-headers.ts';

export function withClaimHeaders<D extends Decision>(index: PlanIndex, decision: D, identity: Identity | null): D {
  if (decision.outcome !== 'allow' || identity === null || !index.body.routes[decision.route.index]!.passIdentityHeaders) return decision;
  claimHeaders(index.claimHeaders, identity, decision.upstream.headers as Record<string, string>);
  return decision;
}
