/**
 * `svc run` in one process (all-in-one, or the authenticate and proxy roles): serve a plan file, or
 * compile a config and serve it, and reload on change (docs/architecture.md §1). The startup, the
 * reload path and the stop are the ones every role shares (startup.ts); what is this process's own
 * is below: its generations with autocert and the upstream sets, the data broker served over gRPC
 * where this process holds the store, the authorize client of the proxy role, and the listeners.
 */
import type { AutocertManager } from '../tls/acme/manager.ts';
import { startAutocert } from '../tls/acme/start.ts';
import { upstreamSnapshots } from '../generation/forward-provisioner.ts';
import { lazyEphemeralKey, startGenerations, type ServedGenerations, type ServedStore } from '../generation/generation.ts';
import type { ReloadResult } from '../generation/reload.ts';
import { serve, type Listening } from '../proxy/listeners.ts';
import { isSessionDirectory, type SessionStore } from '../core/session-store.ts';
import { managerSettings, type IdentityManager } from '../sessions/identity-manager.ts';
import { usesRemoteDatabroker } from '../grpc/plan-options.ts';
import type { DatabrokerGrpc } from './grpc-databroker.ts';
import { loadGrpcModule } from '../grpc/library-log.ts';
import type { RemoteAuthorizer } from '../authorize/remote-authorizer.ts';
import { startProcess, type Behind, type RunOptions } from './startup.ts';
import { loadShadowForRun, refuseShadowOutsideAllInOne } from './load-plan.ts';

export type { RunOptions, IdentityManagerTuning } from './startup.ts';

export interface Running {
  readonly store: ServedStore;
  /** The session store this process uses (the data broker: memory, Redis, or a data broker service's client). */
  readonly sessions: SessionStore;
  /** The identity manager (its figures are metrics: docs/observability.md "Metric reference"); undefined when the store cannot hold one. */
  readonly identityManager: IdentityManager | undefined;
  readonly listening: Listening;
  /** The data broker served over gRPC (`grpc_address`), unless this process uses a data broker service. */
  readonly grpc: DatabrokerGrpc | undefined;
  /** The autocert manager, when the first plan sets `autocert` (runtime/tls/acme/manager.ts). */
  readonly autocert: AutocertManager | null;
  /** Reloads now (what a file change does). */
  reload(): Promise<ReloadResult>;
  /** The last reload's outcome (for `config_last_reload_success`). */
  readonly lastReload: () => ReloadResult | undefined;
  close(): Promise<void>;
  /**
   * Stops gracefully: readiness fails at once (`/readyz`, `/.svc/ready`: 503 `draining`; liveness
   * stays 200), the listeners keep accepting for `delayMs` (the shutdown delay), then drain for up
   * to `timeoutMs` (serve.ts), then everything closes; the metrics listener last.
   */
  drain(timeoutMs: number, delayMs?: number): Promise<void>;
}

/** The candidate plan of `--shadow FILE`, loaded from its file (a plan or a config). */
function shadowSource(path: string, env: NodeJS.ProcessEnv | undefined) {
  return { name: path, load: () => loadShadowForRun(path, env) };
}

/** Starts serving. Resolves once the listener listens. */
export async function run(options: RunOptions): Promise<Running> {
  let autocert: AutocertManager | null = null;
  let grpc: DatabrokerGrpc | undefined;
  let listening: Listening | undefined;
  const log = options.log ? { log: options.log } : {};
  const p = await startProcess<ServedGenerations>(options, {
    // Upstream health is read from the generation in service.
    metricsSources: (generations) => ({ upstreams: () => { const g = generations(); return g ? upstreamSnapshots(g.store.current.forward, g.store.current.plan.body.routes) : []; } }),
    identityManager: (g) => managerSettings(g.store.current.auth),
    async generations(plan, targets, metrics) {
      refuseShadowOutsideAllInOne(options.shadow, plan);
      // Process-wide, outside generations: certificates outlive plans; each swap updates the names
      // (the `autocertNames` provisioner, runtime/generation/generation.ts). Closed with them.
      const certificates = (autocert = await startAutocert(plan.body, { ...options.autocertTiming, ...log }));
      let served: ServedGenerations;
      try {
        served = await startGenerations(plan, {
          ...targets,
          scheme: plan.body.settings.server.insecure ? 'http' : 'https',
          ephemeralKey: lazyEphemeralKey(options.log),
          ...log,
          ...(metrics ? { upstreamObserver: metrics.upstream } : {}),
          ...(certificates ? { autocert: certificates } : {}),
          // The candidate of `--shadow`, loaded with each generation (runtime/generation/shadow-provisioner.ts).
          ...(options.shadow !== undefined ? { shadow: shadowSource(options.shadow, options.env) } : {}),
          ...(metrics ? { shadowObserver: metrics.shadow } : {}),
        });
      } catch (e) {
        certificates?.close();
        throw e;
      }
      const close = served.close;
      return { ...served, close: async () => { certificates?.close(); await close(); } };
    },
    async serve({ plan, generations, metrics, sessions, refresher, closing }) {
      const settings = plan.body.settings;
      const behind: Behind[] = [];
      let authorizer: RemoteAuthorizer | undefined;
      const stopBehind = async () => {
        for (const b of behind) await b.stop(false);
      };
      try {
        // The all-in-one process also serves its data broker over gRPC (for tools and extra
        // proxies), unless it is itself a client of a data broker service.
        if (!usesRemoteDatabroker(settings) && isSessionDirectory(sessions)) {
          const { serveDatabrokerGrpc } = await loadGrpcModule(() => import('./grpc-databroker.ts'));
          const served = (grpc = await serveDatabrokerGrpc(plan.body, sessions, {
            ...(options.grpcListen ? { listen: options.grpcListen } : {}),
            material: generations.store.current.tls?.material ?? null,
            ...(metrics ? { observer: metrics.grpc } : {}),
            ...log,
          }));
          // Other services may use this data broker until the listeners are drained.
          behind.unshift({ stop: (draining) => served.close(draining ? undefined : 0) });
        }
        // The proxy role asks the authorize service for policy verdicts (runtime/authorize/).
        if (settings.mode.services === 'proxy') {
          const { openAuthorizer } = await loadGrpcModule(() => import('../authorize/open-authorizer.ts'));
          const client = (authorizer = openAuthorizer(settings, sessions, { ...(metrics ? { observer: metrics.grpc } : {}), ...log }));
          behind.unshift({ stop: () => client.close() });
        }
        listening = await serve(generations.store, {
          ...options,
          probes: { ready: () => !closing() },
          ...(metrics ? { observe: metrics, graceObserver: metrics.sessions } : {}),
          sessionStore: sessions,
          ...(refresher ? { sessionRefresher: refresher } : {}),
          ...(autocert ? { acmeChallenges: autocert.challenges, ocsp: autocert.ocsp } : {}),
          ...(authorizer ? { authorizer } : {}),
        });
      } catch (e) {
        await stopBehind();
        throw e;
      }
      if ('setSecureContext' in listening.server) generations.serveDefaultCertificate(listening.server);
      return { front: listening, behind };
    },
  });
  return {
    store: p.generations.store,
    sessions: p.sessions,
    identityManager: p.identityManager,
    listening: listening!,
    grpc,
    autocert,
    reload: p.reload,
    lastReload: p.lastReload,
    close: p.close,
    drain: p.drain,
  };
}

