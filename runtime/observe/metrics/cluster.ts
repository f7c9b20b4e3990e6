/**
 * One scrape for the whole process tree of `svc run --workers N` (docs/architecture.md §5): the primary serves
 * the metrics listener; at each scrape it asks every live worker for its registry over the cluster
 * IPC channel and merges them with its own (prom-client `AggregatorRegistry`: counters and
 * histograms add up; each metric's `aggregator` says how gauges combine). Never one worker's figures:
 * a worker that does not answer in time fails the scrape (500), so Prometheus records a failed
 * scrape instead of totals that silently drop. A worker that died and was replaced starts from zero,
 * which Prometheus's `rate()` reads as a counter reset.
 */
import type { Worker } from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';

/** One registry's metrics as JSON, as `Registry.getMetricsAsJSON` gives them. */
type RegistryJson = Awaited<ReturnType<Registry['getMetricsAsJSON']>>;
import type { Scrape } from './listener.ts';

/** The primary's request for a worker's metrics. */
export interface MetricsRequest {
  readonly type: 'svc-metrics-request';
  readonly id: number;
}

/** A worker's answer: its registry as JSON (`Registry.getMetricsAsJSON`). */
export interface MetricsAnswer {
  readonly type: 'svc-metrics';
  readonly id: number;
  readonly metrics: RegistryJson;
}

/** How long the primary waits for each worker's registry. */
const WORKER_SCRAPE_TIMEOUT_MS = 5_000;

/** In a worker: answers the primary's metrics requests with `registry`. Returns a function that stops. */
export function answerMetricsRequests(registry: Registry): () => void {
  const onMessage = (m: { type?: unknown; id?: unknown }) => {
    if (m?.type !== 'svc-metrics-request' || typeof m.id !== 'number') return;
    const id = m.id;
    void registry.getMetricsAsJSON().then((metrics) => process.send?.({ type: 'svc-metrics', id, metrics } satisfies MetricsAnswer));
  };
  process.on('message', onMessage);
  return () => process.off('message', onMessage);
}

/** In the primary: the scrape of the whole tree (`own` plus every worker `workers()` lists). */
export function aggregatedScrape(own: Registry, workers: () => readonly Worker[]): Scrape {
  let seq = 0;
  return async () => {
    const id = ++seq;
    const answers = await Promise.all(workers().filter((w) => !w.isDead()).map((w) => ask(w, id)));
    const merged = AggregatorRegistry.aggregate([await own.getMetricsAsJSON(), ...answers]);
    return { contentType: merged.contentType, body: await merged.metrics() };
  };
}

function ask(w: Worker, id: number): Promise<RegistryJson> {
  return new Promise((resolve, reject) => {
    const done = () => {
      clearTimeout(timer);
      w.off('message', onMessage);
      w.off('exit', onExit);
    };
    const onMessage = (m: Partial<MetricsAnswer>) => {
      if (m?.type !== 'svc-metrics' || m.id !== id) return;
      done();
      resolve(m.metrics ?? []);
    };
    // A worker that exits meanwhile has no figures left to give; its replacement starts from zero.
    const onExit = () => {
      done();
      resolve([]);
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`worker ${w.process.pid} did not send its metrics within ${WORKER_SCRAPE_TIMEOUT_MS / 1000} s`));
    }, WORKER_SCRAPE_TIMEOUT_MS);
    w.on('message', onMessage);
    w.once('exit', onExit);
    w.send({ type: 'svc-metrics-request', id } satisfies MetricsRequest);
  });
}
