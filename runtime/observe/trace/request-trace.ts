/**
 * The spans of one traced request: the request (server span, the root svc adds), and under it the
 * route decision, the session lookup, the sign-in callback and the upstream exchange. Created only
 * for a traced request (runtime/proxy/handler.ts asks {@link isTraced} first): with tracing off no
 * object of this module exists per request, and an unsampled request allocates none either.
 *
 * Trace context (docs/tracing.md): an incoming `traceparent` (W3C; and B3 with the zipkin
 * provider) is continued only from a trusted hop, that is when `xff_num_trusted_hops` is above 0
 * (svc sits behind proxies the operator named as trusted, which set or vetted the header). Otherwise
 * svc starts a new trace and the incoming trace headers of every format svc's providers continue
 * are dropped before forwarding, so a client can neither join svc's spans (or the upstream's) to a
 * trace of its choosing, nor force them to be sampled, nor hand the upstream baggage.
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Span, type TextMapGetter, type TextMapPropagator, type TextMapSetter, type Tracer } from '@opentelemetry/api';
import type { OutgoingHeaders, RequestHeaders } from '../../core/types.ts';
import { hostOf } from '../log/access-line.ts';

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

/** The W3C and B3 headers svc's propagator writes: replaced on a traced request from a trusted hop. */
const CONTEXT_HEADERS: readonly string[] = ['traceparent', 'tracestate', 'b3', 'x-b3-traceid', 'x-b3-spanid', 'x-b3-parentspanid', 'x-b3-sampled', 'x-b3-flags'];

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

const getter: TextMapGetter<RequestHeaders> = {
  keys: (c) => Object.keys(c),
  get: (c, k) => c[k] as string[] | undefined,
};
const setter: TextMapSetter<OutgoingHeaders> = {
  set: (c, k, v) => {
    (c as Record<string, string>)[k] = v;
  },
};

/** What request-trace.ts needs of a plan's tracer (tracing.ts). */
export interface TraceSetup {
  readonly tracer: Tracer;
  readonly propagator: TextMapPropagator;
  /** Whether an incoming trace context is continued (a trusted hop: `xff_num_trusted_hops` > 0). */
  readonly trustIncoming: boolean;
  /** `tracing_sample_rate`: the share of new traces that are sampled. */
  readonly sampleRate: number;
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

/** Drops the W3C and B3 headers the propagator is about to write (a trusted hop's traced request). */
function dropContextHeaders(headers: OutgoingHeaders): void {
  const h = headers as Record<string, unknown>;
  for (const name of CONTEXT_HEADERS) if (h[name] !== undefined) h[name] = undefined;
}

export class RequestTrace {
  readonly #setup: TraceSetup;
  readonly span: Span;
  readonly #context: Context;

  /**
   * `requestId`: the id svc gives the request (`x-request-id` to the client and the upstream, the
   * access line's `requestId`), the span's `svc.request_id`, so a span finds its log line; the line
   * has the span's {@link traceId}.
   */
  constructor(setup: TraceSetup, requestId: string, method: string, host: string, path: string, headers: RequestHeaders) {
    this.#setup = setup;
    const parent = setup.trustIncoming ? setup.propagator.extract(ROOT_CONTEXT, headers, getter) : ROOT_CONTEXT;
    // `path` comes through pathOf (no query, no userinfo); the host loses any userinfo here.
    const server = hostOf(host);
    this.span = setup.tracer.startSpan(`${method} ${server}`, { kind: SpanKind.SERVER, attributes: { 'http.request.method': method, 'server.address': server, 'url.path': path, 'svc.request_id': requestId } }, parent);
    this.#context = trace.setSpan(ROOT_CONTEXT, this.span);
  }

  /** The trace's id (32 hex digits): the access line's `traceId`. */
  get traceId(): string {
    return this.span.spanContext().traceId;
  }

  /** A span under the request span (ended by the caller). */
  child(name: string, kind: SpanKind = SpanKind.INTERNAL): Span {
    return this.#setup.tracer.startSpan(name, { kind }, this.#context);
  }

  /**
   * Sets the upstream request's trace headers: the incoming ones dropped (from an untrusted hop every
   * format's, {@link dropTraceHeaders}; from a trusted one the W3C and B3 headers replaced here),
   * then this trace's context with `span` (the upstream exchange) as the parent the upstream's spans join.
   */
  inject(headers: OutgoingHeaders, span: Span): void {
    if (this.#setup.trustIncoming) dropContextHeaders(headers);
    else dropTraceHeaders(headers);
    this.#setup.propagator.inject(trace.setSpan(ROOT_CONTEXT, span), headers, setter);
  }

  /** Ends the request span with the status answered (`cut`: the response did not complete). */
  end(status: number, cut: boolean, route: string | number | undefined): void {
    const s = this.span;
    s.setAttribute('http.response.status_code', status);
    if (route !== undefined) s.setAttribute('svc.route', route);
    if (cut) s.setAttribute('svc.cut', true);
    if (status >= 500) s.setStatus({ code: SpanStatusCode.ERROR });
    s.end();
  }
}
