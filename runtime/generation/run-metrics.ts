/**
 * Metrics as `svc run` wires them (runtime/process/startup.ts, worker.ts): created when the first
 * plan sets `metrics_address` (the listener's shape is fixed at start: restart-checks.ts
 * `listenerChange`), told about every reload, and in the loading process the metrics listener,
 * which starts with the first generation's material; later material comes with each generation
 * swapped in (generation.ts `metricsMaterial`).
 *
 * prom-client (and, through its default metrics, `@opentelemetry/api`) is imported only when the
 * plan sets `metrics_address` (docs/architecture.md §5 "Lazy feature loading").
 */
import type { PlanEnvelope } from '../../compiler/plan/types.ts';
import type { ReloadResult } from './reload.ts';
import type { HealthDetail, ReadinessChecks } from '../observe/metrics/health.ts';
import { serviceLabel } from '../observe/service-label.ts';
import { startMetricsListener, type MetricsListener, type MetricsMaterial, type Scrape } from '../observe/metrics/listener.ts';
import type { MetricsOptions, SvcMetrics } from '../observe/metrics/registry.ts';
import { loadFeature } from '../core/load-feature.ts';

/** The metrics of a process, or undefined when `plan` sets no `metrics_address`. */
export async function metricsFor(plan: PlanEnvelope, role: MetricsOptions['role'], more: Omit<MetricsOptions, 'service' | 'role'> = {}): Promise<SvcMetrics | undefined> {
  if (plan.body.settings.metrics.address === null) return undefined;
  const { createMetrics } = await loadFeature('metrics', () => import('../observe/metrics/registry.ts'));
  const metrics = createMetrics({ service: serviceLabel(plan.body.settings), role, ...more });
  metrics.config?.served(plan.checksum);
  return metrics;
}

/** The metrics of the process that loads plans, with its listener. */
export interface LoaderMetrics {
  readonly metrics: SvcMetrics;
  readonly listener: MetricsListener;
  /** Records a reload's outcome (`config_last_reload_success`, the checksum in service). */
  reloaded(r: ReloadResult): void;
  close(): Promise<void>;
}

/** Starts the metrics listener of `metrics` for `plan`, with the material of the generation in service. */
export async function startLoaderMetrics(
  metrics: SvcMetrics,
  plan: PlanEnvelope,
  options: { readonly material: MetricsMaterial | null; readonly scrape?: Scrape; readonly ready: ReadinessChecks; readonly health?: HealthDetail; readonly log?: (entry: Record<string, unknown>) => void },
): Promise<LoaderMetrics> {
  const scrape: Scrape = options.scrape ?? (async () => ({ contentType: metrics.registry.contentType, body: await metrics.registry.metrics() }));
  const listener = await startMetricsListener(plan, { scrape, ready: options.ready, ...(options.material ? { material: options.material } : {}), ...(options.health ? { health: options.health } : {}), ...(options.log ? { log: options.log } : {}) });
  return {
    metrics,
    listener,
    reloaded(r) {
      metrics.config?.reloaded(r.ok);
      if (r.ok) metrics.config?.served(r.checksum);
    },
    close: () => listener.close(),
  };
}
