/** runtime/observe/trace/apm-exporter.ts: the agent's v0.4 JSON, ids exact past 2^53. */
import { describe, expect, it } from 'vitest';
import { apmTraces } from '../../../../runtime/observe/trace/apm-exporter.ts';
import { span } from './spans.ts';

describe('apmTraces', () => {
  it('writes 64-bit ids as exact unsigned integers and times in nanoseconds', () => {
    const { body, count } = apmTraces('svc', [span({ spanContext: () => ({ traceId: '0af7651916cd43ddffffffffffffffff', spanId: 'fffffffffffffffe', traceFlags: 1 }) })]);
    expect(count).toBe(1);
    expect(body).toContain('"trace_id":18446744073709551615,');
    expect(body).toContain('"span_id":18446744073709551614,');
    expect(body).toContain(`"parent_id":${BigInt('0xffad6b7169203332').toString()},`);
    expect(body).toContain('"start":1700000000123456789,"duration":100000000,"error":1');
    const parsed = JSON.parse(body) as { meta: Record<string, string>; service: string }[][];
    expect(parsed[0]![0]!.meta['_dd.p.tid']).toBe('0af7651916cd43dd');
    expect(parsed[0]![0]!.service).toBe('svc');
  });
});
