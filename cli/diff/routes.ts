/**
 * Route changes: pair old and new routes, then list added, removed, moved and changed routes with
 * their field-level changes and policy text.
 */
import type { PathMatch, Route } from '../../compiler/plan/types.ts';
import { printPolicy } from '../../compiler/index.ts';
import { diffLines } from './lines.ts';
import type { PolicyChange, RouteChange, RouteRef, RouteSummary, RoutesDiff } from './types.ts';
import { configPathOf, inConfigUnits, ROUTE_KEYS } from './config-keys.ts';
import { diffValues } from './values.ts';

/** Two routes taken to be the same route in the old and the new plan. */
export interface RoutePair {
  readonly old: Route;
  readonly new: Route;
  readonly matchedBy: 'name' | 'from-and-matcher';
}

/** The result of pairing: pairs in new-plan order, unpaired routes in their plan's order. */
export interface RoutePairing {
  readonly pairs: readonly RoutePair[];
  readonly added: readonly Route[];
  readonly removed: readonly Route[];
}

/** The path matcher as text: `any`, `path /x`, `prefix /api`, `regex ^/a$`. */
export function matchText(m: PathMatch): string {
  switch (m.kind) {
    case 'any':
      return 'any';
    case 'path':
      return `path ${m.path}`;
    case 'prefix':
      return `prefix ${m.prefix}`;
    case 'regex':
      return `regex ${m.regex}`;
  }
}

/** How the diff names a route. */
export function routeRef(r: Route): RouteRef {
  const match = matchText(r.match);
  return { id: r.id, name: r.name, index: r.index, from: r.from.url, match, label: r.name ?? (r.match.kind === 'any' ? r.from.url : `${r.from.url} ${match}`) };
}

/** The listener a route answers on (scheme, host, port of `from`), as the `route-shadowed` rule keys it. */
export function listenerOf(r: Route): string {
  return `${r.from.scheme}://${r.from.host}:${r.from.port ?? ''}`;
}

/**
 * Pairs routes: first by equal `name`, then (among the rest) by equal listener and path matcher,
 * earliest first. A route named on one side only can still pair by listener and matcher (a rename
 * then shows as a `name` change).
 */
export function pairRoutes(oldRoutes: readonly Route[], newRoutes: readonly Route[]): RoutePairing {
  const partner = new Map<Route, { route: Route; by: RoutePair['matchedBy'] }>();
  const taken = new Set<Route>();
  const byName = new Map<string, Route>();
  for (const r of oldRoutes) if (r.name !== null && !byName.has(r.name)) byName.set(r.name, r);
  for (const r of newRoutes) {
    const o = r.name === null ? undefined : byName.get(r.name);
    if (o && !taken.has(o)) {
      partner.set(r, { route: o, by: 'name' });
      taken.add(o);
    }
  }
  const key = (r: Route): string => `${listenerOf(r)} ${matchText(r.match)}`;
  const byKey = new Map<string, Route[]>();
  for (const r of oldRoutes) {
    if (taken.has(r)) continue;
    const list = byKey.get(key(r));
    if (list) list.push(r);
    else byKey.set(key(r), [r]);
  }
  for (const r of newRoutes) {
    if (partner.has(r)) continue;
    const o = byKey.get(key(r))?.shift();
    if (o) {
      partner.set(r, { route: o, by: 'from-and-matcher' });
      taken.add(o);
    }
  }
  const pairs: RoutePair[] = [];
  const added: Route[] = [];
  for (const r of newRoutes) {
    const p = partner.get(r);
    if (p) pairs.push({ old: p.route, new: r, matchedBy: p.by });
    else added.push(r);
  }
  return { pairs, added, removed: oldRoutes.filter((r) => !taken.has(r)) };
}

/**
 * The pairs whose relative order changed: those outside a longest run of pairs whose old indexes
 * increase in new order. Inserting or removing routes shifts indexes without moving anything.
 */
export function movedPairs(pairs: readonly RoutePair[]): Set<RoutePair> {
  // Longest increasing subsequence of old indexes (patience sorting, O(n log n)).
  const tails: number[] = []; // tails[k]: position in `pairs` ending the best run of length k+1
  const prev: number[] = new Array<number>(pairs.length).fill(-1);
  pairs.forEach((p, i) => {
    let lo = 0;
    let hi = tails.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (pairs[tails[mid]!]!.old.index < p.old.index) lo = mid + 1;
      else hi = mid;
    }
    prev[i] = lo > 0 ? tails[lo - 1]! : -1;
    tails[lo] = i;
  });
  const keep = new Set<number>();
  for (let i = tails.length ? tails[tails.length - 1]! : -1; i >= 0; i = prev[i]!) keep.add(i);
  return new Set(pairs.filter((_, i) => !keep.has(i)));
}

/** The summary of an added or removed route. */
export function summarizeRoute(r: Route): RouteSummary {
  return {
    route: routeRef(r),
    public: r.public,
    policy: printPolicy(r.policy),
    target: r.action.kind === 'redirect' ? 'redirect' : r.action.upstreams.map((u) => u.url).join(', '),
  };
}

/** The policy change between two routes, or null when their canonical texts are equal. */
export function policyChange(a: Route | null, b: Route | null): PolicyChange | null {
  const oldText = a ? printPolicy(a.policy) : '';
  const newText = b ? printPolicy(b.policy) : '';
  return oldText === newText ? null : { old: oldText, new: newText, lines: diffLines(oldText, newText) };
}

/** Route fields compared generically: everything but `index` (order is `moved`) and `policy`. */
function comparable(r: Route): Omit<Route, 'index' | 'policy'> {
  const { index: _index, policy: _policy, ...rest } = r;
  return rest;
}

/**
 * Lists route changes for a pairing: added and removed routes summarized, and every pair that moved
 * or whose fields or policy changed. Field paths are relative to the route (`tls.skipVerify`), each
 * named by its route key (`tls_skip_verify`) with values in config units (`timeout: 30s`).
 */
export function diffRoutes(pairing: RoutePairing): RoutesDiff {
  const moved = movedPairs(pairing.pairs);
  const changed: RouteChange[] = [];
  for (const p of pairing.pairs) {
    const fields = diffValues(inConfigUnits(ROUTE_KEYS, comparable(p.old)), inConfigUnits(ROUTE_KEYS, comparable(p.new)), '').map((c) => ({
      ...c,
      key: configPathOf(ROUTE_KEYS, c.path),
    }));
    const policy = policyChange(p.old, p.new);
    const isMoved = moved.has(p);
    if (fields.length || policy || isMoved) {
      changed.push({ old: routeRef(p.old), new: routeRef(p.new), matchedBy: p.matchedBy, moved: isMoved, fields, policy });
    }
  }
  return {
    added: pairing.added.map(summarizeRoute),
    removed: pairing.removed.map(summarizeRoute),
    changed,
    unchanged: pairing.pairs.length - changed.length,
  };
}
