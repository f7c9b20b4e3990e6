/**
 * The reload path of a process that loads plans itself (the single `svc run` process and the data
 * broker role; the cluster primary has its own, since its workers build the generations): `reload`
 * loads the plan again and builds its generation (through the metrics listener's `prepare` when one
 * runs, so its material is checked too), records the outcome for metrics, and on a swap watches the
 * new plan's files and calls `onSwapped`. With `watch` (the default), a change to the config or to a
 * file the plan reads triggers it.
 */
import { watch, type FSWatcher } from 'chokidar';
import type { PlanEnvelope } from '../../compiler/plan/types.ts';
import type { LoaderMetrics } from './run-metrics.ts';
import type { Generations } from './generation.ts';
import { createReloader, type ReloadResult } from './reload.ts';

/** What the reload path needs of the process that starts it. */
export interface WatchedReloadOptions {
  /** Loads the plan again: compiles the config or reads the plan file, refusing what svc run does not implement. */
  readonly load: () => PlanEnvelope;
  /** The config or plan file, watched beside the files the plan reads. */
  readonly source?: string | undefined;
  /** Reload when the watched files change (default true). */
  readonly watch?: boolean | undefined;
  readonly log?: ((entry: Record<string, unknown>) => void) | undefined;
  /** Called with every plan that is swapped in. */
  readonly onPlan?: ((plan: PlanEnvelope) => void) | undefined;
}

export interface WatchedReload {
  reload(): Promise<ReloadResult>;
  last(): ReloadResult | undefined;
  /** Stops watching files; a reload in progress finishes. */
  close(): Promise<void>;
}

export async function startWatchedReload(
  options: WatchedReloadOptions,
  first: PlanEnvelope,
  generations: Generations,
  observed: () => LoaderMetrics | undefined,
  onSwapped: (plan: PlanEnvelope) => void = () => {},
): Promise<WatchedReload> {
  const store = generations.store;
  let watcher: FSWatcher | undefined;
  const source = options.source;
  const watchedFiles = (p: PlanEnvelope) => [...new Set([...(source !== undefined ? [source] : []), ...p.inputs])];
  const reloader = createReloader({
    load: options.load,
    current: () => store.current.plan,
    prepare: (p) => {
      const metrics = observed();
      return metrics ? metrics.prepare(p, store.current.plan, (next) => generations.prepare(next)) : generations.prepare(p);
    },
    ...(options.log ? { log: options.log } : {}),
  });
  const reload = async (): Promise<ReloadResult> => {
    const r = await reloader.reload();
    observed()?.reloaded(r);
    // A new plan may refer to new files (a certificate added): watch them too.
    if (r.ok && r.result === 'swapped') {
      watcher?.add(watchedFiles(store.current.plan));
      onSwapped(store.current.plan);
      options.onPlan?.(store.current.plan);
    }
    return r;
  };
  if (options.watch !== false) {
    watcher = watch(watchedFiles(first), { ignoreInitial: true, awaitWriteFinish: { stabilityThreshold: 50, pollInterval: 10 } });
    let timer: NodeJS.Timeout | undefined;
    watcher.on('all', () => {
      clearTimeout(timer);
      timer = setTimeout(() => void reload(), 30);
    });
    await new Promise<void>((resolve) => watcher!.once('ready', () => resolve()));
  }
  return { reload, last: () => reloader.last(), close: async () => void (await watcher?.close()) };
}
