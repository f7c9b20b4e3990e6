/**
 * Which requests are traced, and the trace headers of every request while tracing is on; the
 * contract of a traced request's spans (`RequestTrace`, made by request-spans.ts). Spans are created
 * only for a traced request (runtime/proxy/handler.ts asks {@link isTraced} first): with tracing off
 * no span object exists per request, and an unsampled request allocates none either. This module
 * imports OpenTelemetry's types only: the request path loads no OpenTelemetry code until a plan
 * turns tracing on (tracing.ts).
 *
 * Trace context (docs/tracing.md): an incoming `traceparent` (W3C; and B3 with the zipkin
 * provider) is continued only from a trusted hop, that is when `xff_num_trusted_hops` is above 0
 * (svc sits behind proxies the operator named as trusted, which set or vetted the header). Otherwise
 * svc starts a new trace and the incoming trace headers of every format svc's providers continue
 * are dropped before forwarding, so a client can neither join svc's spans (or the upstream's) to a
 * trace of its choosing, nor force them to be sampled, nor hand the upstream baggage.
 */
import type { Span, TextMapPropagator, Tracer } from '@opentelemetry/api';
import type { OutgoingHeaders, RequestHeaders } from '../../core/types.ts';

/**
 * The request headers a trace context (or its baggage) travels in, in every propagation format
 * that svc's providers' own tracers continue (docs/tracing.md): W3C (`traceparent`, `tracestate`,
 * `baggage`; OpenTelemetry), B3 (`b3`, `x-b3-*`; zipkin), Jaeger (`uber-trace-id`, `uberctx-*`,
 * `jaeger-debug-id`, `jaeger-baggage`) and the apm vendor's (`x-datadog-*`). A name ending in `-`
 * is a prefix. Dropped from the requests of an untrusted hop while tracing is on
 * ({@link dropTraceHeaders} tests each name), so that no upstream tracer continues a client's trace
 * or reads its baggage.
 */
export const TRACE_HEADERS: readonly string[] = ['traceparent', 'tracestate', 'baggage', 'b3', 'x-b3-', 'uber-trace-id', 'uberctx-', 'jaeger-debug-id', 'jaeger-baggage', 'x-datadog-'];

/** Whether `name` (lower-case) is one of {@link TRACE_HEADERS}: one switch on its first character. */
export function isTraceHeader(name: string): boolean {
  switch (name.charCodeAt(0)) {
    case 0x74: // t
      return name === 'traceparent' || name === 'tracestate';
    case 0x62: // b
      return name === 'b3' || name === 'baggage';
    case 0x78: // x
      return name.startsWith('x-b3-') || name.startsWith('x-datadog-');
    case 0x75: // u
      return name === 'uber-trace-id' || name.startsWith('uberctx-');
    case 0x6a: // j
      return name === 'jaeger-debug-id' || name === 'jaeger-baggage';
    default:
      return false;
  }
}

/**
 * A plan's tracer (tracer.ts, made once a plan turns tracing on): what a traced request needs. This
 * module holds the checks every request of a tracing plan runs and no OpenTelemetry code (types
 * only); the spans themselves are request-spans.ts's, loaded with the tracer.
 */
export interface TraceSetup {
  readonly tracer: Tracer;
  readonly propagator: TextMapPropagator;
  /** Whether an incoming trace context is continued (a trusted hop: `xff_num_trusted_hops` > 0). */
  readonly trustIncoming: boolean;
  /** `tracing_sample_rate`: the share of new traces that are sampled. */
  readonly sampleRate: number;
  /**
   * Starts the spans of a traced request. `requestId`: the id svc gives the request (`x-request-id`
   * to the client and the upstream, the access line's `requestId`), the span's `svc.request_id`, so
   * a span finds its log line; the line has the span's `traceId`. `path` comes without query or userinfo.
   */
  begin(requestId: string, method: string, host: string, path: string, headers: RequestHeaders): RequestTrace;
}

/** The spans of one traced request (request-spans.ts). */
export interface RequestTrace {
  /** The request span (server span, the root svc adds). */
  readonly span: Span;
  /** The trace's id (32 hex digits): the access line's `traceId`. */
  readonly traceId: string;
  /** A span under the request span (ended by the caller); `client` for the upstream exchange. */
  child(name: string, kind?: 'internal' | 'client'): Span;
  /**
   * Sets the upstream request's trace headers: the incoming ones dropped (from an untrusted hop every
   * format's, {@link dropTraceHeaders}; from a trusted one the W3C and B3 headers replaced), then this
   * trace's context with `span` (the upstream exchange) as the parent the upstream's spans join.
   */
  inject(headers: OutgoingHeaders, span: Span): void;
  /** Ends the request span with the status answered (`cut`: the response did not complete). */
  end(status: number, cut: boolean, route: string | number | undefined): void;
}

/**
 * Whether a request is traced: an incoming context from a trusted hop is always continued (its
 * sampled flag then decides whether spans are recorded); a new trace is sampled here, at
 * `sampleRate`, before any span, context or argument of {@link RequestTrace} exists. An unsampled
 * request (nearly every one at the default rate of 0.0001) costs this call: one random number, and
 * with a trusted hop three header lookups. Its incoming trace headers are still dropped before
 * forwarding when the hop is not trusted ({@link dropTraceHeaders}).
 */
export function isTraced(setup: TraceSetup, headers: RequestHeaders): boolean {
  if (setup.trustIncoming && (headers['traceparent'] !== undefined || headers['b3'] !== undefined || headers['x-b3-traceid'] !== undefined)) return true;
  return Math.random() < setup.sampleRate;
}

/**
 * Drops every trace header ({@link TRACE_HEADERS}) of an upstream request (set to undefined: not
 * sent, and no slow delete). Runs on every forwarded request of an untrusted hop while tracing is
 * on: one pass over the request's header names, each tested by its first character
 * ({@link isTraceHeader}), because the prefixes (`x-b3-`, `uberctx-`, `x-datadog-`) cannot be
 * named reads.
 */
export function dropTraceHeaders(headers: OutgoingHeaders): void {
  const h = headers as Record<string, unknown>;
  for (const name in h) if (isTraceHeader(name) && h[name] !== undefined) h[name] = undefined;
}

