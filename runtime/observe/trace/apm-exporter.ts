/**
 * The `apm` provider's exporter: spans in the vendor trace agent's v0.4 JSON intake, `PUT
 * http://<tracing_apm_address>/v0.4/traces` (an array of traces, each an array of spans; ids as
 * unsigned 64-bit integers, times in nanoseconds). No maintained OpenTelemetry exporter speaks it
 * without the vendor's own SDK; this is the smallest one. A 128-bit trace id is sent as its low 64
 * bits (`trace_id`) with the high 64 bits in `meta._dd.p.tid`, as the vendor's tracers do.
 */
import type { ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { sendSpans } from './send-spans.ts';

const nanos = (t: readonly [number, number]) => (BigInt(t[0]) * 1_000_000_000n + BigInt(t[1])).toString();
/** 16 hex digits as an unsigned decimal integer (JSON numbers past 2^53 are written as digits, not through a double). */
const u64 = (hex: string) => BigInt(`0x${hex}`).toString();

/** One span as the agent's JSON. */
function apmSpan(service: string, s: ReadableSpan): string {
  const c = s.spanContext();
  const meta: Record<string, string> = { '_dd.p.tid': c.traceId.slice(0, 16), 'span.kind': ['internal', 'server', 'client', 'producer', 'consumer'][s.kind] ?? 'internal' };
  for (const [k, v] of Object.entries(s.attributes)) if (v !== undefined) meta[k] = String(v);
  const resource = typeof s.attributes['svc.resource'] === 'string' ? s.attributes['svc.resource'] : s.name;
  return (
    `{"trace_id":${u64(c.traceId.slice(16))},"span_id":${u64(c.spanId)},"parent_id":${s.parentSpanContext ? u64(s.parentSpanContext.spanId) : 0},` +
    `"name":${JSON.stringify(s.name)},"resource":${JSON.stringify(resource)},"service":${JSON.stringify(service)},"type":"web",` +
    `"start":${nanos(s.startTime)},"duration":${nanos(s.duration)},"error":${s.status.code === 2 ? 1 : 0},"meta":${JSON.stringify(meta)}}`
  );
}

/** The request body for `spans`: grouped by trace. */
export function apmTraces(service: string, spans: readonly ReadableSpan[]): { body: string; count: number } {
  const traces = new Map<string, string[]>();
  for (const s of spans) {
    const id = s.spanContext().traceId;
    let list = traces.get(id);
    if (!list) traces.set(id, (list = []));
    list.push(apmSpan(service, s));
  }
  return { body: `[${[...traces.values()].map((t) => `[${t.join(',')}]`).join(',')}]`, count: traces.size };
}

export class ApmExporter implements SpanExporter {
  readonly #url: URL;
  constructor(address: { readonly host: string; readonly port: number }, readonly service: string) {
    const host = address.host.includes(':') ? `[${address.host}]` : address.host;
    this.#url = new URL(`http://${host}:${address.port}/v0.4/traces`);
  }
  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    const { body, count } = apmTraces(this.service, spans);
    sendSpans(this.#url, 'PUT', { 'content-type': 'application/json', 'x-datadog-trace-count': String(count) }, body, done);
  }
  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}
