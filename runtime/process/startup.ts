/**
 * The one startup and stop sequence of every process that loads plans (docs/architecture.md §5
 * "Processes"): the single `svc run` process (run.ts), the data broker and authorize roles
 * (databroker-run.ts, authorize-run.ts) and the cluster primary (cluster.ts). A role says only what
 * is its own: how its generations are built, the identity manager's settings where it runs one,
 * and what it serves (`RoleSpec`). Everything else happens here, once, in this order:
 *
 *   first plan (loaded once: the caller's, else loaded now) → metrics → the role's generations →
 *   session store → identity manager (where the store is held) → the data broker's state for
 *   /healthz → the role's listeners (`serve`) → the metrics listener, with the first generation's
 *   material → the file watcher and reload path (runtime/generation/watched-reload.ts).
 *
 * A failure at any step closes what was started, newest first, and rejects. The stop is one
 * sequence too: readiness fails at once, the watcher stops, the identity manager gives up its
 * lease, the shutdown delay passes while the listeners still accept, the role's front drains, then
 * what stood behind it, the metrics listener last among listeners, the generations, the store.
 */
import type { PlanEnvelope } from '../../compiler/plan/types.ts';
import type { SessionStore, StoreObserver } from '../core/session-store.ts';
import { isSessionDirectory } from '../core/session-store.ts';
import { hasStorePool, openObservedStore } from '../databroker/observed-store.ts';
import type { ProcessParts, ProcessTargets } from '../generation/generation.ts';
import type { ReloadResult } from '../generation/reload.ts';
import { metricsFor, startLoaderMetrics, type LoaderMetrics } from '../generation/run-metrics.ts';
import { startWatchedReload, type ReloadTarget } from '../generation/watched-reload.ts';
import { usesRemoteDatabroker } from '../grpc/plan-options.ts';
import { watchDatabroker } from '../observe/metrics/health.ts';
import type { Scrape } from '../observe/metrics/listener.ts';
import type { MetricsOptions, SvcMetrics } from '../observe/metrics/registry.ts';
import type { ServeOptions } from '../proxy/listeners.ts';
import { IdentityManager, type IdentityManagerOptions, type IdentityManagerSettings } from '../sessions/identity-manager.ts';
import { publicSessionId } from '../sessions/session-cache.ts';
import { SessionRefresher, type SessionRefresherOptions } from '../sessions/session-refresher.ts';
import type { AutocertOptions } from '../tls/acme/manager.ts';
import { loadForRun, type PlanSource } from './load-plan.ts';
import { shutdownDelay } from './stop-signals.ts';

/** The options of every role of `svc run` (the cluster primary and worker add theirs). */
export interface RunOptions extends Omit<ServeOptions, 'sessionStore' | 'tracing'>, Pick<ProcessTargets, 'logSettings' | 'notices'>, PlanSource {
  /** The tracer of the plan served, which follows each plan (the `tracing` part, runtime/generation/generation.ts). */
  readonly tracing?: NonNullable<ServeOptions['tracing']> & NonNullable<ProcessTargets['tracing']>;
  /** The session store to use instead of opening the plan's (tests share one between processes). */
  readonly sessionStore?: SessionStore;
  /** Told every storage operation of the store this process opens (docs/observability.md "Metric reference"). */
  readonly storeObserver?: StoreObserver;
  /**
   * The first plan, when the caller loaded it already (`svc run` does, to choose the role):
   * served as it is, so the config is compiled once at start. Reloads load from the files.
   */
  readonly plan?: PlanEnvelope;
  /** Reload when the watched files change (default true). */
  readonly watch?: boolean;
  /** The identity manager's timings (tests shorten them; docs/authentication.md "Keeping sessions fresh"). */
  readonly identityManager?: IdentityManagerTuning;
  /** Autocert timing: renewal time, directory polling, back-off (defaults in runtime/tls/acme/). */
  readonly autocertTiming?: Pick<AutocertOptions, 'renewalTime' | 'pollMs' | 'backoff' | 'ocsp'>;
  /** Overrides `grpc_address` (tests listen on port 0; `--grpc-listen`). */
  readonly grpcListen?: { readonly host: string; readonly port: number };
  /**
   * `--shadow FILE`: the candidate plan (a plan file or a config) decided beside the enforced one
   * (docs/running.md "Shadow plans"); loaded at start and on each reload, its file watched too.
   */
  readonly shadow?: string;
}

/** What tests may tune of the identity manager and of the back-off toward the provider. */
export type IdentityManagerTuning = Pick<IdentityManagerOptions, 'leaseTtlMs' | 'scanIntervalMs' | 'refreshMarginMs' | 'concurrency'> & Pick<SessionRefresherOptions, 'backOff'>;

/** The parts of this process that follow the plan in service (log settings, tracing, notices). */
function processTargets(options: Pick<RunOptions, 'logSettings' | 'tracing' | 'notices'>): ProcessTargets {
  return { logSettings: options.logSettings, tracing: options.tracing, notices: options.notices };
}

/** What the startup needs of a role's generations: the reload target, the generation in service, a close. */
export interface RoleGenerations extends ReloadTarget {
  /** The generation in service; the metrics listener starts with its material. */
  readonly store: { readonly current: Pick<ProcessParts, 'metricsMaterial'> };
  close(): Promise<void>;
}

/** One thing a role started that stops after its front. */
export interface Behind {
  /** `draining`: the graceful stop (a gRPC listener lets calls finish), else at once. */
  stop(draining: boolean): Promise<void> | void;
}

/** What a role serves with, as the startup stops it. */
export interface RoleServing {
  /** What takes connections or calls: drained on the graceful stop (at most `timeoutMs`), closed at once otherwise. */
  readonly front: { drain(timeoutMs: number): Promise<void>; close(): Promise<void> };
  /** Stopped after the front, in this order. */
  readonly behind: readonly Behind[];
  /** Readiness besides "a plan is in service" and "not draining" (the primary: a worker serves). */
  readonly ready?: Readonly<Record<string, () => boolean>>;
  /** What `/metrics` serves, when not this process's own registry (the primary: every worker's). */
  readonly scrape?: Scrape;
}

/** What a role's `serve` gets: everything started before it. */
export interface StartContext<G> {
  readonly plan: PlanEnvelope;
  readonly generations: G;
  readonly metrics: SvcMetrics | undefined;
  readonly sessions: SessionStore;
  /** The identity manager's refresher, shared with the request path (undefined where no manager runs). */
  readonly refresher: SessionRefresher | undefined;
  /** True from the moment the process stops (readiness answers 503 `draining`). */
  readonly closing: () => boolean;
}

/** What is a role's own in the startup sequence. */
export interface RoleSpec<G extends RoleGenerations> {
  /** The role serves the plan's store: it opens its own even when the caller gives one. */
  readonly ownStore?: boolean;
  /**
   * The identity manager's settings, read at each scan from the generations in service; absent for
   * a role that runs no identity manager (it reads sessions from the data broker service).
   */
  readonly identityManager?: (generations: G) => IdentityManagerSettings;
  /** Metrics sources besides the identity manager and the store pool (the upstream sets). */
  readonly metricsSources?: (generations: () => G | undefined) => Pick<MetricsOptions, 'upstreams'>;
  /** Builds the first generation, with the targets the process's parts follow and the process's metrics. */
  generations(plan: PlanEnvelope, targets: ProcessTargets, metrics: SvcMetrics | undefined): Promise<G>;
  /** Starts what the role serves; on failure it closes what it started itself, then rejects. */
  serve(context: StartContext<G>): Promise<RoleServing>;
}

/** A started process: what every role's handle is made of. */
export interface StartedProcess<G> {
  readonly generations: G;
  readonly sessions: SessionStore;
  readonly identityManager: IdentityManager | undefined;
  reload(): Promise<ReloadResult>;
  lastReload(): ReloadResult | undefined;
  /** Stops at once. */
  close(): Promise<void>;
  /** Stops gracefully: the shutdown delay `delayMs`, then the front drains for at most `timeoutMs`. */
  drain(timeoutMs: number, delayMs?: number): Promise<void>;
}

/**
 * The identity manager of a process holding a session store, with the refresher it shares with the
 * request path; no manager when the store cannot list sessions and hold a lease, or is a data
 * broker service's (`remote`: the data broker role runs the manager where the sessions are;
 * docs/authentication.md "Keeping sessions fresh").
 */
function startIdentityManager(
  sessions: SessionStore,
  settings: IdentityManagerOptions['settings'],
  options: Pick<RunOptions, 'log' | 'identityManager'>,
  remote: boolean,
): { readonly refresher: SessionRefresher; readonly manager: IdentityManager | undefined } {
  const { backOff, ...tuning } = options.identityManager ?? {};
  const log = options.log ? { log: options.log } : {};
  const refresher = new SessionRefresher(sessions, { logId: publicSessionId, ...log, ...(backOff ? { backOff } : {}) });
  if (remote || !isSessionDirectory(sessions)) return { refresher, manager: undefined };
  const manager = new IdentityManager({ store: sessions, refresher, settings, logId: publicSessionId, ...log, ...tuning });
  manager.start();
  return { refresher, manager };
}

/** Starts a process of `role` (see the file comment). Resolves once it serves; rejects, with everything closed, when it cannot. */
export async function startProcess<G extends RoleGenerations>(options: RunOptions, role: RoleSpec<G>): Promise<StartedProcess<G>> {
  const plan = options.plan ?? (await loadForRun(options));
  const settings = plan.body.settings;
  const log = options.log ? { log: options.log } : {};
  let generations: G | undefined;
  let opened: Awaited<ReturnType<typeof openObservedStore>> | undefined;
  let manager: IdentityManager | undefined;
  let observed: LoaderMetrics | undefined;
  let closing = false;
  // The identity manager and the store (made below) are read at scrape time.
  const metrics = await metricsFor(plan, 'loader', {
    identityManager: () => manager?.figures(),
    ...(hasStorePool(settings) ? { storePool: () => opened?.pool() } : {}),
    ...role.metricsSources?.(() => generations),
  });
  const targets: ProcessTargets = { ...processTargets(options), ...(metrics ? { metricsListener: () => observed?.listener } : {}) };
  const g = (generations = await role.generations(plan, targets, metrics));

  // Newest first on failure: what was started so far.
  const started: (() => Promise<void> | void)[] = [() => g.close()];
  const unwind = async () => {
    for (const close of started.reverse()) await close();
  };
  let sessions: SessionStore;
  let refresher: SessionRefresher | undefined;
  let serving: RoleServing;
  let databroker: ReturnType<typeof watchDatabroker> | undefined;
  try {
    // One data broker per process (docs/scale-out.md), unless the caller gives the store; with
    // metrics it is timed here (storage_operation_duration_ms).
    const given = role.ownStore ? undefined : options.sessionStore;
    opened = given ? undefined : await openObservedStore(settings, metrics?.store ?? options.storeObserver, options.log, metrics?.grpc);
    const store = (sessions = given ?? opened!.store);
    if (opened) started.push(() => store.close());
    // The manager follows the generation in service (a reload changes its provider and intervals).
    if (role.identityManager) {
      const settingsOf = role.identityManager;
      const m = startIdentityManager(store, () => settingsOf(g), options, usesRemoteDatabroker(settings));
      refresher = m.refresher;
      manager = m.manager;
      if (manager) {
        const running = manager;
        started.push(() => running.close());
      }
    }
    // The data broker's state for /healthz (never for readiness: every replica shares it).
    if (metrics) {
      const watch = (databroker = watchDatabroker({ store: () => store, ...(opened ? { pool: () => opened!.pool() } : {}), ...log }));
      started.push(() => watch.close());
    }
    serving = await role.serve({ plan, generations: g, metrics, sessions: store, refresher, closing: () => closing });
    const up = serving;
    started.push(async () => {
      await up.front.close();
      for (const b of up.behind) await b.stop(false);
    });
    if (metrics) {
      const watch = databroker!;
      // Ready: a plan is in service (from here on) and svc is not draining, and the role's own checks.
      observed = await startLoaderMetrics(metrics, plan, {
        material: g.store.current.metricsMaterial,
        ...(serving.scrape ? { scrape: serving.scrape } : {}),
        ready: { plan: () => true, draining: () => !closing, ...serving.ready },
        health: { databroker: () => watch.state() },
        ...log,
      });
    }
  } catch (e) {
    closing = true;
    await unwind();
    throw e;
  }
  const reloads = await startWatchedReload({ load: () => loadForRun(options), source: options.planPath ?? options.configPath, also: options.shadow !== undefined ? [options.shadow] : [], watch: options.watch, ...log }, g, () => observed);

  const front = serving.front;
  const stop = async (draining: boolean, timeoutMs: number, delayMs: number) => {
    closing = true;
    await reloads.close();
    // The lease goes first, so another instance's identity manager takes over without waiting for its expiry.
    await manager?.close();
    // Connections are still accepted (and answered) while a load balancer notices /readyz failing.
    await shutdownDelay(delayMs);
    await (draining ? front.drain(timeoutMs) : front.close());
    for (const b of serving.behind) await b.stop(draining);
    databroker?.close();
    await observed?.close();
    await g.close();
    if (opened) await sessions.close();
  };
  return {
    generations: g,
    sessions,
    identityManager: manager,
    reload: reloads.reload,
    lastReload: () => reloads.last(),
    close: () => stop(false, 0, 0),
    drain: (timeoutMs, delayMs = 0) => stop(true, timeoutMs, delayMs),
  };
}
