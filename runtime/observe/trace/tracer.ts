/**
 * The OpenTelemetry side of tracing: a plan's tracer (provider, exporter, propagator) and the spans
 * of a traced request. Only tracing.ts imports this module, with `import()`, once a plan turns
 * tracing on (docs/architecture.md §5 "Lazy feature loading"): a process whose plans never trace
 * loads no OpenTelemetry code.
 *
 * The exporters: `tracing_provider` `zipkin` (OpenTelemetry's Zipkin exporter), `jaeger` (the
 * collector's HTTP Thrift endpoint, jaeger-exporter.ts), `apm` (the vendor agent's v0.4 intake,
 * apm-exporter.ts) or `otlp` (OpenTelemetry's OTLP/HTTP exporter, JSON encoding, otlp-exporter.ts);
 * sampled at `tracing_sample_rate`, parent-based (a continued trace keeps its parent's decision).
 * The resource's `service.name` (and the service the exporters name) is the process's `service`
 * label (docs/tracing.md, runtime/observe/service-label.ts).
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
import { RequestSpans } from './request-spans.ts';
import type { TraceSetup } from './request-trace.ts';

/** How often spans are sent to the collector (a batch goes out sooner when full). */
const EXPORT_DELAY_MS = 1_000;

/** A plan's tracer, and how it stops (its spans not yet sent go out first). */
export interface Tracer extends TraceSetup {
  shutdown(): Promise<void>;
}

/** Starts the tracer of `settings` (tracing on). `log` hears export failures and the `OTEL_EXPORTER_OTLP_*` variables ignored. */
export function startTracer(settings: PlanSettings, trustIncoming: boolean, log: ((entry: Record<string, unknown>) => void) | undefined): Tracer {
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
  const setup: Tracer = {
    tracer: provider.getTracer('svc'),
    propagator,
    trustIncoming,
    sampleRate: settings.tracing.sampleRate,
    begin: (requestId, method, host, path, headers) => new RequestSpans(setup, requestId, method, host, path, headers),
    shutdown: () => provider.shutdown(),
  };
  return setup;
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
