/**
 * The one file watcher and reload path of every process that loads plans: the single `svc run`
 * process, the data broker and authorize roles, and the cluster primary (a worker gets its plans
 * from the primary: runtime/process/worker.ts). `reload` loads the plan again and builds what comes
 * next through the target's `prepare` (this process's generation, or on the cluster primary every
 * worker's), records the outcome for metrics, and on a swap watches the new plan's files.
 * With `watch` (the default), a change to the config or to a file the plan reads triggers it
 * (debounced: a burst of writes is one reload).
 */
import { watch, type FSWatcher } from 'chokidar';
import type { PlanEnvelope } from '../../compiler/plan/types.ts';
import type { LoaderMetrics } from './run-metrics.ts';
import type { Prepared } from './generation.ts';
import { createReloader, type ReloadResult } from './reload.ts';

/** What the reload path needs of the process that starts it. */
export interface WatchedReloadOptions {
  /** Loads the plan again: compiles the config or reads the plan file, refusing what svc run does not implement. */
  readonly load: () => PlanEnvelope | Promise<PlanEnvelope>;
  /** The config or plan file, watched beside the files the plan reads. */
  readonly source?: string | undefined;
  /** More files whose change reloads (the shadow plan of `svc run --shadow`). */
  readonly also?: readonly string[] | undefined;
  /** Reload when the watched files change (default true). */
  readonly watch?: boolean | undefined;
  readonly log?: ((entry: Record<string, unknown>) => void) | undefined;
}

/** What a reload builds and swaps: the plan in service, and how the next one is prepared. */
export interface ReloadTarget {
  /** The plan in service. */
  plan(): PlanEnvelope;
  /** Builds what serves `plan` without serving it (runtime/generation/reload.ts `ReloadSteps.prepare`). */
  prepare(plan: PlanEnvelope): Promise<Prepared>;
}

export interface WatchedReload {
  reload(): Promise<ReloadResult>;
  last(): ReloadResult | undefined;
  /** Stops watching files; a reload in progress finishes. */
  close(): Promise<void>;
}

export async function startWatchedReload(
  options: WatchedReloadOptions,
  target: ReloadTarget,
  observed: () => LoaderMetrics | undefined,
): Promise<WatchedReload> {
  let watcher: FSWatcher | undefined;
  const source = options.source;
  const watchedFiles = (p: PlanEnvelope) => [...new Set([...(source !== undefined ? [source] : []), ...(options.also ?? []), ...p.inputs])];
  const reloader = createReloader({
    load: options.load,
    current: () => target.plan(),
    prepare: (p) => target.prepare(p),
    ...(options.log ? { log: options.log } : {}),
  });
  const reload = async (): Promise<ReloadResult> => {
    const r = await reloader.reload();
    observed()?.reloaded(r);
    // A new plan may refer to new files (a certificate added): watch them too.
    if (r.ok && r.result === 'swapped') {
      watcher?.add(watchedFiles(target.plan()));
    }
    return r;
  };
  if (options.watch !== false) {
    watcher = watch(watchedFiles(target.plan()), { ignoreInitial: true, awaitWriteFinish: { stabilityThreshold: 50, pollInterval: 10 } });
    let timer: NodeJS.Timeout | undefined;
    watcher.on('all', () => {
      clearTimeout(timer);
      timer = setTimeout(() => void reload(), 30);
    });
    await new Promise<void>((resolve) => watcher!.once('ready', () => resolve()));
  }
  return { reload, last: () => reloader.last(), close: async () => void (await watcher?.close()) };
}
