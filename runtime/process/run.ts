/**
 * `svc run`: serve a plan file, or compile a config and serve it, and reload on change (docs/architecture.md
 * §1): watch the config or plan and every file it refers to; on change reload (runtime/generation/reload.ts:
 * build the next generation fully, swap once; errors keep the old plan and say why), and let
 * in-flight requests finish on the generation they started with.
 */
import { readFileSync } from 'node:fs';
import { compile, renderText, isSecretPath, type Diagnostic } from '../../compiler/index.ts';
import type { PlanEnvelope } from '../../compiler/plan/types.ts';
import { startAutocert } from '../tls/acme/start.ts';
import type { AutocertManager, AutocertOptions } from '../tls/acme/manager.ts';
import { refusal, refusalEntries, UNSUPPORTED_SETTING } from '../plan/capabilities.ts';
import { parsePlan, PlanLoadError } from '../plan/load.ts';
import { watchDatabroker } from '../observe/metrics/health.ts';
import { shutdownDelay } from './stop-signals.ts';
import { hasStorePool, openObservedStore } from '../databroker/observed-store.ts';
import { metricsFor, startLoaderMetrics, type LoaderMetrics } from '../generation/run-metrics.ts';
import { upstreamSnapshots } from '../generation/forward-provisioner.ts';
import { lazyEphemeralKey, startGenerations, type ProcessTargets, type ServedStore } from '../generation/generation.ts';
import type { ReloadResult } from '../generation/reload.ts';
import { startWatchedReload, type WatchedReloadOptions } from '../generation/watched-reload.ts';
import { serve, type Listening, type ServeOptions } from '../proxy/listeners.ts';
import { publicSessionId } from '../sessions/session-cache.ts';
import { isSessionDirectory, type SessionStore, type StoreObserver } from '../core/session-store.ts';
import { IdentityManager, managerSettings, type IdentityManagerOptions } from '../sessions/identity-manager.ts';
import { SessionRefresher, type SessionRefresherOptions } from '../sessions/session-refresher.ts';
import { usesRemoteDatabroker } from '../grpc/plan-options.ts';
import { serveDatabrokerGrpc, type DatabrokerGrpc } from './grpc-databroker.ts';
import { openAuthorizer } from '../authorize/open-authorizer.ts';
import type { RemoteAuthorizer } from '../authorize/remote-authorizer.ts';

export interface RunOptions extends Omit<ServeOptions, 'sessionStore' | 'tracing'>, Pick<ProcessTargets, 'logSettings' | 'notices'> {
  /** The tracer of the plan served, which follows each plan (the `tracing` part, runtime/generation/generation.ts). */
  readonly tracing?: NonNullable<ServeOptions['tracing']> & NonNullable<ProcessTargets['tracing']>;
  /** The session store to use instead of opening the plan's (tests share one between processes). */
  readonly sessionStore?: SessionStore;
  /** Told every storage operation of the store this process opens (docs/observability.md "Metric reference"). */
  readonly storeObserver?: StoreObserver;
  /**
   * The first plan, when the caller loaded it already (`svc run` does, to choose the role):
   * served as it is, so the config is compiled once at start. Reloads load from the files below.
   */
  readonly plan?: PlanEnvelope;
  /** Exactly one of the two. */
  readonly configPath?: string;
  readonly planPath?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** Reload when the watched files change (default true). */
  readonly watch?: boolean;
  /**
   * Told the compiler's warnings each time the config compiles: rendered as text (empty for none),
   * as diagnostics, and the plan they came with (whose log settings say how to print them).
   */
  readonly onWarnings?: (text: string, warnings: readonly Diagnostic[], plan: PlanEnvelope) => void;
  /** The identity manager's timings (tests shorten them; docs/authentication.md "Keeping sessions fresh"). */
  readonly identityManager?: IdentityManagerTuning;
  /** Autocert timing: renewal time, directory polling, back-off (defaults in runtime/tls/acme/). */
  readonly autocertTiming?: Pick<AutocertOptions, 'renewalTime' | 'pollMs' | 'backoff' | 'ocsp'>;
  /** Overrides `grpc_address` (tests listen on port 0; `--grpc-listen`). */
  readonly grpcListen?: { readonly host: string; readonly port: number };
}

/** What tests may tune of the identity manager and of the back-off toward the provider. */
export type IdentityManagerTuning = Pick<IdentityManagerOptions, 'leaseTtlMs' | 'scanIntervalMs' | 'refreshMarginMs' | 'concurrency'> & Pick<SessionRefresherOptions, 'backOff'>;

/**
 * The identity manager of a process holding a session store (the single `svc run` process, the
 * cluster primary, the data broker role), with the refresher it shares with the request path; none
 * when the store cannot list sessions and hold a lease, or is a data broker service's (`remote`: the
 * data broker role runs the manager where the sessions are; docs/authentication.md "Keeping sessions fresh").
 */
export function startIdentityManager(
  sessions: SessionStore,
  settings: IdentityManagerOptions['settings'],
  options: Pick<RunOptions, 'log' | 'identityManager'>,
  remote = false,
): { readonly refresher: SessionRefresher; readonly manager: IdentityManager | undefined } {
  const { backOff, ...tuning } = options.identityManager ?? {};
  const log = options.log ? { log: options.log } : {};
  const refresher = new SessionRefresher(sessions, { logId: publicSessionId, ...log, ...(backOff ? { backOff } : {}) });
  if (remote || !isSessionDirectory(sessions)) return { refresher, manager: undefined };
  const manager = new IdentityManager({ store: sessions, refresher, settings, logId: publicSessionId, ...log, ...tuning });
  manager.start();
  return { refresher, manager };
}

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

/**
 * Thrown when the first plan cannot be loaded: `svc run` exits with the message (text), or with
 * `details` as JSON log lines: the compiler's error diagnostics (`SVC_ERR_CONFIG_INVALID`) or one
 * entry per refused setting (`SVC_ERR_UNSUPPORTED_SETTING`); empty when the message is all there is.
 */
export class RunError extends Error {
  constructor(
    readonly code: 'SVC_ERR_CONFIG_INVALID' | 'SVC_ERR_PLAN_INVALID' | typeof UNSUPPORTED_SETTING,
    message: string,
    readonly details: { readonly diagnostics?: readonly Diagnostic[]; readonly refused?: readonly Record<string, unknown>[] } = {},
  ) {
    super(message);
    this.name = 'RunError';
  }
}

/**
 * Loads the plan to serve: compiles the config, or reads and checks the plan file; a plan using a
 * setting svc run does not implement is refused (runtime/plan/capabilities.ts). Throws `RunError`.
 */
export function loadForRun(options: Pick<RunOptions, 'configPath' | 'planPath' | 'env' | 'onWarnings'>): PlanEnvelope {
  const plan = load(options);
  const refused = refusal(plan);
  if (refused !== undefined) throw new RunError(UNSUPPORTED_SETTING, refused, { refused: refusalEntries(plan) });
  return plan;
}

function load(options: Pick<RunOptions, 'configPath' | 'planPath' | 'env' | 'onWarnings'>): PlanEnvelope {
  if (options.planPath !== undefined) {
    try {
      return parsePlan(readFileSync(options.planPath, 'utf8'), options.planPath);
    } catch (e) {
      if (e instanceof PlanLoadError || (e as NodeJS.ErrnoException).code !== undefined) throw new RunError('SVC_ERR_PLAN_INVALID', (e as Error).message);
      throw e;
    }
  }
  const result = compile({
    ...(options.configPath !== undefined ? { configPath: options.configPath } : {}),
    env: options.env ?? process.env,
    readFile: (p) => {
      try {
        return { ok: true, data: readFileSync(p) };
      } catch (e) {
        return { ok: false, reason: (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (e as Error).message };
      }
    },
  });
  if (!result.plan) {
    const errors = result.diagnostics.filter((d) => d.severity === 'error');
    throw new RunError('SVC_ERR_CONFIG_INVALID', renderText(errors, isSecretPath), { diagnostics: errors });
  }
  const warnings = result.diagnostics.filter((d) => d.severity !== 'error');
  options.onWarnings?.(renderText(warnings, isSecretPath), warnings, result.plan);
  return result.plan;
}

/** The reload path's view of a role's options: the plan loaded as at start, the file to watch. */
export function watchedReloadOptions(options: RunOptions): WatchedReloadOptions {
  return { load: () => loadForRun(options), source: options.planPath ?? options.configPath, watch: options.watch, log: options.log };
}

/** What the process parts of a generation apply each plan to (log settings, tracing, notices). */
export function processTargets(options: Pick<RunOptions, 'logSettings' | 'tracing' | 'notices'>): ProcessTargets {
  return { logSettings: options.logSettings, tracing: options.tracing, notices: options.notices };
}

/** The first plan of a process: the one the caller loaded (`options.plan`), else loaded now. */
export function firstPlan(options: RunOptions): PlanEnvelope {
  return options.plan ?? loadForRun(options);
}

/** Starts serving. Resolves once the listener listens. */
export async function run(options: RunOptions): Promise<Running> {
  const plan = firstPlan(options);
  // The plan's log settings apply from its own generation's first part on (`logSettings`).
  // Metrics (when `metrics_address` is set): upstream health is read from the generation in service.
  let served: ServedStore | undefined;
  // The identity manager and the store (made below) are read at scrape time.
  const metrics = metricsFor(plan, 'loader', { identityManager: () => manager?.figures(), ...(hasStorePool(plan.body.settings) ? { storePool: () => opened?.pool() } : {}), upstreams: () => (served ? upstreamSnapshots(served.current.forward, served.current.plan.body.routes) : []) });
  // Process-wide, outside generations: certificates outlive plans; each swap updates the names
  // (the `autocertNames` provisioner, runtime/generation/generation.ts).
  const autocert = startAutocert(plan.body, { ...options.autocertTiming, ...(options.log ? { log: options.log } : {}) });
  const generations = await startGenerations(plan, {
    ...processTargets(options),
    scheme: plan.body.settings.server.insecure ? 'http' : 'https',
    ephemeralKey: lazyEphemeralKey(options.log),
    ...(options.log ? { log: options.log } : {}),
    ...(metrics ? { upstreamObserver: metrics.upstream } : {}),
    ...(autocert ? { autocert } : {}),
  });
  const store = (served = generations.store);
  // One memory data broker per process (docs/scale-out.md), unless the caller gives the store; with metrics
  // it is timed here (storage_operation_duration_ms) and probed for readiness.
  const opened = options.sessionStore ? undefined : openObservedStore(plan.body.settings, metrics?.store ?? options.storeObserver, options.log, metrics?.grpc);
  const sessions: SessionStore = options.sessionStore ?? opened!.store;
  const closeSessions = () => (options.sessionStore ? Promise.resolve() : sessions.close());
  // The manager follows the generation in service (a reload changes its provider and intervals).
  const { refresher, manager } = startIdentityManager(sessions, () => managerSettings(store.current.auth), options, usesRemoteDatabroker(plan.body.settings));
  let listening: Listening;
  let observed: LoaderMetrics | undefined;
  let closing = false;
  // The data broker's state for /healthz (never for readiness: every replica shares it).
  const databroker = metrics ? watchDatabroker({ store: () => sessions, ...(opened ? { pool: () => opened.pool() } : {}), ...(options.log ? { log: options.log } : {}) }) : undefined;
  let grpc: DatabrokerGrpc | undefined;
  let authorizer: RemoteAuthorizer | undefined;
  try {
    // The all-in-one process also serves its data broker over gRPC (for tools and extra
    // proxies), unless it is itself a client of a data broker service.
    if (!usesRemoteDatabroker(plan.body.settings) && isSessionDirectory(sessions)) {
      grpc = await serveDatabrokerGrpc(plan.body, sessions, {
        ...(options.grpcListen ? { listen: options.grpcListen } : {}),
        material: store.current.tls?.material ?? null,
        ...(metrics ? { observer: metrics.grpc } : {}),
        ...(options.log ? { log: options.log } : {}),
      });
    }
    // The proxy role asks the authorize service for policy verdicts (runtime/authorize/).
    if (plan.body.settings.mode.services === 'proxy') authorizer = openAuthorizer(plan.body.settings, sessions, { ...(metrics ? { observer: metrics.grpc } : {}), ...(options.log ? { log: options.log } : {}) });
    listening = await serve(store, { ...options, probes: { ready: () => !closing }, ...(metrics ? { observe: metrics, graceObserver: metrics.sessions } : {}), sessionStore: sessions, sessionRefresher: refresher, ...(autocert ? { acmeChallenges: autocert.challenges, ocsp: autocert.ocsp } : {}), ...(authorizer ? { authorizer } : {}) });
    if ('setSecureContext' in listening.server) generations.serveDefaultCertificate(listening.server);
    if (metrics) {
      const up = listening;
      // Ready: a plan is in service (from here on) and svc is not draining. The data broker is
      // reported by /healthz, never a reason to be unready (health.ts).
      observed = await startLoaderMetrics(metrics, plan, { ready: { plan: () => true, draining: () => !closing }, health: { databroker: () => databroker!.state() }, ...(options.log ? { log: options.log } : {}) }).catch(async (e: unknown) => {
        await up.close();
        throw e;
      });
    }
  } catch (e) {
    databroker?.close();
    autocert?.close();
    authorizer?.close();
    await grpc?.close(0);
    await manager?.close();
    await generations.close();
    await closeSessions();
    throw e;
  }
  const reloads = await startWatchedReload(watchedReloadOptions(options), generations, () => observed);
  const reload = reloads.reload;

  return {
    store,
    sessions,
    identityManager: manager,
    listening,
    grpc,
    reload,
    lastReload: () => reloads.last(),
    autocert,
    close: async () => {
      closing = true;
      autocert?.close();
      await reloads.close();
      await manager?.close();
      databroker?.close();
      await observed?.close();
      await listening.close();
      authorizer?.close();
      await grpc?.close(0);
      await generations.close();
      await closeSessions();
    },
    drain: async (timeoutMs, delayMs = 0) => {
      closing = true;
      await reloads.close();
      // The lease goes first, so another instance's identity manager takes over without waiting for its expiry.
      await manager?.close();
      // Connections are still accepted (and answered) while a load balancer notices /readyz failing.
      await shutdownDelay(delayMs);
      await listening.drain(timeoutMs);
      authorizer?.close();
      // Other services may use this data broker until the listeners are drained.
      await grpc?.close();
      autocert?.close();
      databroker?.close();
      await observed?.close();
      await generations.close();
      await closeSessions();
    },
  };
}
