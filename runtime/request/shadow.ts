/**
 * The shadow decision (docs/running.md "Shadow plans"): `svc run --shadow` holds a candidate plan
 * beside the enforced one; every request the enforced plan decided is decided again by the
 * candidate's route matching and policy programs, on the same request and identity, and told apart
 * from the enforced decision here. Only the enforced decision acts: this file returns a description
 * of the difference (for the access line's `shadow` field and `svc_shadow_decisions_total`), never a
 * decision, and never throws into the request.
 *
 * What counts as a difference, first match wins:
 *
 *   1. `allow_to_deny` / `deny_to_allow`: the request would lose or gain access (allowed: forwarded,
 *      redirected, or svc's own endpoint; anything else is no access: 403, 401 or sign-in, 404, 400);
 *   2. `outcome_changed`: both refuse (or both allow) but differently (a sign-in instead of a 403, a
 *      450 instead of a 403, a redirect instead of a forward);
 *   3. `route_changed`: the same outcome from another route (told by the route's stable `id`);
 *   4. `upstream_changed`: the same route, sent elsewhere (its `to` list and weights, or a redirect's
 *      location).
 *
 * Reasons of an allowed request are not compared (the gate does not compute them).
 */
import type { Route } from '../../compiler/plan/types.ts';
import type { Decision } from '../core/types.ts';
import type { PlanIndex } from '../plan/index.ts';
import type { Canonical, Ruling } from './decide.ts';

/** How the candidate's decision differs from the enforced one (the metric's `outcome` label). */
export type ShadowChange = 'allow_to_deny' | 'deny_to_allow' | 'outcome_changed' | 'route_changed' | 'upstream_changed';

/** What the access line's `shadow` field says: the candidate's decision, where it differs. */
export interface ShadowDifference {
  readonly change: ShadowChange;
  /** The candidate's outcome (`allow`, `deny`, `unauthenticated`, `not_found`, …). */
  readonly outcome: string;
  /** The candidate's route (`name`, else its stable id); absent when it matched none. */
  readonly route?: string | undefined;
  /** The candidate's reason codes, when it gave any. */
  readonly reasons?: readonly string[] | undefined;
}

/** The candidate plan in service beside the enforced one (a generation's `shadow` part). */
export interface ShadowPlan {
  readonly index: PlanIndex;
  readonly checksum: string;
  /** Told every request the candidate decides differently: its route label and the change. */
  readonly differed: (route: string, change: ShadowChange) => void;
  /** Told when the shadow step threw (a bug in svc): counted, and logged at most once a minute. */
  readonly failed: (e: unknown) => void;
}

/** A decision of either form: the gate's ruling or a completed decision (forward-auth). */
type Decided = Ruling | Decision;

/**
 * Decides the request again with the candidate (`decideCandidate`, given the candidate's index) and
 * compares: the difference, or undefined when the candidate decides alike (nothing is counted then).
 * Never throws: a failure is the shadow's own (`failed`), and the request is served as if no shadow
 * were there.
 */
export function shadowDifference(shadow: ShadowPlan, enforcedIndex: PlanIndex, enforced: Decided, decideCandidate: (index: PlanIndex) => Decided): ShadowDifference | undefined {
  try {
    const candidate = decideCandidate(shadow.index);
    const d = compareDecisions(enforcedIndex, enforced, shadow.index, candidate);
    if (d !== undefined) shadow.differed(routeLabelOf(enforcedIndex, enforced) ?? routeLabelOf(shadow.index, candidate) ?? '(none)', d.change);
    return d;
  } catch (e) {
    shadow.failed(e);
    return undefined;
  }
}

/**
 * The enforced plan's canonical form of a request when it does not depend on the plan (the strict
 * form, which every plan keeps alike), for the candidate to reuse; else undefined, and the
 * candidate normalizes the request itself (its encoded-path and path-parameter opt-ins may differ).
 */
export function planIndependent(c: Canonical): Canonical | undefined {
  return c.ok && !c.rawForm && !c.pathParameters ? c : undefined;
}

/** The difference between the enforced decision and the candidate's (see the file comment); undefined when alike. */
export function compareDecisions(enforcedIndex: PlanIndex, enforced: Decided, candidateIndex: PlanIndex, candidate: Decided): ShadowDifference | undefined {
  const change = changeOf(enforcedIndex, enforced, candidateIndex, candidate);
  if (change === undefined) return undefined;
  // One object of one shape; an absent field is undefined, which the access line leaves out.
  return {
    change,
    outcome: outcomeOf(candidate),
    route: 'route' in candidate ? (candidate.route.name ?? candidate.route.id) : undefined,
    reasons: candidate.reasons.length > 0 ? candidate.reasons : undefined,
  };
}

function changeOf(enforcedIndex: PlanIndex, e: Decided, candidateIndex: PlanIndex, c: Decided): ShadowChange | undefined {
  const allowedBefore = allowed(e);
  if (allowedBefore !== allowed(c)) return allowedBefore ? 'allow_to_deny' : 'deny_to_allow';
  if (outcomeOf(e) !== outcomeOf(c) || e.status !== c.status) return 'outcome_changed';
  const er = 'route' in e ? e.route.id : undefined;
  const cr = 'route' in c ? c.route.id : undefined;
  if (er !== cr) return 'route_changed';
  if (destination(enforcedIndex, e) !== destination(candidateIndex, c)) return 'upstream_changed';
  return undefined;
}

/** The request gets through: forwarded, redirected, or answered by svc's own endpoint. */
function allowed(d: Decided): boolean {
  return d.outcome === 'forward' || d.outcome === 'allow' || d.outcome === 'redirect' || d.outcome === 'internal';
}

/** The outcome as the access line names it (a ruling's `forward` is `allow`). */
function outcomeOf(d: Decided): string {
  return d.outcome === 'forward' ? 'allow' : d.outcome;
}

/** Where an allowed decision sends the request: the route's upstreams, a redirect's location. */
function destination(index: PlanIndex, d: Decided): string | undefined {
  if (d.outcome === 'redirect') return d.location;
  if (d.outcome !== 'forward' && d.outcome !== 'allow') return undefined;
  const route = index.routes[d.route.index]?.route;
  return route === undefined ? undefined : upstreamsKey(route);
}

/** A route's `to` list and weights as one string, made once per route object. */
function upstreamsKey(route: Route): string {
  let key = keys.get(route);
  if (key === undefined) {
    key = route.action.kind === 'forward' ? route.action.upstreams.map((u) => `${u.url} ${u.weight}`).join(',') : '';
    keys.set(route, key);
  }
  return key;
}
const keys = new WeakMap<Route, string>();

/** The metric's route label (as `svc_requests_total`'s: the `name`, else the index) of a decision's route. */
function routeLabelOf(index: PlanIndex, d: Decided): string | undefined {
  if (!('route' in d)) return undefined;
  return index.routes[d.route.index]?.route.name ?? String(d.route.index);
}
