/**
 * runtime/observe/trace/jaeger-exporter.ts: the Batch is well-formed Thrift binary protocol (read
 * back here by a generic decoder, field by field, as the collector's Thrift reader would) and
 * carries jaeger.thrift's fields: process service name, trace id halves, span and parent ids,
 * operation name, times in microseconds, tags.
 */
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { jaegerBatch } from '../../../../runtime/observe/trace/jaeger-exporter.ts';
import { span } from './spans.ts';

type Value = boolean | number | bigint | string | Value[] | Map<number, Value>;

/** Reads one Thrift binary-protocol struct (field id → value), as a collector would. */
function readStruct(b: Buffer, at: { i: number }): Map<number, Value> {
  const out = new Map<number, Value>();
  for (;;) {
    const type = b.readInt8(at.i++);
    if (type === 0) return out;
    const id = b.readInt16BE(at.i);
    at.i += 2;
    out.set(id, readValue(b, at, type));
  }
}

function readValue(b: Buffer, at: { i: number }, type: number): Value {
  switch (type) {
    case 2:
      return b.readInt8(at.i++) !== 0;
    case 4: {
      const v = b.readDoubleBE(at.i);
      at.i += 8;
      return v;
    }
    case 8: {
      const v = b.readInt32BE(at.i);
      at.i += 4;
      return v;
    }
    case 10: {
      const v = b.readBigInt64BE(at.i);
      at.i += 8;
      return v;
    }
    case 11: {
      const n = b.readInt32BE(at.i);
      const v = b.toString('utf8', at.i + 4, at.i + 4 + n);
      at.i += 4 + n;
      return v;
    }
    case 12:
      return readStruct(b, at);
    case 15: {
      const elem = b.readInt8(at.i);
      const n = b.readInt32BE(at.i + 1);
      at.i += 5;
      return Array.from({ length: n }, () => readValue(b, at, elem));
    }
    default:
      throw new Error(`unexpected Thrift type ${type} at ${at.i}`);
  }
}

const hexOf = (v: Value) => BigInt.asUintN(64, v as bigint).toString(16).padStart(16, '0');

describe('jaegerBatch', () => {
  it('is a well-formed Batch with the span fields of jaeger.thrift', () => {
    const bytes = jaegerBatch('svc', [span(), span({ name: 'GET app.example.com', kind: SpanKind.SERVER, parentSpanContext: undefined, status: { code: SpanStatusCode.UNSET }, attributes: {} })]);
    const at = { i: 0 };
    const batch = readStruct(bytes, at);
    expect(at.i).toBe(bytes.length); // nothing left over
    expect((batch.get(1) as Map<number, Value>).get(1)).toBe('svc');
    const spans = batch.get(2) as Map<number, Value>[];
    expect(spans).toHaveLength(2);
    const s = spans[0]!;
    expect(hexOf(s.get(2)!) + hexOf(s.get(1)!)).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(hexOf(s.get(3)!)).toBe('b7ad6b7169203331');
    expect(hexOf(s.get(4)!)).toBe('ffad6b7169203332');
    expect(s.get(5)).toBe('upstream exchange');
    expect(s.get(7)).toBe(1);
    expect(s.get(8)).toBe(1_700_000_000_123_456n);
    expect(s.get(9)).toBe(100_000n);
    const tags = new Map((s.get(10) as Map<number, Value>[]).map((t) => [t.get(1), t]));
    expect(tags.get('server.address')!.get(3)).toBe('10.0.0.5:8080');
    expect(tags.get('http.response.status_code')!.get(6)).toBe(502n);
    expect(tags.get('svc.cut')!.get(5)).toBe(true);
    expect(tags.get('ratio')!.get(4)).toBe(0.5);
    expect(tags.get('span.kind')!.get(3)).toBe('client');
    expect(tags.get('error')!.get(5)).toBe(true);
    // A root span: parent id 0.
    expect(spans[1]!.get(4)).toBe(0n);
    expect(spans[1]!.get(5)).toBe('GET app.example.com');
  });
});

