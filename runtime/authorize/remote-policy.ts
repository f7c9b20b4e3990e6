/**
 * Deciding with the authorize service (the proxy role), for every caller of the decision core that
 * serves requests: the gate (every way in) and forward auth. The core stays pure: it is run with a
 * policy oracle answering from the decision cache; on a miss the answer is a placeholder, the
 * service is asked, and the core is run again with its answer (the placeholder decision is only
 * used to name the route of a 503).
 */
import type { PolicyOracle } from '../request/decide.ts';
import type { Decision } from '../core/types.ts';
import type { PolicyAnswer } from './decision-cache.ts';
import { AuthorizeUnavailable } from './authorize-unavailable.ts';
import type { PolicyQuestion, RemoteAuthorizer } from './remote-authorizer.ts';
import type { PlanRef } from './routes-checksum.ts';

/** The placeholder verdict while the service is asked: never acted on (a deny picks no upstream). */
const PENDING: PolicyAnswer = { verdict: 'deny', reasons: ['authorize-pending'] };

/**
 * `decideWith` run with the authorize service's verdicts: at once when the cache answers (or no
 * policy was needed), else once the service answered; `onUnavailable` gets the placeholder result
 * when it could not answer (the caller fails closed).
 */
export function decideWithAuthorizer<T>(authorizer: RemoteAuthorizer, sessionId: string, plan: PlanRef, decideWith: (policy: PolicyOracle) => T, onUnavailable: (placeholder: T, err: unknown) => T): T | Promise<T> {
  let asked: PolicyQuestion | undefined;
  const first = decideWith((r, input) => {
    const q: PolicyQuestion = { route: r.route, routeIndex: r.ref.index, input, sessionId };
    const hit = authorizer.cached(q);
    if (hit !== undefined) return hit;
    asked = q;
    return PENDING;
  });
  if (asked === undefined) return first;
  return authorizer.check(asked, plan).then(
    (answer) => decideWith(() => answer),
    (err: unknown) => onUnavailable(first, err),
  );
}

/**
 * The decision when the authorize service could not decide (unreachable, another plan): 503 with
 * the problem as its reason, for the route the request reached; never forwarded, never a sign-in.
 */
export function authorizeUnavailableDecision(placeholder: Decision, err: unknown): Decision {
  if (!('route' in placeholder)) return placeholder;
  const problem = err instanceof AuthorizeUnavailable ? err.problem : 'authorize-unavailable';
  return { outcome: 'unavailable', status: 503, route: placeholder.route, reasons: [problem] };
}
