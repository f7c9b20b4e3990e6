/**
 * Both cores (docs/architecture.md §5): a primary process compiles or loads the plan, watches its files, and
 * runs N workers (node:cluster). The primary listens on the main address and hands each connection to
 * a serving worker in turn, so that it alone decides when the address refuses connections (below). A reload is the one reload path
 * (runtime/generation/reload.ts) with the workers as the place the generation is built: every plan goes
 * to every worker as its checked JSON text; each verifies it again (schema, checksum), builds its
 * generation and answers, and the primary commits only when every worker accepted (two phases), so
 * the workers never serve different plans and never one the primary did not accept. A worker that
 * dies is replaced and gets the committed plan. The session store lives in the primary (the one
 * in-memory data broker (docs/scale-out.md), or the Redis client): workers reach it over the cluster IPC
 * channel (runtime/databroker/ipc-store.ts).
 * The worker side is runtime/process/worker.ts, which loads no compiler code.
 *
 * The shadow plan of `--shadow` (docs/running.md "Shadow plans") is loaded here too, with every
 * plan, and sent beside it as checked JSON text; each worker decides with it. A shadow that fails to
 * load is logged here and the last good one is sent again (or none): it never refuses the plan.
 */
import cluster, { type Worker } from 'node:cluster';
import { createServer as createNetServer, type Socket } from 'node:net';
import { availableParallelism } from 'node:os';
import { prettyJson } from '../../compiler/plan/canonical-json.ts';
import type { PlanEnvelope } from '../../compiler/plan/types.ts';
import { serveStoreToWorkers } from '../databroker/ipc-store.ts';
import { exportEphemeralKey } from '../authn/signing-key.ts';
import { lazyEphemeralKey, startProcessGenerations, type Generations, type Prepared, type ProcessParts } from '../generation/generation.ts';
import type { ReloadResult } from '../generation/reload.ts';
import { loadForRun, loadShadowForRun, refuseShadowOutsideAllInOne } from './load-plan.ts';
import type { SvcMetrics } from '../observe/metrics/registry.ts';
import { startProcess, type RoleGenerations, type RunOptions } from './startup.ts';
import type { DatabrokerGrpc } from './grpc-databroker.ts';
import { loadGrpcModule } from '../grpc/library-log.ts';
import { usesRemoteDatabroker } from '../grpc/plan-options.ts';
import { isSessionDirectory } from '../core/session-store.ts';
import { buildAuthState, type AuthState } from '../authn/auth-state.ts';
import { managerSettings, type IdentityManagerSettings } from '../sessions/identity-manager.ts';
import type { ConnectionMessage, ToPrimary, ToWorker } from './worker.ts';
import { bind } from '../tls/bind.ts';
import { SvcError } from '../core/errors.ts';
import { workerExecArgv } from './young-generation.ts';

export interface ClusterOptions extends RunOptions {
  /** Workers to run; default: one per core. */
  readonly workers?: number;
}

/** A worker refused a plan (or did not answer): the primary aborted the reload, nobody swapped. */
export class WorkerRefusedError extends SvcError<'SVC_ERR_WORKER_REFUSED_PLAN'> {
  constructor(message: string) {
    super('SVC_ERR_WORKER_REFUSED_PLAN', message);
    this.name = 'WorkerRefusedError';
  }
}

/** How long the primary waits for a worker's answer to `prepare` before counting it a refusal. */
const PREPARE_TIMEOUT_MS = 30_000;

/**
 * Runs the primary: forks workers, feeds them plans, replaces the dead. Resolves with a stop
 * function once every worker listens.
 */
export async function runPrimary(
  options: ClusterOptions,
  workerArgs: readonly string[],
): Promise<{ stop(): Promise<void>; now(): void; readonly port: number; reload(): Promise<ReloadResult>; readonly grpcAddress: string | undefined }> {
  let committed = options.plan ?? (await loadForRun(options));
  refuseShadowOutsideAllInOne(options.shadow, committed);
  // The shadow plan: the text last loaded well (sent with every plan), and the one committed.
  let shadowMetrics: SvcMetrics['shadow'] | undefined;
  let goodShadow: { readonly text: string; readonly checksum: string } | undefined;
  const loadShadow = async (): Promise<typeof goodShadow> => {
    const path = options.shadow;
    if (path === undefined) return undefined;
    try {
      const p = await loadShadowForRun(path, options.env);
      goodShadow = { text: prettyJson(p), checksum: p.checksum };
      shadowMetrics?.attempted(true);
    } catch (e) {
      shadowMetrics?.attempted(false);
      const code = (e as { code?: unknown }).code;
      options.log?.({ level: 'error', msg: goodShadow ? 'shadow plan not loaded; keeping the last good shadow plan' : 'shadow plan not loaded; no shadow plan in service', code: typeof code === 'string' ? code : 'SVC_ERR_SHADOW_INVALID', shadow: path, error: (e as Error).message });
    }
    return goodShadow;
  };
  let committedShadow = await loadShadow();
  const count = Math.max(1, options.workers ?? availableParallelism());
  let port = 0;
  let stopping = (): boolean => false;
  // One key per svc (docs/authentication.md "Identity for upstreams"): without signing_key every worker signs with this one.
  const ephemeralKey = lazyEphemeralKey(options.log);
  const keyFor = (p: PlanEnvelope) => (p.body.settings.identity.signingKey ? {} : { ephemeralKey: exportEphemeralKey(ephemeralKey()) });
  // Default ('json') IPC serialization: session records are JSON values (see ipc-store.ts).
  // A worker's young generation is sized for proxy load (young-generation.ts) unless the operator chose.
  cluster.setupPrimary({ args: [...workerArgs], execArgv: workerExecArgv(process.execArgv, process.env['NODE_OPTIONS']), silent: false });

  // Workers that take connections, in turn; connections wait here while none does (at start, or
  // while the only one is being replaced).
  const rotation: Worker[] = [];
  let next = 0;
  const queued: Socket[] = [];
  const handOver = (socket: Socket): void => {
    socket.on('error', () => undefined);
    const live = rotation.filter((w) => w.isConnected());
    if (live.length === 0) {
      queued.push(socket);
      return;
    }
    const w = live[next++ % live.length]!;
    w.send({ type: 'connection' } satisfies ConnectionMessage, socket, (e) => {
      if (e) socket.destroy();
    });
  };
  const leaveRotation = (w: Worker) => {
    const i = rotation.indexOf(w);
    if (i >= 0) rotation.splice(i, 1);
    // Stopping and no worker left to take a connection: refuse them from now on.
    if (stopping() && rotation.length === 0) closeAcceptor();
  };
  let acceptorClosed = false;
  const closeAcceptor = () => {
    if (acceptorClosed) return;
    acceptorClosed = true;
    acceptor.close();
    for (const socket of queued.splice(0)) socket.destroy();
  };
  // The main address: this process listens on it and hands each connection to a serving worker in
  // turn (workers bind nothing there). Node's own round robin cannot be told to stop accepting:
  // while its last worker closed, a connection it was handing to that worker stayed open in the
  // primary and unanswered until svc exited. Here the primary closes the address once the last
  // worker has left the rotation (after the shutdown delay), so a new connection is served before
  // that and refused (ECONNREFUSED) after it. `pauseOnConnect`: the primary reads nothing.
  const acceptor = createNetServer({ pauseOnConnect: true }, (socket) => handOver(socket));

  // Workers that were sent the committed plan: the ones a reload asks. A worker that asks for its
  // first plan while a reload is under way waits for the outcome and gets the plan committed then.
  const started = new Set<Worker>();
  let reloading = false;
  const waiting: Worker[] = [];
  let address: { host: string; port: number } | undefined;
  const start = (w: Worker) => {
    if (w.isDead()) return;
    started.add(w);
    w.send({ type: 'start', text: prettyJson(committed), ...keyFor(committed), ...(committedShadow ? { shadow: committedShadow.text } : {}), listen: address! } satisfies ToWorker);
  };
  const endReload = () => {
    reloading = false;
    for (const w of waiting.splice(0)) start(w);
  };
  let seq = 0;
  /**
   * Every started worker builds the plan's generation and answers; all accepted: commit (each
   * swaps); any refused: abort (none swaps) and the reload fails naming the worker and its reason.
   * A worker that dies meanwhile has no say: its replacement starts on whatever is committed.
   */
  const prepareWorkers = async (plan: PlanEnvelope): Promise<Prepared> => {
    reloading = true;
    const id = ++seq;
    const voters = [...started].filter((w) => !w.isDead());
    const shadow = await loadShadow();
    const message = { type: 'prepare', id, text: prettyJson(plan), ...keyFor(plan), ...(shadow ? { shadow: shadow.text } : {}) } satisfies ToWorker;
    let refusals: string[];
    try {
      const answers = await Promise.all(voters.map((w) => ask(w, id, message)));
      refusals = answers.filter((a): a is string => a !== undefined);
    } catch (e) {
      endReload();
      throw e;
    }
    const decide = (type: 'commit' | 'abort') => {
      for (const w of voters) if (!w.isDead()) w.send({ type, id } satisfies ToWorker);
    };
    if (refusals.length > 0) {
      decide('abort');
      endReload();
      throw new WorkerRefusedError(refusals.join('; '));
    }
    let settled = false;
    return {
      commit: () => {
        if (settled) return;
        settled = true;
        committed = plan;
        committedShadow = shadow;
        shadowMetrics?.inService(shadow?.checksum ?? null);
        decide('commit');
        endReload();
      },
      abort: () => {
        if (settled) return;
        settled = true;
        decide('abort');
        endReload();
      },
    };
  };
  const liveWorkers = () => Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined && !w.isDead());
  let grpc: DatabrokerGrpc | undefined;

  // The identity manager runs here, where the store is held, never in a worker (docs/authentication.md
  // "Keeping sessions fresh"). It follows the committed plan: its provider client is built here from
  // that plan, as a worker builds its own.
  let auth: AuthState | undefined;
  function idmSettings(): IdentityManagerSettings {
    if (auth?.body !== committed.body) {
      try {
        auth = buildAuthState(committed.body, committed.body.settings.server.insecure ? 'http' : 'https', auth, ephemeralKey);
      } catch (e) {
        // The workers accepted this plan, so its secrets were readable a moment ago; try again next scan.
        options.log?.({ msg: 'identity manager: cannot build the identity provider of the committed plan', error: (e as Error).message });
        return auth ? managerSettings(auth) : { idp: null, directoryIntervalMs: committed.body.settings.idp.refreshDirectoryIntervalMs, directoryTimeoutMs: committed.body.settings.idp.refreshDirectoryTimeoutMs };
      }
    }
    return managerSettings(auth);
  }

  const p = await startProcess<PrimaryGenerations>(
    { ...options, plan: committed },
    {
      // The plan's store lives here (memory: the one data broker; Redis: one client for every worker).
      ownStore: true,
      identityManager: () => idmSettings(),
      // The primary's own generations: the parts every process has (log settings, notices, the
      // metrics listener's material), applied from here on and after each commit; its workers
      // build the rest. A reload builds the primary's parts and every worker's generation; the
      // workers commit first. No tracer: the primary serves no request, so it would make no span
      // (the workers trace), and OpenTelemetry stays out of its heap.
      async generations(plan, targets) {
        const own = await startProcessGenerations(plan, { ...targets, tracing: undefined, log: options.log });
        return {
          store: own.store,
          plan: () => committed,
          close: () => own.close(),
          prepare: async (next) => {
            const mine = await own.prepare(next);
            let theirs: Prepared;
            try {
              theirs = await prepareWorkers(next);
            } catch (e) {
              mine.abort();
              throw e;
            }
            return {
              commit: () => {
                theirs.commit();
                mine.commit();
              },
              abort: () => {
                theirs.abort();
                mine.abort();
              },
            };
          },
        };
      },
      async serve({ plan, metrics, sessions, closing }) {
        stopping = closing;
        // The primary's shadow gauges, aggregated by minimum with the workers' (observe/metrics/shadow.ts).
        shadowMetrics = metrics?.shadow;
        shadowMetrics?.inService(committedShadow?.checksum ?? null);
        if (options.shadow !== undefined && committedShadow === undefined) shadowMetrics?.attempted(false);
        // Served before the first fork, so a worker's first store request always finds it.
        const storeService = serveStoreToWorkers(sessions, cluster);
        try {
          // The data broker is also served over gRPC, from here where the store is held (before
          // any worker is forked: a listener that cannot bind stops svc at start).
          if (!usesRemoteDatabroker(plan.body.settings) && isSessionDirectory(sessions)) {
            const { serveDatabrokerGrpc } = await loadGrpcModule(() => import('./grpc-databroker.ts'));
            grpc = await serveDatabrokerGrpc(plan.body, sessions, {
              ...(options.grpcListen ? { listen: options.grpcListen } : {}),
              ...(metrics ? { observer: metrics.grpc } : {}),
              ...(options.log ? { log: options.log } : {}),
            });
          }
          address = await bind(acceptor, options.listen ?? plan.body.settings.server.address);
        } catch (e) {
          await grpc?.close(0);
          storeService.close();
          throw e;
        }
        port = address.port;
        cluster.on('exit', (w, code, signal) => {
          if (closing()) return;
          options.log?.({ msg: 'worker died; replacing it', worker: w.process.pid, code, signal });
          void fork();
        });
        await Promise.all(Array.from({ length: count }, fork));
        const served = grpc;
        return {
          // Metrics: one scrape aggregating every worker's (runtime/observe/metrics/cluster.ts).
          ...(metrics ? { scrape: (await import('../observe/metrics/cluster.ts')).aggregatedScrape(metrics.registry, liveWorkers) } : {}),
          // Ready: also a worker serves the listener.
          ready: { listeners: () => liveWorkers().length > 0 },
          front: {
            // Graceful: every worker drains its requests and exits (asked over IPC, not by a signal:
            // a Ctrl-C reaches the workers too, and a worker counts a second signal as "stop at
            // once"). Each worker waits the shutdown delay itself (its own --shutdown-delay: the
            // primary's arguments). The metrics listener stays up until every worker is gone.
            drain: () => stopWorkers(),
            close: () => stopWorkers(),
          },
          // Only after the workers are gone: a worker draining its requests may still need sessions.
          behind: [{ stop: (draining) => served?.close(draining ? undefined : 0) }, { stop: () => storeService.close() }],
        };
      },
    },
  );

  // Workers started by `fork`, which resolves once the worker listens.
  function fork(): Promise<void> {
    return new Promise((resolve) => {
      const w = cluster.fork({ SVC_CLUSTER_WORKER: '1' });
      w.on('message', (m: ToPrimary) => {
        // A message sent before the worker listens for it would be lost: it asks when ready.
        if (m.type === 'ready') {
          if (reloading) waiting.push(w);
          else start(w);
        } else if (m.type === 'listening') {
          if (!stopping()) {
            rotation.push(w);
            for (const socket of queued.splice(0)) handOver(socket);
          }
          resolve();
        } else if (m.type === 'leaving') {
          leaveRotation(w);
          if (w.isConnected()) w.send({ type: 'left' } satisfies ToWorker);
        } else if (m.type === 'refused' && m.id === undefined) options.log?.({ msg: 'worker refused its first plan', worker: w.process.pid, error: m.error });
      });
      w.once('exit', () => {
        started.delete(w);
        leaveRotation(w);
      });
    });
  }
  async function stopWorkers(): Promise<void> {
    if (rotation.length === 0) closeAcceptor();
    await Promise.all(
      Object.values(cluster.workers ?? {}).map(
        (w) =>
          new Promise<void>((resolve) => {
            if (!w || w.isDead()) return resolve();
            w.once('exit', () => resolve());
            if (w.isConnected()) w.send({ type: 'stop' } satisfies ToWorker);
            else w.kill('SIGTERM');
          }),
      ),
    );
    closeAcceptor();
  }

  return {
    port,
    reload: p.reload,
    grpcAddress: grpc ? `${grpc.address.host}:${grpc.address.port}` : undefined,
    stop: () => p.drain(0, 0),
    now: () => {
      closeAcceptor();
      for (const w of Object.values(cluster.workers ?? {})) {
        if (!w || w.isDead()) continue;
        if (w.isConnected()) w.send({ type: 'exit' } satisfies ToWorker);
        else w.kill('SIGKILL');
      }
    },
  };
}

/** The primary's generations: its own parts, and a prepare that asks every worker too. */
interface PrimaryGenerations extends RoleGenerations {
  readonly store: Generations<ProcessParts>['store'];
}

/**
 * Sends `prepare` to one worker and waits for its answer: undefined when it accepted (or died, and
 * so has no say), else why it refused.
 */
function ask(w: Worker, id: number, message: ToWorker): Promise<string | undefined> {
  return new Promise((resolve) => {
    const pid = w.process.pid;
    const done = (answer: string | undefined) => {
      clearTimeout(timer);
      w.off('message', onMessage);
      w.off('exit', onExit);
      resolve(answer);
    };
    const onMessage = (m: ToPrimary) => {
      if (m.type === 'prepared' && m.id === id) done(undefined);
      else if (m.type === 'refused' && m.id === id) done(`worker ${pid} refused the plan: ${m.error}`);
    };
    const onExit = () => done(undefined);
    const timer = setTimeout(() => done(`worker ${pid} did not answer within ${PREPARE_TIMEOUT_MS / 1000} s`), PREPARE_TIMEOUT_MS);
    w.on('message', onMessage);
    w.once('exit', onExit);
    w.send(message);
  });
}
