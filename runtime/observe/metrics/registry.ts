/**
 * The metrics of one svc process (docs/observability.md "Metric reference", every name prefixed `svc_`, every series labelled
 * `service`): a prom-client registry and the observers the request path, the upstream sets, the
 * stores and the reload path report to. Created once per process when `metrics_address` is set
 * (the listener's settings are fixed at start: runtime/generation/restart-checks.ts `listenerChange`); with no
 * metrics listener nothing is created and the request path records nothing.
 *
 * Roles: the process that loads plans (`svc run` alone, or the cluster primary) also keeps the
 * configuration metrics (config.ts); a cluster worker keeps only what it observes, and its primary
 * aggregates every worker's registry into one scrape (cluster.ts).
 */
import { collectDefaultMetrics, Registry } from 'prom-client';
import type { Route } from '../../../compiler/plan/types.ts';
import type { GraceObserver } from '../../core/session-store.ts';
import type { StoreObserver, StorePoolFigures } from '../../core/session-store.ts';
import type { IdentityManagerFigures } from '../../core/identity-figures.ts';
import { buildInfo } from '../build-info.ts';
import { registerConfig, type ConfigMetrics } from './config.ts';
import { registerGrpc, type GrpcObserver } from './grpc.ts';
import { registerHttp } from './http.ts';
import { registerIdentityManager } from './identity.ts';
import { methodLabel, routeLabel, statusClass } from './labels.ts';
import { registerSessions } from './sessions.ts';
import { registerShadow, type ShadowObserver } from './shadow.ts';
import { registerStorage, registerStorePool } from './storage.ts';
import { registerUpstreams, type UpstreamObserver, type UpstreamSnapshots } from './upstreams.ts';

/** Told the end of every request, upgrade and CONNECT svc answered (runtime/proxy/). Never throws. */
export interface RequestObserver {
  /**
   * `route`: the route the request matched (undefined: none, or refused before routing);
   * `status`: the status sent, undefined when no complete response was sent; sizes: body bytes
   * when known.
   */
  request(route: Route | undefined, method: string | undefined, status: number | undefined, durationMs: number, requestBytes?: number, responseBytes?: number): void;
}

export interface MetricsOptions {
  /** The `service` label (labels.ts `serviceLabel`). */
  readonly service: string;
  /** `loader`: loads plans and keeps the configuration metrics; `worker`: a cluster worker. */
  readonly role: 'loader' | 'worker';
  /** The upstream sets in service (health, ejections). */
  readonly upstreams?: UpstreamSnapshots;
  /** The session store's pool figures; absent for the memory store (no pool metrics then). */
  readonly storePool?: () => StorePoolFigures | undefined;
  /** The identity manager's figures, where it runs. */
  readonly identityManager?: () => IdentityManagerFigures | undefined;
}

export interface SvcMetrics extends RequestObserver {
  readonly registry: Registry;
  readonly service: string;
  /** The configuration metrics; undefined in a cluster worker. */
  readonly config: ConfigMetrics | undefined;
  /** What a store reports its operations to. */
  readonly store: StoreObserver;
  /** What the balancer reports upstream exchanges to. */
  readonly upstream: UpstreamObserver;
  /** What runtime/grpc/ reports every gRPC call it makes or answers to. */
  readonly grpc: GrpcObserver;
  /** What the session layer reports requests served from the store outage grace to. */
  readonly sessions: GraceObserver;
  /** What the shadow plan (`svc run --shadow`) reports its loads and differing decisions to. */
  readonly shadow: ShadowObserver;
}

/** Creates the metrics of this process. */
export function createMetrics(options: MetricsOptions): SvcMetrics {
  const registry = new Registry();
  registry.setDefaultLabels({ service: options.service });
  const server = registerHttp(registry, 'server');
  const client = registerHttp(registry, 'client');
  const grpc = registerGrpc(registry);
  const config = options.role === 'loader' ? registerConfig(registry, buildInfo()) : undefined;
  const store = registerStorage(registry);
  const sessions = registerSessions(registry);
  const shadow = registerShadow(registry);
  if (options.storePool) registerStorePool(registry, options.storePool);
  if (options.identityManager) registerIdentityManager(registry, options.identityManager);
  const upstream = registerUpstreams(registry, client, options.upstreams);
  collectDefaultMetrics({ register: registry, prefix: 'svc_' });
  // Gauges prom-client names `_total`, which reads as a counter (promtool rejects them); svc does
  // not export them rather than export misleading names.
  for (const name of ['svc_nodejs_active_handles_total', 'svc_nodejs_active_requests_total', 'svc_nodejs_active_resources_total']) registry.removeSingleMetric(name);
  return {
    registry,
    service: options.service,
    config,
    store,
    upstream,
    grpc,
    sessions,
    shadow,
    request(route, method, status, durationMs, requestBytes, responseBytes) {
      server.observe({ route: routeLabel(route), method: methodLabel(method), status_class: statusClass(status) }, durationMs, requestBytes, responseBytes);
    },
  };
}
