/**
 * The gate's pick step: the upstream of an allowed forward entry, chosen through the route's upstream
 * set (load balancing, health, ejection) only once every check of the gate has said yes, so nothing
 * the gate refuses ever moves the balancer's counters. The ruling is completed for the chosen upstream
 * (request/decide.ts `complete`): the allow decision with its upstream request, or 503
 * `no-healthy-upstream`.
 *
 * An entry point that can no longer forward (the client went away while the gate ran, an upgrade
 * whose protocol the route does not take, a request to a route without a pool) picks nothing: its
 * decision names the upstream a weighted sample chooses, for the access line, and `upstream` is
 * undefined (no pool: a `ChosenUpstream` without pool that tells no one its outcome).
 */
import type { Route } from '../../compiler/plan/types.ts';
import type { UpstreamOutcome } from '../core/types.ts';
import type { ServedGeneration } from '../generation/generation.ts';
import { complete, sampledUpstream, type Forward } from '../request/decide.ts';
import type { Decision } from '../core/types.ts';
import type { Socket } from 'node:net';
import type { Dispatcher } from 'undici';
import type { PoolOptions } from '../upstream/pools.ts';

/** The upstream an allowed forward goes to: chosen through the route's upstream set. */
export interface ChosenUpstream {
  /** Index into the route's `to` list. */
  readonly index: number;
  /** The pool of `https` routes' upstreams (undefined for `tcp+https` routes). */
  readonly pool: Dispatcher | undefined;
  /** How to reach it over TLS (the route's `tls_*` settings and `certificate_authority`). */
  readonly tls: PoolOptions;
  /** Tells the load balancer and outlier detection once how the exchange ended. */
  readonly done: (outcome: UpstreamOutcome) => void;
}

/** What the pick reads of the gate's entry (gate.ts `Entry`). */
export interface PickEntry {
  readonly kind: 'request' | 'upgrade' | 'connect';
  readonly method: string;
  readonly socket: Socket | undefined;
  readonly upstreamSample?: number;
  readonly canForward?: ((route: Route) => boolean) | undefined;
}

const NO_OUTCOME = (_outcome: UpstreamOutcome): void => undefined;

/** The decision of an allowed forward entry and the upstream it goes to (undefined: nothing picked). */
export interface Picked {
  readonly decision: Decision;
  readonly upstream: ChosenUpstream | undefined;
}

/** Picks the upstream of `ruling` for `entry` under `gen` (see the file comment). */
export function pickUpstream(gen: ServedGeneration, entry: PickEntry, ruling: Forward): Picked {
  const forward = gen.forward;
  const routeIndex = ruling.route.index;
  const route: Route = gen.index.body.routes[routeIndex]!;
  if (entry.canForward !== undefined && !entry.canForward(route)) return nothingPicked(entry, ruling);
  // A plain request goes through a pool; a route without one (not reachable from a request) is 502.
  const poolless = entry.kind === 'request' && (forward.pools[routeIndex]?.length ?? 0) === 0;
  if (forward.pick === undefined || poolless) {
    const index = sampledUpstream(ruling.compiled, { upstreamSample: entry.upstreamSample ?? Math.random() });
    const decision = complete(ruling, index);
    return { decision, upstream: decision.outcome === 'allow' ? chosen(gen, routeIndex, index, NO_OUTCOME) : undefined };
  }
  const p = forward.pick(ruling.compiled, entry.socket?.remoteAddress ?? '', entry.method);
  const decision = complete(ruling, p?.index);
  if (p === undefined) return { decision, upstream: undefined };
  if (decision.outcome !== 'allow') {
    // The chosen upstream's `to` path cannot take this request's path (400): nothing is exchanged.
    p.done({});
    return { decision, upstream: undefined };
  }
  return { decision, upstream: chosen(gen, routeIndex, p.index, p.done) };
}

/** The chosen upstream `index` of route `routeIndex`: its pool and TLS options (a function, not a closure per request). */
function chosen(gen: ServedGeneration, routeIndex: number, index: number, done: (outcome: UpstreamOutcome) => void): ChosenUpstream {
  const forward = gen.forward;
  return { index, pool: forward.pools[routeIndex]?.[index], tls: forward.upstreamTls(routeIndex), done };
}

/**
 * The decision of an allowed forward entry for which nothing is picked (it can no longer forward, or
 * the gate's identity step failed): the upstream a weighted sample chooses, named for the access line
 * only; no balancer counter moves.
 */
export function nothingPicked(entry: Pick<PickEntry, 'upstreamSample'>, ruling: Forward): Picked {
  return { decision: complete(ruling, sampledUpstream(ruling.compiled, { upstreamSample: entry.upstreamSample ?? Math.random() })), upstream: undefined };
}
