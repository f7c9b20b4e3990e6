/**
 * The forwarding state of one plan generation: an undici pool per route upstream. Pools whose key
 * (origin and TLS settings) is unchanged are taken over from the previous generation, so a reload
 * keeps warm connections; a retired generation closes the pools its successor did not take.
 */
import type { Dispatcher } from 'undici';
import type { PlanEnvelope } from '../../compiler/plan/types.ts';
import type { ForwardState } from '../http/handler.ts';
import { openPool, poolKey } from '../http/pools.ts';
import type { Generation, StoreHooks } from '../plan/store.ts';

interface PoolState extends ForwardState {
  /** Every pool of the generation by key (shared by routes with the same upstream and TLS). */
  readonly byKey: ReadonlyMap<string, Dispatcher>;
}

/** Store hooks building and retiring the pools of each generation. */
export function forwardStateHooks(): StoreHooks<ForwardState> {
  return {
    build(plan: PlanEnvelope, _index, previous: Generation<ForwardState> | undefined): ForwardState {
      const old = (previous?.extra as PoolState | undefined)?.byKey;
      const byKey = new Map<string, Dispatcher>();
      const pools = plan.body.routes.map((route) => {
        if (route.action.kind !== 'forward' || route.from.scheme !== 'https') return [];
        return route.action.upstreams.map((u) => {
          const key = poolKey(route, u);
          let pool = byKey.get(key) ?? old?.get(key);
          if (!pool) pool = openPool(route, u);
          byKey.set(key, pool);
          return pool;
        });
      });
      const state: PoolState = { pools, byKey };
      return state;
    },
    retire(g: Generation<ForwardState>, next: Generation<ForwardState>): void {
      const keep = new Set((next.extra as PoolState).byKey.values());
      for (const pool of (g.extra as PoolState).byKey.values()) if (!keep.has(pool)) void pool.close().catch(() => undefined);
    },
  };
}

/** Closes every pool of the current generation (shutdown). */
export async function closeForwardState(state: ForwardState): Promise<void> {
  await Promise.all([...(state as PoolState).byKey.values()].map((p) => p.close().catch(() => undefined)));
}
