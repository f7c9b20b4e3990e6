/**
 * The `jaeger` provider's exporter: spans as a Jaeger `Batch` in Thrift's binary protocol, POSTed to
 * the collector's HTTP endpoint (`tracing_jaeger_collector_endpoint`, for example
 * `http://jaeger:14268/api/traces`, content type `application/x-thrift`). OpenTelemetry's Jaeger
 * exporter is deprecated and not a dependency; this is the smallest encoder of the part of
 * jaeger.thrift the collector needs (Batch, Process, Span, SpanRef-free parent ids, Tag).
 */
import type { ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { sendSpans } from './send-spans.ts';

// Thrift binary protocol field types.
const BOOL = 2;
const I32 = 8;
const I64 = 10;
const STRING = 11;
const STRUCT = 12;
const LIST = 15;
// jaeger.thrift TagType.
const TAG_STRING = 0;
const TAG_BOOL = 2;
const TAG_LONG = 3;
const TAG_DOUBLE = 1;

/** A growing byte buffer with Thrift binary writers. */
class ThriftWriter {
  #chunks: Buffer[] = [];
  field(type: number, id: number): this {
    const b = Buffer.alloc(3);
    b.writeInt8(type, 0);
    b.writeInt16BE(id, 1);
    this.#chunks.push(b);
    return this;
  }
  stop(): this {
    this.#chunks.push(Buffer.of(0));
    return this;
  }
  i32(v: number): this {
    const b = Buffer.alloc(4);
    b.writeInt32BE(v);
    this.#chunks.push(b);
    return this;
  }
  i64(v: bigint): this {
    const b = Buffer.alloc(8);
    b.writeBigInt64BE(BigInt.asIntN(64, v));
    this.#chunks.push(b);
    return this;
  }
  /** Eight bytes given as 16 hex digits (a trace or span id half). */
  id(hex: string): this {
    this.#chunks.push(Buffer.from(hex.padStart(16, '0'), 'hex'));
    return this;
  }
  double(v: number): this {
    const b = Buffer.alloc(8);
    b.writeDoubleBE(v);
    this.#chunks.push(b);
    return this;
  }
  bool(v: boolean): this {
    this.#chunks.push(Buffer.of(v ? 1 : 0));
    return this;
  }
  string(s: string): this {
    const bytes = Buffer.from(s, 'utf8');
    this.i32(bytes.length);
    this.#chunks.push(bytes);
    return this;
  }
  list(type: number, size: number): this {
    this.#chunks.push(Buffer.of(type));
    return this.i32(size);
  }
  bytes(): Buffer {
    return Buffer.concat(this.#chunks);
  }
}

function writeTag(w: ThriftWriter, key: string, value: unknown): void {
  w.field(STRING, 1).string(key);
  if (typeof value === 'boolean') w.field(I32, 2).i32(TAG_BOOL).field(BOOL, 5).bool(value);
  else if (typeof value === 'number' && Number.isInteger(value)) w.field(I32, 2).i32(TAG_LONG).field(I64, 6).i64(BigInt(value));
  else if (typeof value === 'number') w.field(I32, 2).i32(TAG_DOUBLE).field(4, 4).double(value);
  else w.field(I32, 2).i32(TAG_STRING).field(STRING, 3).string(String(value));
  w.stop();
}

const micros = (t: readonly [number, number]) => BigInt(t[0]) * 1_000_000n + BigInt(Math.floor(t[1] / 1000));

/** The Thrift `Batch` for `spans` of service `service`. */
export function jaegerBatch(service: string, spans: readonly ReadableSpan[]): Buffer {
  const w = new ThriftWriter();
  w.field(STRUCT, 1).field(STRING, 1).string(service).stop(); // Process
  w.field(LIST, 2).list(STRUCT, spans.length);
  for (const s of spans) {
    const c = s.spanContext();
    w.field(I64, 1).id(c.traceId.slice(16));
    w.field(I64, 2).id(c.traceId.slice(0, 16));
    w.field(I64, 3).id(c.spanId);
    w.field(I64, 4).id(s.parentSpanContext?.spanId ?? '0');
    w.field(STRING, 5).string(s.name);
    w.field(I32, 7).i32(c.traceFlags);
    w.field(I64, 8).i64(micros(s.startTime));
    w.field(I64, 9).i64(micros(s.duration));
    const tags = Object.entries(s.attributes).filter(([, v]) => v !== undefined);
    const extra: [string, unknown][] = [['span.kind', ['internal', 'server', 'client', 'producer', 'consumer'][s.kind] ?? 'internal']];
    if (s.status.code === 2) extra.push(['error', true]);
    w.field(LIST, 10).list(STRUCT, tags.length + extra.length);
    for (const [k, v] of [...tags, ...extra]) writeTag(w, k, v);
    w.stop();
  }
  w.stop();
  return w.bytes();
}

export class JaegerThriftExporter implements SpanExporter {
  readonly #url: URL;
  constructor(endpoint: string, readonly service: string) {
    this.#url = new URL(endpoint);
  }
  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    sendSpans(this.#url, 'POST', { 'content-type': 'application/x-thrift' }, jaegerBatch(this.service, spans), done);
  }
  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}
