/**
 * `svc run` with `services: authorize` (docs/distributed.md): decides route
 * policies for proxies over gRPC on `grpc_address`, and nothing else: no HTTP listener (TCP health
 * checks only; the metrics listener, when set, serves `/metrics`, `/healthz` and `/readyz`). Sessions
 * are read from the data broker service (`databroker_service_url(s)`). Reloads follow the config as
 * in the other roles; a reload that changes the gRPC settings is refused (restart required).
 */
import type { PlanEnvelope } from '../../compiler/plan/types.ts';
import { authorizeGrpcService } from '../authorize/authorize-service.ts';
import { authorizeServerTls, grpcBindAddress, planCredentialKey } from '../grpc/plan-options.ts';
import { startGrpcServer, type GrpcServerHandle } from '../grpc/server.ts';
import { watchDatabroker } from '../observe/metrics/health.ts';
import { shutdownDelay } from './stop-signals.ts';
import { openObservedStore } from '../databroker/observed-store.ts';
import { metricsFor, startLoaderMetrics, type LoaderMetrics } from '../generation/run-metrics.ts';
import { lazyEphemeralKey, startGenerations } from '../generation/generation.ts';
import type { ReloadResult } from '../generation/reload.ts';
import { firstPlan, processTargets, watchedReloadOptions, type RunOptions } from './run.ts';
import { startWatchedReload } from '../generation/watched-reload.ts';

export interface AuthorizeRunning {
  /** The gRPC listener's address (the bound port when `--grpc-listen` asked for 0). */
  readonly grpc: { readonly address: { readonly host: string; readonly port: number } };
  /** The plan in service. */
  plan(): PlanEnvelope;
  reload(): Promise<ReloadResult>;
  readonly lastReload: () => ReloadResult | undefined;
  close(): Promise<void>;
  /**
   * Stops gracefully: readiness fails at once (`/readyz`: 503 `draining`; `/healthz` stays 200), the
   * gRPC listener keeps accepting for `delayMs` (the shutdown delay), then calls in flight finish (at
   * most `timeoutMs`, capped at 5 s), then the store closes; the metrics listener last.
   */
  drain(timeoutMs: number, delayMs?: number): Promise<void>;
}

/** True when the plan is the authorize role. */
export function isAuthorizeRole(plan: PlanEnvelope): boolean {
  return plan.body.settings.mode.services === 'authorize';
}

/** Starts the authorize role. Resolves once the gRPC listener listens; rejects when it cannot. */
export async function runAuthorize(options: RunOptions): Promise<AuthorizeRunning> {
  const plan = firstPlan(options);
  if (!isAuthorizeRole(plan)) throw new Error('runAuthorize needs a plan with services: authorize');
  const metrics = metricsFor(plan, 'loader', {});
  const generations = await startGenerations(plan, {
    ...processTargets(options),
    scheme: plan.body.settings.server.insecure ? 'http' : 'https',
    ephemeralKey: lazyEphemeralKey(options.log),
    ...(options.log ? { log: options.log } : {}),
  });
  const store = generations.store;
  const opened = options.sessionStore ? undefined : openObservedStore(plan.body.settings, metrics?.store ?? options.storeObserver, options.log, metrics?.grpc);
  const sessions = options.sessionStore ?? opened!.store;
  // The data broker service's state for /healthz, never for readiness: every replica shares it.
  const databroker = metrics ? watchDatabroker({ store: () => sessions, ...(opened ? { pool: () => opened.pool() } : {}), ...(options.log ? { log: options.log } : {}) }) : undefined;
  const service = authorizeGrpcService({ current: () => ({ index: store.current.index, checksum: store.current.plan.checksum }), sessions, ...(options.log ? { log: options.log } : {}), ...(options.storeOutageGraceMs !== undefined ? { storeOutageGraceMs: options.storeOutageGraceMs } : {}), ...(metrics ? { graceObserver: metrics.sessions } : {}) });
  const settings = plan.body.settings;
  const address = grpcBindAddress(settings, options.grpcListen);
  let server: GrpcServerHandle;
  let observed: LoaderMetrics | undefined;
  let closing = false;
  try {
    const tls = await authorizeServerTls(plan.body, store.current.tls?.material ?? null);
    try {
      server = await startGrpcServer({ address, credentialKey: planCredentialKey(settings), tls, ...(metrics ? { observer: metrics.grpc } : {}), ...(options.log ? { log: options.log } : {}) }, [service]);
    } catch (e) {
      throw new Error(`grpc_address: ${(e as Error).message}`, { cause: e });
    }
    options.log?.({ msg: 'serving the authorize service over gRPC', address: `${address.replace(/:\d+$/, '')}:${server.port}`, tls: tls !== null });
    if (metrics) {
      const up = server;
      // Ready: this process can serve (a plan, the gRPC listener, not draining).
      observed = await startLoaderMetrics(metrics, plan, { ready: { plan: () => true, draining: () => !closing }, health: { databroker: () => databroker!.state() }, ...(options.log ? { log: options.log } : {}) }).catch(async (e: unknown) => {
        await up.close(0);
        throw e;
      });
    }
  } catch (e) {
    databroker?.close();
    service.close();
    await generations.close();
    if (!options.sessionStore) await sessions.close();
    throw e;
  }
  const reloads = await startWatchedReload(watchedReloadOptions(options), generations, () => observed);
  const host = address.replace(/:\d+$/, '').replace(/^\[(.*)\]$/, '$1');

  const stop = async (graceMs: number, delayMs: number) => {
    closing = true;
    await reloads.close();
    // Calls are still accepted (and answered) while the orchestrator notices /readyz failing.
    await shutdownDelay(delayMs);
    await server.close(graceMs);
    service.close();
    databroker?.close();
    await observed?.close();
    await generations.close();
    if (!options.sessionStore) await sessions.close();
  };
  return {
    grpc: { address: { host, port: server.port } },
    plan: () => store.current.plan,
    reload: reloads.reload,
    lastReload: () => reloads.last(),
    close: () => stop(0, 0),
    drain: (timeoutMs, delayMs = 0) => stop(Math.min(timeoutMs, 5_000), delayMs),
  };
}
