/**
 * `svc run` with `services: databroker` (docs/distributed.md): serves the session store
 * (memory or Redis, `databroker_storage_type`) over gRPC on `grpc_address`, and nothing else: no
 * HTTP listener. The identity manager runs here, where the store is held (docs/authentication.md "Keeping sessions fresh"); the metrics
 * listener (`metrics_address`) serves its figures, readiness (this process can serve: never its store,
 * which every replica shares) and liveness with the store's state. Reloads follow the config as in
 * all-in-one mode (the identity provider settings the identity manager uses); a reload that changes
 * the storage or gRPC settings is refused (restart required).
 */
import type { PlanEnvelope } from '../../compiler/plan/types.ts';
import { isSessionDirectory } from '../core/session-store.ts';
import { managerSettings } from '../sessions/identity-manager.ts';
import type { IdentityManager } from '../sessions/identity-manager.ts';
import { watchDatabroker } from '../observe/metrics/health.ts';
import { shutdownDelay } from './stop-signals.ts';
import { hasStorePool, openObservedStore } from '../databroker/observed-store.ts';
import { metricsFor, startLoaderMetrics, type LoaderMetrics } from '../generation/run-metrics.ts';
import { lazyEphemeralKey, startGenerations } from '../generation/generation.ts';
import { serveDatabrokerGrpc, type DatabrokerGrpc } from './grpc-databroker.ts';
import type { ReloadResult } from '../generation/reload.ts';
import { startWatchedReload } from '../generation/watched-reload.ts';
import { firstPlan, processTargets, startIdentityManager, watchedReloadOptions, type RunOptions } from './run.ts';

export interface DatabrokerRunning {
  /** The gRPC listener's address (the bound port when `--grpc-listen` asked for 0). */
  readonly grpc: DatabrokerGrpc;
  readonly identityManager: IdentityManager | undefined;
  /** The plan in service. */
  plan(): PlanEnvelope;
  reload(): Promise<ReloadResult>;
  /** The last reload's outcome (for `config_last_reload_success`). */
  readonly lastReload: () => ReloadResult | undefined;
  close(): Promise<void>;
  /**
   * Stops gracefully: readiness fails at once (`/readyz`: 503 `draining`; `/healthz` stays 200), the
   * identity manager's lease is released, the gRPC listener keeps accepting for `delayMs` (the
   * shutdown delay), then closes gracefully (calls and watch streams in flight: at most 5 s of
   * `timeoutMs`), then the store closes; the metrics listener last.
   */
  drain(timeoutMs: number, delayMs?: number): Promise<void>;
}

/** True when the plan is the data broker role. */
export function isDatabrokerRole(plan: PlanEnvelope): boolean {
  return plan.body.settings.mode.services === 'databroker';
}

/** Starts the data broker role. Resolves once the gRPC listener listens; rejects when it cannot. */
export async function runDatabroker(options: RunOptions): Promise<DatabrokerRunning> {
  const plan = firstPlan(options);
  if (!isDatabrokerRole(plan)) throw new Error('runDatabroker needs a plan with services: databroker');
  const metrics = metricsFor(plan, 'loader', { identityManager: () => manager?.figures(), ...(hasStorePool(plan.body.settings) ? { storePool: () => opened.pool() } : {}) });
  // The generations carry what the identity manager reads (the provider), and follow reloads.
  const generations = await startGenerations(plan, {
    ...processTargets(options),
    scheme: plan.body.settings.server.insecure ? 'http' : 'https',
    ephemeralKey: lazyEphemeralKey(options.log),
    ...(options.log ? { log: options.log } : {}),
  });
  const store = generations.store;
  const opened = openObservedStore(plan.body.settings, metrics?.store ?? options.storeObserver, options.log);
  const sessions = opened.store;
  const { manager } = startIdentityManager(sessions, () => managerSettings(store.current.auth), options);
  let grpc: DatabrokerGrpc;
  let observed: LoaderMetrics | undefined;
  let closing = false;
  // The store's state for /healthz (never for readiness, above).
  const databroker = metrics ? watchDatabroker({ store: () => sessions, pool: () => opened.pool(), ...(options.log ? { log: options.log } : {}) }) : undefined;
  try {
    if (!isSessionDirectory(sessions)) throw new Error('the data broker store cannot list sessions');
    grpc = await serveDatabrokerGrpc(plan.body, sessions, {
      ...(options.grpcListen ? { listen: options.grpcListen } : {}),
      material: store.current.tls?.material ?? null,
      ...(metrics ? { observer: metrics.grpc } : {}),
      ...(options.log ? { log: options.log } : {}),
    });
    if (metrics) {
      const up = grpc;
      // Ready: this process can serve (a plan, the gRPC listener, not draining). Not its own store:
      // every data broker replica shares the one Redis, so were it down every replica would turn
      // unready at once, and the proxies would lose the data broker's prompt `unavailable` answers
      // (and take longer to see it back) while no replica could serve sessions better. The store's
      // state goes to /healthz, `svc_redis_up` and the logs (docs/observability.md).
      observed = await startLoaderMetrics(metrics, plan, {
        ready: { plan: () => true, draining: () => !closing },
        health: { databroker: () => databroker!.state() },
        ...(options.log ? { log: options.log } : {}),
      }).catch(async (e: unknown) => {
        await up.close(0);
        throw e;
      });
    }
  } catch (e) {
    databroker?.close();
    await manager?.close();
    await generations.close();
    await sessions.close();
    throw e;
  }

  const reloads = await startWatchedReload(watchedReloadOptions(options), generations, () => observed);
  const reload = reloads.reload;

  const stop = async (graceMs: number, delayMs: number) => {
    closing = true;
    await reloads.close();
    // The lease goes first, so another instance's identity manager takes over without waiting for its expiry.
    await manager?.close();
    // Calls are still accepted (and answered) while the orchestrator notices /readyz failing.
    await shutdownDelay(delayMs);
    await grpc.close(graceMs);
    databroker?.close();
    await observed?.close();
    await generations.close();
    await sessions.close();
  };
  const running: DatabrokerRunning = {
    grpc,
    identityManager: manager,
    plan: () => store.current.plan,
    reload,
    lastReload: () => reloads.last(),
    close: () => stop(0, 0),
    drain: (timeoutMs, delayMs = 0) => stop(Math.min(timeoutMs, 5_000), delayMs),
  };
  return running;
}
