/**
 * The access delta: for each added, removed or re-policied route, which identity classes gain or
 * lose access, found by evaluating both policies with the runtime's own policy programs
 * (runtime/policy/program.ts) over representative identities and requests (probes.ts). Using the
 * runtime's evaluator means the diff reports what the proxy will actually decide.
 */
import type { PolicyIR, Route } from '../../compiler/plan/types.ts';
import { compilePolicy } from '../../runtime/policy/program.ts';
import type { Verdict } from '../../runtime/core/types.ts';
import { identityProbes, requestProbes, type IdentityProbe, type RequestProbe } from './probes.ts';
import { policyChange, routeRef, type RoutePairing } from './routes.ts';
import type { ClassChange, RouteAccess } from './types.ts';

/** What decides access to one side of a route: its policy, unless the route is public. */
export interface AccessSide {
  readonly policy: PolicyIR;
  readonly public: boolean;
}

/** Who gains and who loses access between two sides. */
export interface AccessDelta {
  readonly gains: readonly ClassChange[];
  readonly loses: readonly ClassChange[];
}

/** How `compareAccess` counts access and picks its probes. */
export interface CompareOptions {
  readonly granted?: (v: Verdict) => boolean;
  readonly classesFrom?: readonly PolicyIR[];
  readonly path?: string;
}

type Decide = (probe: IdentityProbe, request: RequestProbe) => Verdict | 'absent';

function decider(side: AccessSide | null): Decide {
  if (side === null) return () => 'absent';
  if (side.public) return () => 'allow';
  const program = compilePolicy(side.policy);
  return (probe, request) => program.verdict({ ...request.input, identity: probe.identity });
}

/**
 * Compares access between two sides of a route (`null`: the route does not exist on that side, so
 * nobody reaches it). A class gains access when some representative request was not allowed before
 * and is allowed now, and loses it in the opposite case; `requests` names those requests. A class
 * combining two values is reported only for requests its single-value parts do not already explain.
 * Options: `granted` says which verdicts count as access (default: `allow`; a missing route grants
 * nothing); `classesFrom` are the policies whose named values make the classes (default: both
 * sides'); `path` is the path of the default request, one the route matches (default `/`, see `pathOf`).
 */
export function compareAccess(a: AccessSide | null, b: AccessSide | null, options: CompareOptions = {}): AccessDelta {
  const granted = options.granted ?? ((v: Verdict) => v === 'allow');
  const policies = options.classesFrom ?? [a, b].filter((s): s is AccessSide => s !== null && !s.public).map((s) => s.policy);
  const requests = requestProbes(policies, options.path);
  const identities = identityProbes(policies);
  const before = decider(a);
  const after = decider(b);
  const gainsAt = new Map<string, Set<number>>();
  const losesAt = new Map<string, Set<number>>();
  for (const probe of identities) {
    const gains = new Set<number>();
    const loses = new Set<number>();
    requests.forEach((r, k) => {
      const v0 = before(probe, r);
      const v1 = after(probe, r);
      const was = v0 !== 'absent' && granted(v0);
      const is = v1 !== 'absent' && granted(v1);
      if (!was && is) gains.add(k);
      if (was && !is) loses.add(k);
    });
    gainsAt.set(probe.label, gains);
    losesAt.set(probe.label, loses);
  }
  const collect = (at: Map<string, Set<number>>): ClassChange[] => {
    const out: ClassChange[] = [];
    for (const probe of identities) {
      let set = at.get(probe.label) ?? new Set<number>();
      if (probe.parts.length > 1) {
        const explained = probe.parts.map((p) => at.get(p) ?? new Set<number>());
        set = new Set([...set].filter((k) => !explained.some((e) => e.has(k))));
      }
      if (set.size === 0) continue;
      const ks = [...set].sort((x, y) => x - y);
      out.push({ identity: probe.label, all: set.size === requests.length, requests: ks.map((k) => requests[k]!.label) });
    }
    return out;
  };
  return { gains: collect(gainsAt), loses: collect(losesAt) };
}

function sideOf(r: Route): AccessSide {
  return { policy: r.policy, public: r.public };
}

/** A path the route's matcher accepts, for the default request: its path or prefix, else `/`. */
export function pathOf(r: Route): string {
  const m = r.match;
  const p = m.kind === 'path' ? m.path : m.kind === 'prefix' ? m.prefix : '/';
  return p.startsWith('/') ? p : '/';
}

/**
 * The access delta of every route whose access may have changed: paired routes whose policy or
 * `public` changed, added routes (compared with "no route") and removed routes (compared to "no
 * route"). Routes with no class gaining or losing are left out. Order: new-plan order, then removed
 * routes in old-plan order.
 */
export function routeAccess(pairing: RoutePairing): RouteAccess[] {
  const byNewIndex: { index: number; entry: RouteAccess }[] = [];
  for (const p of pairing.pairs) {
    if (p.old.public === p.new.public && !policyChange(p.old, p.new)) continue;
    const d = compareAccess(sideOf(p.old), sideOf(p.new), { path: pathOf(p.new) });
    byNewIndex.push({ index: p.new.index, entry: { route: routeRef(p.new), status: 'changed', ...d } });
  }
  for (const r of pairing.added) {
    byNewIndex.push({ index: r.index, entry: { route: routeRef(r), status: 'added', ...compareAccess(null, sideOf(r), { path: pathOf(r) }) } });
  }
  const removed = pairing.removed.map((r): RouteAccess => ({ route: routeRef(r), status: 'removed', ...compareAccess(sideOf(r), null, { path: pathOf(r) }) }));
  return [...byNewIndex.sort((x, y) => x.index - y.index).map((x) => x.entry), ...removed].filter((e) => e.gains.length > 0 || e.loses.length > 0);
}

/** How many requests a description names before "and N more". */
const SHOWN_REQUESTS = 3;

/** Describes a class change for people: `group admins`, or `anonymous (for DELETE /, GET /admin)`. */
export function describeClassChange(c: ClassChange): string {
  if (c.all) return c.identity;
  const shown = c.requests.slice(0, SHOWN_REQUESTS).join(', ');
  const more = c.requests.length > SHOWN_REQUESTS ? `, and ${c.requests.length - SHOWN_REQUESTS} more` : '';
  return `${c.identity} (for ${shown}${more})`;
}
