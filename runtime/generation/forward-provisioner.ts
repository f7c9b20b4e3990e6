/**
 * The forwarding state of one plan generation: an undici pool per route upstream, and the upstream
 * set (load balancing, health checks, outlier detection) of every forward route. Pools and sets
 * whose configuration is unchanged are taken over from the previous generation, so a reload keeps
 * warm connections and what is known about upstream health; a retired generation closes the pools
 * and stops the sets its successor did not take.
 */
import type { Dispatcher } from 'undici';
import type { PlanEnvelope, PlanSettings, Route } from '../../compiler/plan/types.ts';
import type { CompiledRoute } from '../plan/index.ts';
import type { UpstreamOutcome } from '../core/types.ts';
import { openPool, poolKey, upstreamTlsOptions, type PoolOptions } from '../upstream/pools.ts';
import type { Provisioner } from './provision.ts';
import type { UpstreamObserver } from '../observe/metrics/upstreams.ts';
import { createUpstreamSet, type UpstreamSet } from '../upstream/index.ts';
import { loadGrpcProber, usesGrpcHealthChecks } from '../upstream/health/index.ts';
import { loadGrpcModule } from '../grpc/library-log.ts';
import type { UpstreamSnapshot } from '../upstream/types.ts';

/** What a plan generation holds for forwarding (built here). */
export interface ForwardState {
  /** Per route index, per upstream index: the pool to send through. */
  readonly pools: readonly (readonly Dispatcher[])[];
  /**
   * The load balancer of a forward route: the upstream for this request (`hashKey` for the hash
   * policies: the client address), or undefined when none is healthy (503).
   */
  readonly pick?: (route: CompiledRoute, hashKey: string | undefined, method?: string) => { readonly index: number; readonly done: (outcome: UpstreamOutcome) => void } | undefined;
  /** The TLS options of a route's upstream connections (read once per generation and route). */
  readonly upstreamTls: (routeIndex: number) => PoolOptions;
}

interface RuntimeState extends ForwardState {
  /** Per route index: the route's upstream set (undefined for redirect routes). */
  readonly routeSets: readonly (UpstreamSet | undefined)[];
  /** Every pool of the generation by key (shared by routes with the same upstream and TLS). */
  readonly byKey: ReadonlyMap<string, Dispatcher>;
  /** Every upstream set by the key of its configuration. */
  readonly sets: ReadonlyMap<string, UpstreamSet>;
}

/**
 * What an upstream set depends on: its upstreams, balancing, health checks and outlier detection,
 * and, when an upstream is https, the TLS material its health checks connect with (the same as the
 * pools': trust, client certificate, server name), so a changed CA or client certificate gives new
 * health checks exactly as it gives new pools (`poolKey`).
 */
function setKey(route: Route, settings: PlanSettings): string {
  const upstreams = route.action.kind === 'forward' ? route.action.upstreams : null;
  const https = upstreams?.some((u) => u.scheme === 'https') ?? false;
  const tls = https ? [route.tls.skipVerify, route.tls.serverName, route.tls.customCa?.sha256 ?? null, route.tls.clientCert?.sha256 ?? null, route.tls.clientKey?.fingerprint ?? null, settings.tls.certificateAuthority?.sha256 ?? null, settings.server.dnsLookupFamily] : null;
  return JSON.stringify([route.from.scheme, upstreams, route.lb, route.healthChecks, route.outlierDetection, tls]);
}

export interface ForwardStateOptions {
  /** Told about health transitions and ejections (logs, metrics). */
  readonly onUpstreamEvent?: (routeId: string, event: unknown) => void;
  /** Told how each upstream exchange ended (metrics: runtime/observe/metrics/upstreams.ts). */
  readonly observer?: UpstreamObserver;
}

/** The upstream sets of a generation's forward routes, with their state now (metrics). */
export function upstreamSnapshots(forward: ForwardState, routes: readonly Route[]): { route: Route; upstreams: readonly UpstreamSnapshot[] }[] {
  const sets = (forward as Partial<RuntimeState>).routeSets ?? [];
  const out: { route: Route; upstreams: readonly UpstreamSnapshot[] }[] = [];
  routes.forEach((route, i) => {
    const set = sets[i];
    if (set) out.push({ route, upstreams: set.snapshot() });
  });
  return out;
}

/**
 * The provisioner of the forwarding part (`gen.forward`): pools and upstream sets, taken over from
 * the previous generation where their key is unchanged. New upstream sets start their health checks
 * when provisioned; cleanup closes the pools and stops the sets the next generation does not hold.
 */
export function forwardProvisioner(options: ForwardStateOptions = {}): Provisioner<ForwardState> {
  return {
    name: 'forward',
    async provision(plan: PlanEnvelope, _index, previous: ForwardState | undefined, context): Promise<ForwardState> {
      // A renewal re-reads the listener's files only: pools and sets are keyed by the plan.
      if (context.renewal && previous) return previous;
      // gRPC health checks need grpc-js, loaded for such a plan only (a failure refuses the plan).
      if (usesGrpcHealthChecks(plan.body.routes)) await loadGrpcModule(loadGrpcProber);
      const old = previous as RuntimeState | undefined;
      const byKey = new Map<string, Dispatcher>();
      const sets = new Map<string, UpstreamSet>();
      const routeSets: (UpstreamSet | undefined)[] = [];
      // Made here, not taken over: released again if a later route's TLS files cannot be read.
      const made: { sets: UpstreamSet[]; pools: Dispatcher[] } = { sets: [], pools: [] };
      const build = () => plan.body.routes.map((route) => {
        if (route.action.kind !== 'forward') {
          routeSets.push(undefined);
          return [];
        }
        const sk = setKey(route, plan.body.settings);
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
          made.sets.push(set);
          set.start();
        }
        sets.set(sk, set);
        routeSets.push(set);
        if (route.from.scheme !== 'https') return [];
        let tlsOptions: ReturnType<typeof upstreamTlsOptions> | undefined;
        return route.action.upstreams.map((u) => {
          const key = poolKey(route, u, plan.body.settings);
          let pool = byKey.get(key) ?? old?.byKey.get(key);
          if (!pool) made.pools.push((pool = openPool(route, u, (tlsOptions ??= upstreamTlsOptions(route, plan.body.settings)))));
          byKey.set(key, pool);
          return pool;
        });
      });
      let pools: Dispatcher[][];
      try {
        pools = build();
      } catch (e) {
        for (const set of made.sets) set.stop();
        for (const pool of made.pools) void pool.close().catch(() => undefined);
        throw e;
      }
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
        routeSets,
        pick: (r, hashKey, method) => {
          const p = routeSets[r.route.index]?.pick({ hashKey });
          if (!p) return undefined;
          const observer = options.observer;
          if (!observer) return { index: p.index, done: (outcome) => p.release(outcome) };
          const started = performance.now();
          let told = false;
          return {
            index: p.index,
            done: (outcome) => {
              p.release(outcome);
              if (told) return;
              told = true;
              // `{}`: nothing was exchanged with the upstream (refused, or the client left first).
              if (outcome.status !== undefined || outcome.error !== undefined) observer.exchange(plan.body.routes[r.route.index]!, p.index, method, performance.now() - started, outcome);
            },
          };
        },
      };
      return state;
    },
    async cleanup(part: ForwardState, keep: ForwardState | undefined): Promise<void> {
      const s = part as RuntimeState;
      const k = keep as RuntimeState | undefined;
      const keepSets = new Set(k?.sets.values());
      for (const set of s.sets.values()) if (!keepSets.has(set)) set.stop();
      const keepPools = new Set(k?.byKey.values());
      await Promise.all([...s.byKey.values()].filter((p) => !keepPools.has(p)).map((p) => p.close().catch(() => undefined)));
    },
  };
}
