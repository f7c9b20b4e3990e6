/**
 * OpenTelemetry tracing of `svc run`, following the plan's `tracing_*` settings (docs/tracing.md;
 * the exporters are tracer.ts's).
 *
 * The switch holds the tracer of the plan served: `current` is null when tracing is off, and a new
 * plan with other tracing settings replaces the tracer (the old one flushes its spans and stops).
 * OpenTelemetry is loaded by `prepare`, the first time a plan turns tracing on (a generation's
 * preparation awaits it, runtime/generation/generation.ts), so a process whose plans never trace
 * loads none of it (docs/architecture.md §5 "Lazy feature loading"); `apply`, after the swap, is
 * synchronous.
 */
import type { PlanSettings } from '../../../compiler/plan/types.ts';
import { loadFeature } from '../../core/load-feature.ts';
import { serviceLabel } from '../service-label.ts';
import type { TraceSetup } from './request-trace.ts';
import type { Tracer } from './tracer.ts';

export interface TracingSwitch {
  /** The plan's tracer, or null when tracing is off. */
  readonly current: TraceSetup | null;
  /**
   * Loads what `settings` need before they are applied: OpenTelemetry (once) when they turn tracing
   * on, nothing otherwise. Rejects with `FeatureUnavailableError` when it cannot be loaded.
   */
  prepare(settings: PlanSettings): Promise<void>;
  /** Follows a plan's settings (at start and on every reload), once `prepare` resolved for them. */
  apply(settings: PlanSettings): void;
  /** Sends the spans not yet sent, then stops (svc stopping). */
  shutdown(): Promise<void>;
}

type TracerModule = typeof import('./tracer.ts');

/** Tracing off until a plan turns it on. `log` hears export failures (and, with `otlp`, the `OTEL_EXPORTER_OTLP_*` variables ignored). */
export function createTracingSwitch(log?: (entry: Record<string, unknown>) => void): TracingSwitch {
  let current: Tracer | null = null;
  let shape = 'null';
  let sdk: TracerModule | undefined;
  return {
    get current() {
      return current;
    },
    async prepare(settings) {
      if (settings.tracing.provider === null || sdk) return;
      sdk = await loadFeature('tracing', () => import('./tracer.ts'));
    },
    apply(settings) {
      const t = settings.tracing;
      const trustIncoming = settings.server.xffNumTrustedHops > 0;
      const next = JSON.stringify(t.provider === null ? null : [t, trustIncoming, serviceLabel(settings)]);
      if (next === shape) return;
      if (t.provider !== null && !sdk) throw new Error('bug: tracing applied before prepare() loaded OpenTelemetry');
      shape = next;
      const old = current;
      current = t.provider === null ? null : sdk!.startTracer(settings, trustIncoming, log);
      void old?.shutdown();
    },
    async shutdown() {
      const c = current;
      current = null;
      await c?.shutdown();
    },
  };
}
