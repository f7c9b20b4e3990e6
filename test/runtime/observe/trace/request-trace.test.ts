/**
 * runtime/observe/trace/request-trace.ts: which requests are traced (sampled before any span
 * exists; a trusted hop's context always continued, an untrusted one never forcing a trace), and
 * which headers an untrusted request loses before forwarding (every name and prefix of
 * TRACE_HEADERS, nothing else).
 */
import { describe, expect, it } from 'vitest';
import { dropTraceHeaders, isTraced, isTraceHeader, TRACE_HEADERS, type TraceSetup } from '../../../../runtime/observe/trace/request-trace.ts';

/** A setup whose tracer, propagator and spans are never reached by isTraced. */
function setup(sampleRate: number, trustIncoming: boolean): TraceSetup {
  return { sampleRate, trustIncoming, tracer: undefined as never, propagator: undefined as never, begin: () => undefined as never };
}

const TRACEPARENT = { traceparent: ['00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'] };

describe('isTraced', () => {
  it('samples new traces at the rate: never at 0, always at 1', () => {
    for (let i = 0; i < 100; i++) {
      expect(isTraced(setup(0, false), {})).toBe(false);
      expect(isTraced(setup(1, false), {})).toBe(true);
    }
  });

  it('continues a trusted hop whatever the rate, through traceparent, b3 or x-b3-traceid', () => {
    expect(isTraced(setup(0, true), TRACEPARENT)).toBe(true);
    expect(isTraced(setup(0, true), { b3: ['0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-1'] })).toBe(true);
    expect(isTraced(setup(0, true), { 'x-b3-traceid': ['0af7651916cd43dd8448eb211c80319c'] })).toBe(true);
    expect(isTraced(setup(0, true), {})).toBe(false);
  });

  it('does not let an untrusted client force a trace with its headers', () => {
    expect(isTraced(setup(0, false), { ...TRACEPARENT, b3: ['x'], 'x-b3-traceid': ['x'] })).toBe(false);
  });
});

/** One header of each name and prefix of TRACE_HEADERS (a prefix gets a name under it). */
const EVERY_FORMAT = TRACE_HEADERS.map((n) => (n.endsWith('-') ? `${n}something` : n));

describe('dropTraceHeaders', () => {
  it('unsets every trace header of every format svc\'s providers continue, and keeps the others', () => {
    const headers: Record<string, string | undefined> = { host: 'a.example.com', 'x-request-id': 'r', accept: '*/*', 'x-b3': 'kept', tracer: 'kept', 'uber-trace': 'kept', 'x-datadog': 'kept' };
    for (const name of EVERY_FORMAT) headers[name] = `value of ${name}`;
    dropTraceHeaders(headers);
    for (const name of EVERY_FORMAT) expect(headers[name], name).toBeUndefined();
    expect(headers).toMatchObject({ host: 'a.example.com', 'x-request-id': 'r', accept: '*/*', 'x-b3': 'kept', tracer: 'kept', 'uber-trace': 'kept', 'x-datadog': 'kept' });
  });

  it('drops Jaeger, baggage and the apm vendor\'s headers, not only W3C and B3 (docs/security.md S44)', () => {
    const headers: Record<string, string | undefined> = {
      'uber-trace-id': '0af7651916cd43dd:b7ad6b7169203331:0:1',
      'uberctx-user': 'admin',
      'jaeger-debug-id': 'x',
      baggage: 'role=admin',
      'x-datadog-trace-id': '1',
      'x-datadog-parent-id': '2',
      'x-datadog-sampling-priority': '2',
      'x-b3-anything': '1',
    };
    dropTraceHeaders(headers);
    for (const [name, value] of Object.entries(headers)) expect(value, name).toBeUndefined();
  });

  it('adds nothing to headers without trace headers', () => {
    const headers = { host: 'a.example.com' };
    dropTraceHeaders(headers);
    expect(Object.keys(headers)).toEqual(['host']);
  });
});

describe('isTraceHeader', () => {
  it('knows each name and prefix, case as forwarded (lower-case)', () => {
    for (const name of EVERY_FORMAT) expect(isTraceHeader(name), name).toBe(true);
    for (const name of ['', 'b', 'x-b3', 'x-datadog', 'uberctx', 'trace', 'jaeger', 'accept', 'x-request-id']) expect(isTraceHeader(name), name).toBe(false);
  });
});
