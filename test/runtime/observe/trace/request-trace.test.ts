/**
 * runtime/observe/trace/request-trace.ts: which requests are traced (sampled before any span
 * exists; a trusted hop's context always continued, an untrusted one never forcing a trace), and
 * which headers an untrusted request loses before forwarding (every name of TRACE_HEADERS, nothing
 * else).
 */
import { describe, expect, it } from 'vitest';
import { dropTraceHeaders, isTraced, TRACE_HEADERS, type TraceSetup } from '../../../../runtime/observe/trace/request-trace.ts';

/** A setup whose tracer and propagator are never reached by isTraced. */
function setup(sampleRate: number, trustIncoming: boolean): TraceSetup {
  return { sampleRate, trustIncoming, tracer: undefined as never, propagator: undefined as never };
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

describe('dropTraceHeaders', () => {
  it('unsets every trace header and keeps the others', () => {
    const headers: Record<string, string | undefined> = { host: 'a.example.com', 'x-request-id': 'r', accept: '*/*' };
    for (const name of TRACE_HEADERS) headers[name] = `value of ${name}`;
    dropTraceHeaders(headers);
    for (const name of TRACE_HEADERS) expect(headers[name], name).toBeUndefined();
    expect(headers).toMatchObject({ host: 'a.example.com', 'x-request-id': 'r', accept: '*/*' });
  });

  it('adds nothing to headers without trace headers', () => {
    const headers = { host: 'a.example.com' };
    dropTraceHeaders(headers);
    expect(Object.keys(headers)).toEqual(['host']);
  });
});
