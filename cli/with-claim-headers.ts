/**
 * What `svc explain` and `svc test` show of an allowed request's upstream headers: the decision's,
 * plus the claim headers the proxy's identity step adds after the decision
 * (runtime/authn/identity-headers.ts) for a signed-in user on a route with `pass_identity_headers`.
 */
import { claimHeaders } from '../runtime/authn/identity-headers.ts';
import type { Identity } from '../runtime/core/types.ts';
import type { PlanIndex } from '../runtime/plan/index.ts';
import type { DecisionExplanation } from '../runtime/request/decide.ts';

export function withClaimHeaders(index: PlanIndex, x: DecisionExplanation, identity: Identity | null): DecisionExplanation {
  const d = x.decision;
  if (d.outcome !== 'allow' || identity === null || !index.body.routes[d.route.index]!.passIdentityHeaders) return x;
  claimHeaders(index.claimHeaders, identity, d.upstream.headers as Record<string, string>);
  return x;
}
