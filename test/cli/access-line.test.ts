/** cli/access-line.ts writes the very bytes pino would write for the per-request line. */
import { Writable } from 'node:stream';
import fc from 'fast-check';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { isRequestEntry, requestLine, type RequestEntry } from '../../cli/access-line.ts';

/** What `pino({ base: { service: 'svc' } }).info(entry)` writes, as run-command.ts configures it. */
function pinoLine(entry: Record<string, unknown>): string {
  let out = '';
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      out += chunk.toString('utf8');
      done();
    },
  });
  // pino writes synchronously to a plain stream.
  pino({ base: { service: 'svc' } }, sink).info(entry);
  return out;
}

const timeOf = (line: string) => Number(/"time":(\d+)/.exec(line)![1]);

const entryArb: fc.Arbitrary<RequestEntry> = fc.record({
  msg: fc.constant('request' as const),
  requestId: fc.oneof(fc.uuid(), fc.string({ unit: 'grapheme' })),
  method: fc.option(fc.oneof(fc.constantFrom('GET', 'POST', 'M-SEARCH'), fc.string({ unit: 'grapheme' }), fc.string({ unit: 'binary' })), { nil: undefined }),
  status: fc.integer({ min: 100, max: 599 }),
  ms: fc.nat(),
  plan: fc.nat(),
});

describe('requestLine', () => {
  it('equals pino\'s line for the same entry and time (property)', () => {
    fc.assert(
      fc.property(entryArb, (entry) => {
        const expected = pinoLine({ ...entry });
        expect(requestLine(entry, timeOf(expected))).toBe(expected);
      }),
      { numRuns: 500 },
    );
  });

  it('is one JSON object per line', () => {
    const line = requestLine({ msg: 'request', requestId: 'r1', method: 'GE"T\n', status: 200, ms: 3, plan: 1 }, 1);
    expect(line.endsWith('}\n')).toBe(true);
    expect(line.slice(0, -1)).not.toContain('\n');
    expect(JSON.parse(line)).toEqual({ level: 30, time: 1, service: 'svc', msg: 'request', requestId: 'r1', method: 'GE"T\n', status: 200, ms: 3, plan: 1 });
  });
});

describe('isRequestEntry', () => {
  it('takes only the handler\'s exact request entry; anything else goes to pino', () => {
    const entry = { msg: 'request', requestId: 'r', method: 'GET', status: 200, ms: 1, plan: 1 };
    expect(isRequestEntry(entry)).toBe(true);
    expect(isRequestEntry({ ...entry, method: undefined })).toBe(true);
    expect(isRequestEntry({ ...entry, extra: 1 })).toBe(false);
    expect(isRequestEntry({ ...entry, msg: 'upstream error' })).toBe(false);
    expect(isRequestEntry({ ...entry, ms: 1.5 })).toBe(false);
    expect(isRequestEntry({ ...entry, status: '200' })).toBe(false);
  });
});
