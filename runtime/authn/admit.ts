/**
 * Session and decision: the part of the gate (proxy/gate.ts) that forward-auth (forward-auth.ts)
 * shares, so a request checked through a proxy in front of svc is decided exactly as svc decides
 * its own (docs/forward-auth.md). From a session lookup's answer to the decision: the route's policy
 * decided here, or by the authorize service in the proxy role (authorize/remote-policy.ts), then the
 * session store's outage rule (`withoutStore`).
 *
 * The common request stays synchronous: `then` is called at once when the session is cached and
 * the policy is decided here, after the store (or the authorize service) answers otherwise.
 */
import type { Decision } from '../core/types.ts';
import type { RemoteAuthorizer } from '../authorize/remote-authorizer.ts';
import type { PlanRef } from '../authorize/routes-checksum.ts';
import { decideWithAuthorizer } from '../authorize/remote-policy.ts';
import type { PolicyOracle, Ruling } from '../request/decide.ts';
import type { ResolvedSession } from '../sessions/session-cache.ts';
import { STORE_UNAVAILABLE, type SessionLookup } from './service.ts';

/** The reason of a 503 while the session store is unreachable. */
export const SESSION_STORE_UNAVAILABLE = 'session-store-unavailable';

/** The authorize service deciding route policies (the proxy role), and what its failure answers. */
export interface RemotePolicy<T> {
  readonly authorizer: RemoteAuthorizer;
  readonly plan: PlanRef;
  /** The answer when the authorize service could not decide, from the placeholder decided meanwhile. */
  readonly unavailable: (placeholder: T, err: unknown) => T;
}

/** How one caller decides and marks a store outage on its own result type `T`. */
export interface DecideSteps<T> {
  /** Decides the request for `session` (the route policy through `policy` when given). */
  readonly decide: (session: ResolvedSession | null, policy?: PolicyOracle) => T;
  /** The result while the session store is unreachable (`withoutStore` on its decision). */
  readonly withoutStore: (result: T) => T;
  readonly remote?: RemotePolicy<T> | undefined;
}

/**
 * Decides a request once its session lookup answers (see the file comment): `then` gets the result
 * and the session it was decided with (null when anonymous or the store was unreachable).
 * `lookedUp` is told when the lookup answered (the gate ends its span there).
 */
export function sessionAndDecision<T>(lookup: SessionLookup, steps: DecideSteps<T>, then: (result: T, session: ResolvedSession | null) => void, lookedUp?: () => void): void {
  const decideWith = (session: Awaited<SessionLookup>): void => {
    const remote = steps.remote;
    const known = session === STORE_UNAVAILABLE ? null : session;
    // All-in-one (the hot path): the core decides the policy itself, nothing allocated here.
    if (remote === undefined) return then(session === STORE_UNAVAILABLE ? steps.withoutStore(steps.decide(null)) : steps.decide(session), known);
    const finish = (r: T) => then(session === STORE_UNAVAILABLE ? steps.withoutStore(r) : r, known);
    // The proxy role: the cached verdict, else the authorize service's (remote-policy.ts).
    const r = decideWithAuthorizer(remote.authorizer, known?.record.id ?? '', remote.plan, (policy) => steps.decide(known, policy), remote.unavailable);
    if (r instanceof Promise) void r.then(finish);
    else finish(r);
  };
  if (lookup instanceof Promise)
    void lookup.then((session) => {
      lookedUp?.();
      decideWith(session);
    });
  else {
    lookedUp?.();
    decideWith(lookup);
  }
}

/**
 * A decision while the session store is unreachable: one that would need a session (sign in, or a
 * policy that refuses anonymous users) is 503 `session-store-unavailable` instead, never a sign-in
 * redirect or a 403 (the user was not signed out); anything else is unchanged.
 */
export function storeOutageDecision<D extends Decision | Ruling>(d: D): D | (Decision & { readonly outcome: 'unavailable' }) {
  if (d.outcome === 'unauthenticated' || d.outcome === 'deny') return { outcome: 'unavailable', status: 503, route: d.route, reasons: [SESSION_STORE_UNAVAILABLE] };
  return d;
}
