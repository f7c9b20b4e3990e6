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
import { SvcError } from '../core/errors.ts';
import { lazyEphemeralKey, startGenerations, type ServedGenerations } from '../generation/generation.ts';
import type { ReloadResult } from '../generation/reload.ts';
import { loadForRun } from './load-plan.ts';
import { startProcess, type RunOptions } from './startup.ts';

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
  const first = options.plan ?? (await loadForRun(options));
  if (!isAuthorizeRole(first)) throw new Error('bug: runAuthorize needs a plan with services: authorize');
  const log = options.log ? { log: options.log } : {};
  let listening: { readonly host: string; readonly port: number } | undefined;
  const p = await startProcess<ServedGenerations>({ ...options, plan: first }, {
    generations: (plan, targets) => startGenerations(plan, { ...targets, scheme: plan.body.settings.server.insecure ? 'http' : 'https', ephemeralKey: lazyEphemeralKey(options.log), ...log }),
    async serve({ plan, generations, metrics, sessions }) {
      const store = generations.store;
      const service = authorizeGrpcService({ current: () => ({ index: store.current.index, checksum: store.current.plan.checksum }), sessions, ...log, ...(options.storeOutageGraceMs !== undefined ? { storeOutageGraceMs: options.storeOutageGraceMs } : {}), ...(metrics ? { graceObserver: metrics.sessions } : {}) });
      const settings = plan.body.settings;
      const address = grpcBindAddress(settings, options.grpcListen);
      let server: GrpcServerHandle;
      try {
        const tls = await authorizeServerTls(plan.body, store.current.tls?.material ?? null);
        try {
          server = await startGrpcServer({ address, credentialKey: planCredentialKey(settings), tls, ...(metrics ? { observer: metrics.grpc } : {}), ...log }, [service]);
        } catch (e) {
          throw new SvcError('SVC_ERR_GRPC_LISTEN', `grpc_address: ${(e as Error).message}`, { cause: e });
        }
        options.log?.({ msg: 'serving the authorize service over gRPC', address: `${address.replace(/:\d+$/, '')}:${server.port}`, tls: tls !== null });
      } catch (e) {
        service.close();
        throw e;
      }
      listening = { host: address.replace(/:\d+$/, '').replace(/^\[(.*)\]$/, '$1'), port: server.port };
      return {
        // Calls in flight finish on the graceful stop (at most 5 s of the drain timeout).
        front: { drain: (timeoutMs) => server.close(Math.min(timeoutMs, 5_000)), close: () => server.close(0) },
        behind: [{ stop: () => service.close() }],
      };
    },
  });
  return {
    grpc: { address: listening! },
    plan: () => p.generations.store.current.plan,
    reload: p.reload,
    lastReload: p.lastReload,
    close: p.close,
    drain: p.drain,
  };
}
