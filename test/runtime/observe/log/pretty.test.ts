/**
 * runtime/observe/log/pretty.ts: `svc_debug` lines an operator reads: one line per entry, the
 * message first, the fields that matter as key=value, no JSON blob, nothing a terminal would act on.
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import prettyTransport, { prettyMessage } from '../../../../runtime/observe/log/pretty.ts';
import { createRunLog } from '../../../../runtime/observe/log/run-log.ts';
import type { AccessEntry } from '../../../../runtime/observe/log/access-line.ts';

const request: AccessEntry = { msg: 'request', requestId: 'r-1', method: 'GET', host: 'app.example.com', path: '/reports', route: 'app', status: 200, ms: 3, client: '203.0.113.7', userAgent: 'Mozilla/5.0 (X11; Linux x86_64)', user: 'alice', decision: 'allow', reasons: ['allowed-user', 'group'], plan: 1 };

/** What the transport prints for the lines svc's run log writes (JSON in, as in the worker). */
async function printed(write: (log: ReturnType<typeof createRunLog>) => void): Promise<string[]> {
  let out = '';
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      out += chunk.toString('utf8');
      done();
    },
  });
  const stream = prettyTransport({ destination });
  const log = createRunLog({ write: (line: string) => stream.write(line) }, { now: () => Date.UTC(2026, 10, 28, 10, 0, 0, 123) });
  write(log);
  await new Promise((r) => setImmediate(r));
  return out.split('\n').filter((l) => l !== '');
}

describe('svc_debug lines (pino-pretty)', () => {
  it('one line per entry: the message first, then status, host, path, route, user, decision as key=value, then the rest; no JSON blob', async () => {
    const lines = await printed((log) => {
      log.access(request);
      log.log({ msg: 'upstream error', requestId: 'r-2', error: 'connect ECONNREFUSED 127.0.0.1:9' });
    });
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^\[2026-11-28 \d\d:\d\d:00\.123 [+-]\d{4}\] INFO: request status=200 host=app\.example\.com path=\/reports route=app user=alice decision=allow requestId=r-1 method=GET ms=3 client=203\.0\.113\.7 userAgent="Mozilla\/5\.0 \(X11; Linux x86_64\)" reasons=allowed-user,group plan=1$/);
    expect(lines[1]).toMatch(/\] WARN: upstream error requestId=r-2 error="connect ECONNREFUSED 127\.0\.0\.1:9"$/);
    for (const l of lines) expect(l).not.toMatch(/[{}]/);
  });

  it('escapes what a terminal would act on, in values and messages; nested fields become dotted keys', () => {
    expect(prettyMessage({ msg: 'request', userAgent: 'x\x1b[31mred\x9b2J\u202e', path: '/a b' })).toBe('request path="/a b" userAgent="x\\u001b[31mred\\u009b2J\\u202e"');
    expect(prettyMessage({ msg: 'two\nlines', detail: { code: 'E1', at: { line: 3 } }, empty: '' })).toBe('two\\u000alines detail.code=E1 detail.at.line=3 empty=""');
    expect(prettyMessage({ msg: 'x', level: 'info', time: 't', service: 'svc', pid: 1, hostname: 'h' })).toBe('x');
  });
});
