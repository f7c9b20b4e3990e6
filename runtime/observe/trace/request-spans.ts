/**
 * The spans of one traced request (request-trace.ts `RequestTrace`): the request (server span, the
 * root svc adds), and under it the route decision, the session lookup, the sign-in callback and the
 * upstream exchange. Made by the plan's tracer (`TraceSetup.begin`, tracer.ts) for a request
 * request-trace.ts `isTraced` chose; loaded with the tracer, so only once a plan turns tracing on.
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Span, type TextMapGetter, type TextMapSetter } from '@opentelemetry/api';
import type { OutgoingHeaders, RequestHeaders } from '../../core/types.ts';
import { hostOf } from '../log/access-line.ts';
import { dropTraceHeaders, type RequestTrace, type TraceSetup } from './request-trace.ts';

/** The W3C and B3 headers svc's propagator writes: replaced on a traced request from a trusted hop. */
const CONTEXT_HEADERS: readonly string[] = ['traceparent', 'tracestate', 'b3', 'x-b3-traceid', 'x-b3-spanid', 'x-b3-parentspanid', 'x-b3-sampled', 'x-b3-flags'];

const getter: TextMapGetter<RequestHeaders> = {
  keys: (c) => Object.keys(c),
  get: (c, k) => c[k] as string[] | undefined,
};
const setter: TextMapSetter<OutgoingHeaders> = {
  set: (c, k, v) => {
    (c as Record<string, string>)[k] = v;
  },
};

/** Drops the W3C and B3 headers the propagator is about to write (a trusted hop's traced request). */
function dropContextHeaders(headers: OutgoingHeaders): void {
  const h = headers as Record<string, unknown>;
  for (const name of CONTEXT_HEADERS) if (h[name] !== undefined) h[name] = undefined;
}

export class RequestSpans implements RequestTrace {
  readonly #setup: TraceSetup;
  readonly span: Span;
  readonly #context: Context;

  /** See `TraceSetup.begin` (request-trace.ts). */
  constructor(setup: TraceSetup, requestId: string, method: string, host: string, path: string, headers: RequestHeaders) {
    this.#setup = setup;
    const parent = setup.trustIncoming ? setup.propagator.extract(ROOT_CONTEXT, headers, getter) : ROOT_CONTEXT;
    // `path` comes through pathOf (no query, no userinfo); the host loses any userinfo here.
    const server = hostOf(host);
    this.span = setup.tracer.startSpan(`${method} ${server}`, { kind: SpanKind.SERVER, attributes: { 'http.request.method': method, 'server.address': server, 'url.path': path, 'svc.request_id': requestId } }, parent);
    this.#context = trace.setSpan(ROOT_CONTEXT, this.span);
  }

  get traceId(): string {
    return this.span.spanContext().traceId;
  }

  child(name: string, kind: 'internal' | 'client' = 'internal'): Span {
    return this.#setup.tracer.startSpan(name, { kind: kind === 'client' ? SpanKind.CLIENT : SpanKind.INTERNAL }, this.#context);
  }

  inject(headers: OutgoingHeaders, span: Span): void {
    if (this.#setup.trustIncoming) dropContextHeaders(headers);
    else dropTraceHeaders(headers);
    this.#setup.propagator.inject(trace.setSpan(ROOT_CONTEXT, span), headers, setter);
  }

  end(status: number, cut: boolean, route: string | number | undefined): void {
    const s = this.span;
    s.setAttribute('http.response.status_code', status);
    if (route !== undefined) s.setAttribute('svc.route', route);
    if (cut) s.setAttribute('svc.cut', true);
    if (status >= 500) s.setStatus({ code: SpanStatusCode.ERROR });
    s.end();
  }
}
