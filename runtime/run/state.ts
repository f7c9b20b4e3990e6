/**
 * The forwarding state of one plan generation: an undici pool per route upstream, and the upstream
 * set (load balancing, health checks, outlier detection) of every forward route. Pools and sets
 * whose configuration is unchanged are taken over from the previous generation, so a reload keeps
 * warm connections and what is known about upstream health; a retired generation closes the pools
 * and stops the sets its successor did not take.
 */
import type { Dispatcher } from 'undici';
import type { PlanEnvelope, Route } from '../../compiler/plan/types.ts';
import type { ForwardState } from '../http/handler.ts';
import { openPool, poolKey, upstreamTlsOptions, type PoolOptions } from '../http/pools.ts';
import type { Generation, StoreHooks } from '../plan/store.ts';
import { createUpstreamSet, type UpstreamSet } from '../upstream/index.ts';

interface RuntimeState extends ForwardState {
  /** Every pool of the generation by key (shared by routes with the same upstream and TLS). */
  readonly byKey: ReadonlyMap<string, Dispatcher>;
  /** Every upstream set by the key of its configuration. */
  readonly sets: ReadonlyMap<string, UpstreamSet>;
}

/** What an upstream set depends on: its upstreams, balancing, health checks and outlier detection. */
function setKey(route: Route): string {
  return JSON.stringify([route.from.scheme, route.action.kind === 'forward' ? route.action.upstreams : null, route.lb, route.healthChecks, route.outlierDetection, route.tls.skipVerify, route.tls.serverName]);
}

export interface ForwardStateOptions {
  /** Told about health transitions and ejections (logs, metrics). */
  readonly onUpstreamEvent?: (routeId: string, event: unknown) => void;
}

/** Store hooks building and retiring the pools and upstream sets of each generation. */
export function forwardStateHooks(options: ForwardStateOptions = {}): StoreHooks<ForwardState> {
  return {
    build(plan: PlanEnvelope, _index, previous: Generation<ForwardState> | undefined): ForwardState {
      const old = previous?.extra as RuntimeState | undefined;
      const byKey = new Map<string, Dispatcher>();
      const sets = new Map<string, UpstreamSet>();
      const routeSets: (UpstreamSet | undefined)[] = [];
      const pools = plan.body.routes.map((route) => {
        if (route.action.kind !== 'forward') {
          routeSets.push(undefined);
          return [];
        }
        const sk = setKey(route);
        let set = sets.get(sk) ?? old?.sets.get(sk);
        if (!set) {
          // Health checks of https upstreams use the same TLS material as the requests.
          const t = route.action.upstreams.some((u) => u.scheme === 'https') ? upstreamTlsOptions(route, plan.body.settings) : undefined;
          const tls = t && {
            ...(t.ca !== undefined ? { ca: t.ca } : {}),
            ...(t.cert !== undefined ? { cert: t.cert } : {}),
            ...(t.key !== undefined ? { key: t.key } : {}),
            ...(route.tls.serverName !== null ? { servername: route.tls.serverName } : {}),
            rejectUnauthorized: !route.tls.skipVerify,
          };
          set = createUpstreamSet(route, { onChange: (event) => options.onUpstreamEvent?.(route.id, event), ...(tls ? { tls } : {}) });
          set.start();
        }
        sets.set(sk, set);
        routeSets.push(set);
        if (route.from.scheme !== 'https') return [];
        let tlsOptions: ReturnType<typeof upstreamTlsOptions> | undefined;
        return route.action.upstreams.map((u) => {
          const key = poolKey(route, u, plan.body.settings);
          let pool = byKey.get(key) ?? old?.byKey.get(key);
          if (!pool) pool = openPool(route, u, (tlsOptions ??= upstreamTlsOptions(route, plan.body.settings)));
          byKey.set(key, pool);
          return pool;
        });
      });
      // Read once per generation and route, when a route's first upgrade or tunnel needs it.
      const tlsByRoute = new Map<number, PoolOptions>();
      const state: RuntimeState = {
        upstreamTls: (i) => {
          let t = tlsByRoute.get(i);
          if (!t) tlsByRoute.set(i, (t = upstreamTlsOptions(plan.body.routes[i]!, plan.body.settings)));
          return t;
        },
        pools,
        byKey,
        sets,
        pick: (r, hashKey) => {
          const p = routeSets[r.route.index]?.pick({ hashKey });
          return p && { index: p.index, done: (outcome) => p.release(outcome) };
        },
      };
      return state;
    },
    retire(g: Generation<ForwardState>, next: Generation<ForwardState>): void {
      const n = next.extra as RuntimeState;
      const keep = new Set(n.byKey.values());
      for (const pool of (g.extra as RuntimeState).byKey.values()) if (!keep.has(pool)) void pool.close().catch(() => undefined);
      const keepSets = new Set(n.sets.values());
      for (const set of (g.extra as RuntimeState).sets.values()) if (!keepSets.has(set)) set.stop();
    },
  };
}

/** Closes every pool and stops every upstream set of the current generation (shutdown). */
export async function closeForwardState(state: ForwardState): Promise<void> {
  const s = state as RuntimeState;
  for (const set of s.sets.values()) set.stop();
  await Promise.all([...s.byKey.values()].map((p) => p.close().catch(() => undefined)));
}
