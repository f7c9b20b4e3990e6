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
import { lazyEphemeralKey, startGenerations, type ServedGenerations } from '../generation/generation.ts';
import { serveDatabrokerGrpc, type DatabrokerGrpc } from './grpc-databroker.ts';
import type { ReloadResult } from '../generation/reload.ts';
import { loadForRun } from './load-plan.ts';
import { startProcess, type RunOptions } from './startup.ts';

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
  const first = options.plan ?? (await loadForRun(options));
  if (!isDatabrokerRole(first)) throw new Error('bug: runDatabroker needs a plan with services: databroker');
  const log = options.log ? { log: options.log } : {};
  let grpc: DatabrokerGrpc | undefined;
  const p = await startProcess<ServedGenerations>({ ...options, plan: first }, {
    // This role serves the plan's store: it opens it, whatever the caller holds.
    ownStore: true,
    // The generations carry what the identity manager reads (the provider), and follow reloads.
    identityManager: (g) => managerSettings(g.store.current.auth),
    generations: (plan, targets) => startGenerations(plan, { ...targets, scheme: plan.body.settings.server.insecure ? 'http' : 'https', ephemeralKey: lazyEphemeralKey(options.log), ...log }),
    async serve({ plan, generations, metrics, sessions }) {
      // Ready (the metrics listener's /readyz): this process can serve: a plan, the gRPC listener,
      // not draining. Not its own store: every data broker replica shares the one Redis, so were
      // it down every replica would turn unready at once, and the proxies would lose the data
      // broker's prompt `unavailable` answers (and take longer to see it back) while no replica
      // could serve sessions better. The store's state goes to /healthz, `svc_redis_up` and the
      // logs (docs/observability.md).
      if (!isSessionDirectory(sessions)) throw new Error('bug: the data broker store cannot list sessions');
      const served = (grpc = await serveDatabrokerGrpc(plan.body, sessions, {
        ...(options.grpcListen ? { listen: options.grpcListen } : {}),
        material: generations.store.current.tls?.material ?? null,
        ...(metrics ? { observer: metrics.grpc } : {}),
        ...log,
      }));
      // Calls and watch streams in flight finish on the graceful stop (at most 5 s of the drain timeout).
      return { front: { drain: (timeoutMs) => served.close(Math.min(timeoutMs, 5_000)), close: () => served.close(0) }, behind: [] };
    },
  });
  return {
    grpc: grpc!,
    identityManager: p.identityManager,
    plan: () => p.generations.store.current.plan,
    reload: p.reload,
    lastReload: p.lastReload,
    close: p.close,
    drain: p.drain,
  };
}
