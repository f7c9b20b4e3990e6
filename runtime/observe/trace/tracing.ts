/**
 * OpenTelemetry tracing of `svc run`, following the plan's `tracing_*` settings (docs/tracing.md):
 * `tracing_provider` `zipkin` (OpenTelemetry's Zipkin exporter), `jaeger` (the collector's HTTP
 * Thrift endpoint, jaeger-exporter.ts), `apm` (the vendor agent's v0.4 intake, apm-exporter.ts)
 * or `otlp` (OpenTelemetry's OTLP/HTTP exporter, JSON encoding, otlp-exporter.ts);
 * sampled at `tracing_sample_rate`, parent-based (a continued trace keeps its parent's decision).
 * The resource's `service.name` (and the service the exporters name) is the process's `service`
 * label (docs/tracing.md, runtime/observe/service-label.ts): `svc` in all-in-one mode, `svc-<service>` in
 * distributed mode.
 *
 * The switch holds the tracer of the plan served: `current` is null when tracing is off, and a new
 * plan with other tracing settings replaces the tracer (the old one flushes its spans and stops).
 */
import { CompositePropagator, W3CTraceContextPropagator, type ExportResult } from '@opentelemetry/core';
import { B3InjectEncoding, B3Propagator } from '@opentelemetry/propagator-b3';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOnSampler, BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { ZipkinExporter } from '@opentelemetry/exporter-zipkin';
import type { PlanSettings } from '../../../compiler/plan/types.ts';
import { SvcError } from '../../core/errors.ts';
import { serviceLabel } from '../service-label.ts';
import { ApmExporter } from './apm-exporter.ts';
import { JaegerThriftExporter } from './jaeger-exporter.ts';
import { ignoredOtlpEnv, otlpExporter } from './otlp-exporter.ts';
import type { TraceSetup } from './request-trace.ts';

/** How often spans are sent to the collector (a batch goes out sooner when full). */
const EXPORT_DELAY_MS = 1_000;

export interface TracingSwitch {
  /** The plan's tracer, or null when tracing is off. */
  readonly current: TraceSetup | null;
  /** Follows a plan's settings (at start and on every reload). */
  apply(settings: PlanSettings): void;
  /** Sends the spans not yet sent, then stops (svc stopping). */
  shutdown(): Promise<void>;
}

/** Tracing off until a plan turns it on. `log` hears export failures (and, with `otlp`, the `OTEL_EXPORTER_OTLP_*` variables ignored). */
export function createTracingSwitch(log?: (entry: Record<string, unknown>) => void): TracingSwitch {
  let current: (TraceSetup & { readonly provider: BasicTracerProvider }) | null = null;
  let shape = 'null';
  return {
    get current() {
      return current;
    },
    apply(settings) {
      const t = settings.tracing;
      const trustIncoming = settings.server.xffNumTrustedHops > 0;
      const next = JSON.stringify(t.provider === null ? null : [t, trustIncoming, serviceLabel(settings)]);
      if (next === shape) return;
      shape = next;
      const old = current;
      current = t.provider === null ? null : start(settings, trustIncoming, log);
      void old?.provider.shutdown();
    },
    async shutdown() {
      const c = current;
      current = null;
      await c?.provider.shutdown();
    },
  };
}

function start(settings: PlanSettings, trustIncoming: boolean, log: ((entry: Record<string, unknown>) => void) | undefined): TraceSetup & { readonly provider: BasicTracerProvider } {
  const service = serviceLabel(settings);
  if (settings.tracing.provider === 'otlp') {
    // Said each time an otlp tracer starts (at start, and on a reload that changes tracing).
    const ignored = ignoredOtlpEnv();
    if (ignored.length > 0) log?.({ level: 'warn', msg: 'tracing: OTEL_EXPORTER_OTLP_* variables are not read by svc; spans go to tracing_otlp_endpoint', ignored });
  }
  const exporter = reported(exporterFor(settings.tracing, service), log);
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': service }),
    // New traces are sampled before any span exists (isTraced in request-trace.ts, at
    // tracing_sample_rate); a continued trace follows its parent's sampled flag.
    sampler: new ParentBasedSampler({ root: new AlwaysOnSampler() }),
    spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: EXPORT_DELAY_MS })],
  });
  const w3c = new W3CTraceContextPropagator();
  const propagator = settings.tracing.provider === 'zipkin' ? new CompositePropagator({ propagators: [w3c, new B3Propagator({ injectEncoding: B3InjectEncoding.MULTI_HEADER })] }) : w3c;
  return { provider, tracer: provider.getTracer('svc'), propagator, trustIncoming, sampleRate: settings.tracing.sampleRate };
}

function exporterFor(t: PlanSettings['tracing'], service: string): SpanExporter {
  switch (t.provider) {
    case 'zipkin':
      return new ZipkinExporter({ url: t.zipkinEndpoint!, serviceName: service });
    case 'jaeger':
      // Spans go to the collector only; the compiler asks for it besides the agent (docs/tracing.md "Exporters").
      if (t.jaegerCollectorEndpoint === null) throw new SvcError('SVC_ERR_TRACING_CONFIG', `jaeger: spans are sent to tracing_jaeger_collector_endpoint only, not to the agent at ${t.jaegerAgentEndpoint?.host ?? '?'}`);
      return new JaegerThriftExporter(t.jaegerCollectorEndpoint, service);
    case 'apm':
      return new ApmExporter(t.apmAddress, service);
    case 'otlp':
      // The service name travels as the resource's `service.name`, as OTLP carries it.
      return otlpExporter(t.otlpEndpoint);
    default:
      throw new SvcError('SVC_ERR_TRACING_CONFIG', `no exporter for tracing provider ${String(t.provider)}`);
  }
}

/** An exporter whose failures are logged (warn) rather than lost. */
function reported(exporter: SpanExporter, log: ((entry: Record<string, unknown>) => void) | undefined): SpanExporter {
  return {
    export: (spans: ReadableSpan[], done: (r: ExportResult) => void) =>
      exporter.export(spans, (r) => {
        if (r.code !== 0) log?.({ msg: 'trace export failed', spans: spans.length, error: r.error?.message ?? 'unknown' });
        done(r);
      }),
    shutdown: () => exporter.shutdown(),
    ...(exporter.forceFlush ? { forceFlush: () => exporter.forceFlush!() } : {}),
  };
}
