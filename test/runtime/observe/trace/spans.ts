/** A finished span as the SDK hands it to an exporter, for the exporter tests. */
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';

/** An ended client span with an error status and one attribute of each type; `over` replaces fields. */
export function span(over: { [K in keyof ReadableSpan]?: ReadableSpan[K] | undefined } = {}): ReadableSpan {
  return {
    name: 'upstream exchange',
    kind: SpanKind.CLIENT,
    spanContext: () => ({ traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: 1 }),
    parentSpanContext: { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'ffad6b7169203332', traceFlags: 1 },
    startTime: [1_700_000_000, 123_456_789],
    endTime: [1_700_000_000, 223_456_789],
    duration: [0, 100_000_000],
    status: { code: SpanStatusCode.ERROR },
    attributes: { 'server.address': '10.0.0.5:8080', 'http.response.status_code': 502, 'svc.cut': true, ratio: 0.5 },
    links: [],
    events: [],
    ended: true,
    resource: undefined as never,
    instrumentationScope: { name: 'svc' },
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
    ...over,
  } as ReadableSpan;
}

