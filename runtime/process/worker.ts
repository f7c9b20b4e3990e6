/**
 * One `svc run --workers` worker (the primary is runtime/process/cluster.ts): waits for its first plan
 * from the primary and serves it; later plans go through the one reload path (runtime/generation/reload.ts)
 * in two phases: `prepare` checks the plan again (schema, checksum, listener shape) and builds its
 * generation with every provisioner, then answers `prepared` or `refused` without swapping; the
 * primary's `commit` swaps it in, its `abort` drops it. It imports runtime code only, never the
 * compiler, so a worker holds no more than it serves with. Its main listener binds nothing: the
 * primary accepts the connections and hands them over (`connection`); a draining worker leaves the
 * primary's rotation (`leaving`, answered `left`) after the shutdown delay, before it drains.
 */
import cluster from 'node:cluster';
import { Socket } from 'node:net';
import type { PlanEnvelope } from '../../compiler/plan/types.ts';
import { importEphemeralKey, SigningKeyError, type SigningKey } from '../authn/signing-key.ts';
import { WorkerStore } from '../databroker/ipc-store.ts';
import { assertSupported } from '../plan/capabilities.ts';
import { parsePlan } from '../plan/load.ts';
import { PlanRefusedError } from '../generation/provision.ts';
import { metricsFor } from '../generation/run-metrics.ts';
import { startGenerations, type ServedGenerations } from '../generation/generation.ts';
import { startAutocert } from '../tls/acme/start.ts';
import { loadGrpcModule } from '../grpc/library-log.ts';
import { createReloader, type Reloader } from '../generation/reload.ts';
import type { RunOptions } from './startup.ts';
import { serve } from '../proxy/listeners.ts';
import { shutdownDelay } from './stop-signals.ts';
import { upstreamSnapshots } from '../generation/forward-provisioner.ts';

/**
 * Messages from the primary to a worker. `ephemeralKey` (PKCS#8 PEM) is the one ephemeral signing
 * key of the svc, sent with a plan that has no `signing_key`, so every worker signs with it.
 */
export type ToWorker =
  /** `listen`: the main address the primary listens on (it hands the connections over). */
  /** `shadow`: the shadow plan of `--shadow` (checked JSON text), decided beside the plan; absent: none. */
  | { readonly type: 'start'; readonly text: string; readonly ephemeralKey?: string; readonly shadow?: string; readonly listen: { readonly host: string; readonly port: number } }
  | { readonly type: 'prepare'; readonly id: number; readonly text: string; readonly ephemeralKey?: string; readonly shadow?: string }
  | { readonly type: 'commit'; readonly id: number }
  | { readonly type: 'abort'; readonly id: number }
  /** Stop gracefully (the primary got SIGTERM or SIGINT), or at once (a second signal). */
  | { readonly type: 'stop' }
  | { readonly type: 'exit' }
  /** The answer to `leaving`: the primary hands this worker no connection after this message. */
  | { readonly type: 'left' };
/**
 * A connection the primary accepted, sent with the message as its handle (the primary listens on
 * the main address itself and hands each connection to a serving worker: cluster.ts).
 */
export type ConnectionMessage = { readonly type: 'connection' };
/** Messages from a worker to the primary. */
export type ToPrimary =
  | { readonly type: 'ready' }
  | { readonly type: 'listening'; readonly port: number }
  /** The shutdown delay is over: hand this worker no more connections (answered by `left`). */
  | { readonly type: 'leaving' }
  | { readonly type: 'prepared'; readonly id: number }
  | { readonly type: 'refused'; readonly id?: number; readonly error: string };

/**
 * TEST ONLY: the cluster worker id (`cluster.worker.id`, from 1) that refuses every plan after its
 * first, honoured only when NODE_ENV is `test`. No file or setting makes one worker refuse a plan
 * its siblings accept, so the test of the primary's all-or-nothing commit (test/e2e/cluster.test.ts)
 * needs this switch.
 */
export const TEST_REFUSE_ENV = 'SVC_TEST_WORKER_REFUSES_RELOAD';

/** How long a draining worker waits for the primary's `left` before it drains anyway. */
const LEAVE_TIMEOUT_MS = 2_000;

/** A worker that cannot serve its first plan says why (the primary logs it) and exits; the primary replaces it. */
function refuseFirst(e: unknown): void {
  const m: ToPrimary = { type: 'refused', error: (e as Error).message };
  if (process.send) process.send(m, undefined, {}, () => process.exit(1));
  else process.exit(1);
}

export interface WorkerOptions extends Omit<RunOptions, 'configPath' | 'planPath'> {
  /** Told when the primary asks this worker to stop: gracefully (`stop`) or at once (`exit`). */
  readonly onStop?: (how: 'stop' | 'exit') => void;
}

/** A serving worker: its graceful stop (runtime/process/stop-signals.ts). */
export interface ServingWorker {
  /** `/.svc/ready` fails at once; the listener keeps accepting for `delayMs`, then drains for up to `timeoutMs`. */
  drain(timeoutMs: number, delayMs?: number): Promise<void>;
}

/**
 * Runs one worker: waits for its first plan, serves it, takes part in every reload. Resolves once it
 * serves; never when its first plan is refused (it exits).
 */
export async function runWorker(options: WorkerOptions): Promise<ServingWorker> {
  let ephemeral: SigningKey | undefined;
  const ephemeralKey = (): SigningKey => {
    if (!ephemeral) throw new SigningKeyError('no signing_key and no ephemeral key from the primary');
    return ephemeral;
  };
  const refuseForTest = process.env['NODE_ENV'] === 'test' && process.env[TEST_REFUSE_ENV] !== undefined && process.env[TEST_REFUSE_ENV] === String(cluster.worker?.id);
  let generations: ServedGenerations | undefined;
  let reloader: Reloader | undefined;
  let chain: Promise<unknown> = Promise.resolve();
  const decisions = new Map<number, (commit: boolean) => void>();
  const send = (m: ToPrimary) => process.send?.(m);
  let markServing: () => void = () => undefined;
  const serving = new Promise<void>((resolve) => (markServing = resolve));

  let listen: { readonly host: string; readonly port: number } | undefined;
  // The shadow plan's text the primary sent with the plan being built (read by the shadow part).
  let shadowText: string | undefined;
  let onLeft: () => void = () => undefined;
  const first = new Promise<PlanEnvelope>((resolve) => {
    process.on('message', (m: ToWorker) => {
      if (m.type === 'left') return onLeft();
      if (m.type === 'stop' || m.type === 'exit') {
        options.onStop?.(m.type);
        return;
      }
      // The decision on a prepared plan is taken at once: the reload waiting for it holds the chain.
      if (m.type === 'commit' || m.type === 'abort') {
        decisions.get(m.id)?.(m.type === 'commit');
        decisions.delete(m.id);
        return;
      }
      if (m.type !== 'start' && m.type !== 'prepare') return;
      if (m.ephemeralKey !== undefined && !ephemeral) ephemeral = importEphemeralKey(m.ephemeralKey);
      // Plans are taken one at a time, in the order the primary sent them.
      chain = chain.then(async () => {
        shadowText = m.shadow;
        if (m.type === 'start') {
          if (generations) return; // started already: later plans come as `prepare`
          listen = m.listen;
          try {
            resolve(checkedPlan(m.text));
          } catch (e) {
            refuseFirst(e);
            return;
          }
          // A plan sent after the first waits until the first is served.
          return serving;
        }
        if (!reloader) return send({ type: 'refused', id: m.id, error: 'the worker is not serving yet' });
        let voted = false;
        const r = await reloader.reload({
          load: () => checkedPlan(m.text),
          decide: () => {
            voted = true;
            const decided = new Promise<boolean>((done) => decisions.set(m.id, done));
            send({ type: 'prepared', id: m.id });
            return decided;
          },
        });
        // A swap reached this process through the parts' after-swap hooks (log settings, tracing, …).
        if (!r.ok && !voted) send({ type: 'refused', id: m.id, error: r.error });
      });
    });
  });
  send({ type: 'ready' });
  const plan = await first;
  const insecure = plan.body.settings.server.insecure;
  // Metrics: this worker's figures, sent to the primary at each scrape (runtime/observe/metrics/cluster.ts).
  let served: ServedGenerations | undefined;
  const metrics = await metricsFor(plan, 'worker', { upstreams: () => (served ? upstreamSnapshots(served.store.current.forward, served.store.current.plan.body.routes) : []) });
  if (metrics) (await import('../observe/metrics/cluster.ts')).answerMetricsRequests(metrics.registry);
  let g: ServedGenerations;
  // Each worker runs its own autocert manager; the shared directory's lock lets one of them order a
  // name and the others pick it up, and challenges are answered by whichever worker is reached.
  let autocert: Awaited<ReturnType<typeof startAutocert>>;
  let openAuthorizer: typeof import('../authorize/open-authorizer.ts').openAuthorizer | undefined;
  try {
    autocert = await startAutocert(plan.body, options.log ? { log: options.log } : {});
    // The proxy role's authorize client is gRPC: loaded for that role only.
    if (plan.body.settings.mode.services === 'proxy') ({ openAuthorizer } = await loadGrpcModule(() => import('../authorize/open-authorizer.ts')));
    g = await startGenerations(plan, {
      logSettings: options.logSettings,
      tracing: options.tracing,
      notices: options.notices,
      scheme: insecure ? 'http' : 'https',
      ephemeralKey,
      ...(options.log ? { log: options.log } : {}),
      ...(metrics ? { upstreamObserver: metrics.upstream, shadowObserver: metrics.shadow } : {}),
      ...(autocert ? { autocert } : {}),
      // The shadow plan the primary loaded and sent with the plan (cluster.ts), checked again here.
      shadow: { name: 'shadow plan from the primary', load: () => (shadowText === undefined ? null : parsePlan(shadowText, 'shadow plan from the primary')) },
    });
  } catch (e) {
    refuseFirst(e);
    return new Promise<never>(() => undefined);
  }
  generations = served = g;
  // Sessions live in the primary's one store (docs/scale-out.md); this worker reaches it over IPC.
  const sessionStore = new WorkerStore();
  // The proxy role: each worker asks the authorize service itself and keeps its own decision cache.
  const authorizer = openAuthorizer ? openAuthorizer(plan.body.settings, sessionStore, { ...(metrics ? { observer: metrics.grpc } : {}), ...(options.log ? { log: options.log } : {}) }) : undefined;
  let draining = false;
  const l = await serve(g.store, { ...options, handed: listen!, probes: { ready: () => !draining }, workerId: process.pid, sessionStore, ...(metrics ? { observe: metrics, graceObserver: metrics.sessions } : {}), ...(autocert ? { acmeChallenges: autocert.challenges, ocsp: autocert.ocsp } : {}), ...(authorizer ? { authorizer } : {}) });
  if ('setSecureContext' in l.server) g.serveDefaultCertificate(l.server);
  // The connections the primary accepted on the main address.
  process.on('message', (m: ConnectionMessage | ToWorker, handle: unknown) => {
    if (m.type === 'connection' && handle instanceof Socket) l.accept(handle);
  });
  /**
   * Leaves the primary's rotation and resolves once the primary says it sends no more connections
   * (`left`: IPC keeps the order, so every connection sent before it has arrived), at once without
   * a primary, and after LEAVE_TIMEOUT_MS at most.
   */
  const leave = () =>
    new Promise<void>((resolve) => {
      if (!process.send || !process.connected) return resolve();
      const timer = setTimeout(resolve, LEAVE_TIMEOUT_MS);
      onLeft = () => {
        clearTimeout(timer);
        resolve();
      };
      process.once('disconnect', onLeft);
      send({ type: 'leaving' });
    });
  reloader = createReloader({
    load: () => {
      throw new Error('bug: a worker reloads only the plans its primary sends');
    },
    current: () => g.store.current.plan,
    prepare: (next) => {
      if (refuseForTest) return Promise.reject(new PlanRefusedError('test', new Error(`${TEST_REFUSE_ENV} makes this worker refuse every new plan`)));
      return g.prepare(next);
    },
  });
  markServing();
  send({ type: 'listening', port: l.address.port });
  return {
    drain: async (timeoutMs, delayMs = 0) => {
      draining = true;
      await shutdownDelay(delayMs);
      // The primary stops handing connections to this worker, and closes the main address once no
      // worker takes them: a new connection is refused, never accepted and left unanswered.
      await leave();
      await l.drain(timeoutMs);
      authorizer?.close();
      await g.close();
      await sessionStore.close();
    },
  };
}

/** A plan from the primary, checked again like the checksum: schema, checksum, supported settings. */
function checkedPlan(text: string): PlanEnvelope {
  const plan = parsePlan(text, 'plan from the primary');
  assertSupported(plan); // the primary refused such a plan already
  return plan;
}
