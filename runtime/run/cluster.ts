/**
 * Both cores (DESIGN.md §5): a primary process compiles or loads the plan, watches its files, and
 * runs N workers that share the listening socket (node:cluster). Every plan goes to every worker
 * as its checked JSON text; a worker verifies it again (schema, checksum) before swapping, so a
 * worker never serves a plan the primary did not accept. A worker that dies is replaced and gets
 * the current plan. The in-memory data broker lives in the primary (one instance, spec 2.6): workers
 * reach its session store over the cluster IPC channel (runtime/databroker/ipc-store.ts).
 * The worker side is runtime/run/worker.ts, which loads no compiler code.
 */
import cluster, { type Worker } from 'node:cluster';
import { availableParallelism } from 'node:os';
import { watch, type FSWatcher } from 'chokidar';
import { prettyJson } from '../../compiler/plan/canonical-json.ts';
import type { PlanEnvelope } from '../../compiler/plan/types.ts';
import { serveStoreToWorkers } from '../databroker/ipc-store.ts';
import { MemoryStore } from '../databroker/memory-store.ts';
import { loadForRun, type ReloadResult, type RunOptions } from './run.ts';
import { listenerChange } from './serve.ts';

import type { ToPrimary, ToWorker } from './worker.ts';

export interface ClusterOptions extends RunOptions {
  /** Workers to run; default: one per core. */
  readonly workers?: number;
}

/**
 * Runs the primary: forks workers, feeds them plans, replaces the dead. Resolves with a stop
 * function once every worker listens.
 */
export async function runPrimary(options: ClusterOptions, workerArgs: readonly string[]): Promise<{ stop(): Promise<void>; readonly port: number; reload(): ReloadResult }> {
  let plan = loadForRun(options);
  options.onPlan?.(plan);
  let text = prettyJson(plan);
  const count = Math.max(1, options.workers ?? availableParallelism());
  let stopping = false;
  let port = 0;

  // Default ('json') IPC serialization: session records are JSON values (see ipc-store.ts).
  cluster.setupPrimary({ args: [...workerArgs], silent: false });
  // Served before the first fork, so a worker's first store request always finds it.
  const sessions = new MemoryStore();
  const storeService = serveStoreToWorkers(sessions, cluster);
  const send = (w: Worker) => w.send({ type: 'plan', text } satisfies ToWorker);
  const fork = (): Promise<void> =>
    new Promise((resolve) => {
      const w = cluster.fork({ SVC_CLUSTER_WORKER: '1' });
      w.on('message', (m: ToPrimary) => {
        // A message sent before the worker listens for it would be lost: it asks when ready.
        if (m.type === 'ready') send(w);
        else if (m.type === 'listening') {
          port = m.port;
          resolve();
        } else if (m.type === 'refused') options.log?.({ msg: 'worker refused a plan', worker: w.process.pid, error: m.error });
      });
    });
  cluster.on('exit', (w, code, signal) => {
    if (stopping) return;
    options.log?.({ msg: 'worker died; replacing it', worker: w.process.pid, code, signal });
    void fork();
  });
  await Promise.all(Array.from({ length: count }, fork));

  const reload = (): ReloadResult => {
    try {
      const next = loadForRun(options);
      const change = listenerChange(plan.body.settings, next.body.settings);
      if (change !== undefined) throw new Error(change);
      if (next.checksum === plan.checksum) return { ok: true, result: 'unchanged', checksum: next.checksum };
      plan = next;
      text = prettyJson(next);
      for (const w of Object.values(cluster.workers ?? {})) if (w) send(w);
      options.onPlan?.(next);
      options.log?.({ msg: 'reload', result: 'swapped', checksum: next.checksum });
      return { ok: true, result: 'swapped', checksum: next.checksum };
    } catch (e) {
      options.log?.({ msg: 'reload failed; keeping the current plan', error: (e as Error).message, checksum: plan.checksum });
      return { ok: false, error: (e as Error).message };
    }
  };

  let watcher: FSWatcher | undefined;
  if (options.watch !== false) {
    const source = options.planPath ?? options.configPath;
    const files = (p: PlanEnvelope) => [...new Set([...(source !== undefined ? [source] : []), ...p.inputs])];
    watcher = watch(files(plan), { ignoreInitial: true, awaitWriteFinish: { stabilityThreshold: 50, pollInterval: 10 } });
    let timer: NodeJS.Timeout | undefined;
    watcher.on('all', () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        const r = reload();
        if (r.ok && r.result === 'swapped') watcher?.add(files(plan));
      }, 30);
    });
    await new Promise<void>((resolve) => watcher!.once('ready', () => resolve()));
  }

  return {
    port,
    reload,
    stop: async () => {
      stopping = true;
      await watcher?.close();
      await Promise.all(
        Object.values(cluster.workers ?? {}).map(
          (w) =>
            new Promise<void>((resolve) => {
              if (!w || w.isDead()) return resolve();
              w.once('exit', () => resolve());
              w.kill('SIGTERM');
            }),
        ),
      );
      // Only after the workers are gone: a worker draining its requests may still need sessions.
      storeService.close();
      await sessions.close();
    },
  };
}
