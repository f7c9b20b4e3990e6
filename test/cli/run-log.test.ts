/**
 * cli/run-log.ts: svc run's lines follow the plan's `log_level`, `proxy_log_level` and `svc_debug`,
 * and a change applies at once (a reload).
 */
import { describe, expect, it } from 'vitest';
import type { PlanSettings } from '../../compiler/plan/types.ts';
import { createRunLog, humanLine } from '../../cli/run-log.ts';
import { requestLine } from '../../cli/access-line.ts';

const request = { msg: 'request', requestId: 'r-1', method: 'GET', status: 200, ms: 3, plan: 1 } as const;
const logging = (l: Partial<PlanSettings['logging']> = {}): PlanSettings['logging'] => ({ debug: false, level: 'info', proxyLevel: 'info', ...l });

function capture(color = false) {
  const lines: string[] = [];
  const log = createRunLog({ write: (s: string) => lines.push(s) }, { color, now: () => 1_700_000_000_000 });
  return { log, lines, text: () => lines.join('') };
}

describe('svc run logs', () => {
  it('by default: info and above, and access lines, as JSON', () => {
    const { log, lines } = capture();
    log.log({ msg: 'listening', address: '127.0.0.1:8443' });
    log.log(request);
    log.log({ level: 'debug', msg: 'detail' });
    expect(lines).toEqual(['{"level":30,"time":1700000000000,"service":"svc","msg":"listening","address":"127.0.0.1:8443"}\n', requestLine(request, 1_700_000_000_000)]);
  });

  it('log_level sets the least level of svc lines; messages carry their level', () => {
    const { log, lines } = capture();
    log.apply(logging({ level: 'warn', proxyLevel: 'info' }));
    log.log({ msg: 'listening' }); // info: out
    log.log({ msg: 'reload failed; keeping the current plan', error: 'x' }); // error: in
    log.log({ msg: 'upstream error', requestId: 'r' }); // warn: in
    log.log({ level: 'warn', msg: 'setting honoured only partly', setting: 'dns_lookup_family' }); // its own level, not repeated
    log.log(request); // access line: proxy_log_level info
    expect(lines.map((l) => JSON.parse(l) as Record<string, unknown>).map((e) => [e['level'], e['msg']])).toEqual([
      [50, 'reload failed; keeping the current plan'],
      [40, 'upstream error'],
      [40, 'setting honoured only partly'],
      [30, 'request'],
    ]);
    expect(lines[2]!.match(/"level"/g)).toHaveLength(1);
  });

  it('log_level debug lets debug lines through', () => {
    const { log, lines } = capture();
    log.apply(logging({ level: 'debug' }));
    log.log({ level: 'debug', msg: 'detail' });
    expect(lines).toHaveLength(1);
  });

  it('access lines are info lines: written when proxy_log_level is debug or info', () => {
    for (const [proxyLevel, written] of [['debug', 1], ['info', 1], ['warn', 0], ['error', 0]] as const) {
      const { log, lines } = capture();
      log.apply(logging({ level: 'error', proxyLevel }));
      log.log(request);
      expect(lines, proxyLevel).toHaveLength(written);
    }
  });

  it('a new plan applies at once (reload)', () => {
    const { log, lines } = capture();
    log.apply(logging({ proxyLevel: 'error' }));
    log.log(request);
    log.apply(logging({ proxyLevel: 'info', debug: true }));
    log.log(request);
    expect(lines).toEqual(['2023-11-14T22:13:20.000Z INFO  request requestId=r-1 method=GET status=200 ms=3 plan=1\n']);
  });

  it('svc_debug: human-readable lines, colored when asked', () => {
    const { log, lines } = capture(true);
    log.apply(logging({ debug: true }));
    log.log({ msg: 'reload failed; keeping the current plan', error: 'metrics_address: not implemented', checksum: 'sha256:ab' });
    expect(lines).toEqual([
      '\x1b[2m2023-11-14T22:13:20.000Z\x1b[0m \x1b[31mERROR\x1b[0m \x1b[1mreload failed; keeping the current plan\x1b[0m \x1b[2merror=\x1b[0m"metrics_address: not implemented" \x1b[2mchecksum=\x1b[0msha256:ab\n',
    ]);
  });

  it('humanLine writes objects as JSON and leaves a line it cannot read as it is', () => {
    expect(humanLine('{"level":40,"time":0,"service":"svc","msg":"upstream","event":{"a":1},"n":2}', false)).toBe('1970-01-01T00:00:00.000Z WARN  upstream event={"a":1} n=2\n');
    expect(humanLine('not json\n', false)).toBe('not json\n');
  });
});
