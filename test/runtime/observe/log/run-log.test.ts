/**
 * runtime/observe/log/run-log.ts: svc run's lines follow the plan's `log_level`, `proxy_log_level`
 * and `svc_debug`, and a change applies at once (a reload); every line carries the `service` label
 * of the plan's `services`.
 */
import { describe, expect, it } from 'vitest';
import type { PlanSettings } from '../../../../compiler/plan/types.ts';
import { createRunLog } from '../../../../runtime/observe/log/run-log.ts';
import { accessLine, type AccessEntry } from '../../../../runtime/observe/log/access-line.ts';

const request: AccessEntry = { msg: 'request', requestId: 'r-1', method: 'GET', host: 'app.example.com', path: '/', status: 200, ms: 3, decision: 'allow', plan: 1 };
const failed: AccessEntry = { ...request, status: 502 };
type Services = PlanSettings['mode']['services'];
const logging = (l: Partial<PlanSettings['logging']> = {}, services: Services = 'all'): Pick<PlanSettings, 'logging' | 'mode'> => ({
  logging: { debug: false, level: 'info', proxyLevel: 'info', ...l },
  mode: { services, allInOne: services === 'all', sharedSecret: null },
});

function capture() {
  const lines: string[] = [];
  const pretty: string[] = [];
  const log = createRunLog({ write: (s: string) => lines.push(s) }, { now: () => 1_700_000_000_000, pretty: () => ({ write: (s: string) => pretty.push(s) }) });
  return { log, lines, pretty };
}

describe('svc run logs', () => {
  it('by default: info and above, and access lines, as JSON', () => {
    const { log, lines } = capture();
    log.log({ msg: 'listening', address: '127.0.0.1:8443' });
    log.access(request);
    log.log({ level: 'debug', msg: 'detail' });
    expect(lines).toEqual(['{"level":"info","time":"2023-11-14T22:13:20.000Z","service":"svc","msg":"listening","address":"127.0.0.1:8443"}\n', accessLine(request, 1_700_000_000_000)]);
  });

  it('log_level sets the least level of svc lines; messages carry their level', () => {
    const { log, lines } = capture();
    log.apply(logging({ level: 'warn', proxyLevel: 'info' }));
    log.log({ msg: 'listening' }); // info: out
    log.log({ msg: 'reload failed; keeping the current plan', error: 'x' }); // error: in
    log.log({ msg: 'upstream error', requestId: 'r' }); // warn: in
    log.log({ level: 'warn', msg: 'setting honoured only partly', setting: 'dns_lookup_family' }); // its own level, not repeated
    log.access(request); // access line: proxy_log_level info
    expect(lines.map((l) => JSON.parse(l) as Record<string, unknown>).map((e) => [e['level'], e['msg']])).toEqual([
      ['error', 'reload failed; keeping the current plan'],
      ['warn', 'upstream error'],
      ['warn', 'setting honoured only partly'],
      ['info', 'request'],
    ]);
    expect(lines[2]!.match(/"level"/g)).toHaveLength(1);
  });

  it('log_level debug lets debug lines through', () => {
    const { log, lines } = capture();
    log.apply(logging({ level: 'debug' }));
    log.log({ level: 'debug', msg: 'detail' });
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 'debug', msg: 'detail' });
  });

  it('names levels and writes times as an operator and a log shipper read them: "level":"info", RFC 3339 (UTC, ms)', () => {
    let now = Date.UTC(2026, 10, 28, 10, 0, 0, 123);
    const lines: string[] = [];
    const log = createRunLog({ write: (s: string) => lines.push(s) }, { now: () => now });
    log.log({ msg: 'listening' });
    now += 1_001;
    log.log({ msg: 'endpoint error' });
    log.access(failed);
    expect(lines.map((l) => l.slice(0, l.indexOf(',"service"')))).toEqual([
      '{"level":"info","time":"2026-11-28T10:00:00.123Z"',
      '{"level":"error","time":"2026-11-28T10:00:01.124Z"',
      '{"level":"warn","time":"2026-11-28T10:00:01.124Z"',
    ]);
  });

  it('proxy_log_level filters access lines by their level: info, or warn for 5xx and cut responses', () => {
    for (const [proxyLevel, written] of [['debug', 2], ['info', 2], ['warn', 1], ['error', 0]] as const) {
      const { log, lines } = capture();
      log.apply(logging({ level: 'error', proxyLevel }));
      log.access(request);
      log.access(failed);
      expect(lines, proxyLevel).toHaveLength(written);
    }
  });

  it('a new plan applies at once (reload)', () => {
    const { log, lines, pretty } = capture();
    log.apply(logging({ proxyLevel: 'error' }));
    log.access(request);
    log.apply(logging({ proxyLevel: 'info', debug: true }));
    log.access(request);
    expect(lines).toEqual([]);
    expect(pretty).toEqual([accessLine(request, 1_700_000_000_000)]);
  });

  it('svc_debug: every line goes to the pretty transport (JSON in, pino-pretty formats), and back to JSON after', () => {
    const { log, lines, pretty } = capture();
    log.apply(logging({ debug: true }));
    log.log({ msg: 'reload failed; keeping the current plan', error: 'x' });
    log.access(request);
    log.apply(logging({ debug: false }));
    log.log({ msg: 'listening' });
    expect(pretty.map((l) => (JSON.parse(l) as { msg: string }).msg)).toEqual(['reload failed; keeping the current plan', 'request']);
    expect(lines.map((l) => (JSON.parse(l) as { msg: string }).msg)).toEqual(['listening']);
  });

  it('every line carries the service label: svc all-in-one, svc-<service> in distributed mode (spec 1.9)', () => {
    const { log, lines } = capture();
    log.log({ msg: 'before any plan' });
    log.apply(logging({ level: 'warn' }, 'databroker'));
    log.log({ msg: 'listening' }); // info: out (the level follows the plan under a new label too)
    log.log({ msg: 'reload failed; keeping the current plan', error: 'x' });
    log.access(request);
    log.apply(logging({}, 'proxy'));
    log.log({ msg: 'listening' });
    log.access(failed);
    log.apply(logging());
    log.log({ msg: 'listening' });
    const services = lines.map((l) => [(JSON.parse(l) as { service: string; msg: string }).service, (JSON.parse(l) as { msg: string }).msg]);
    expect(services).toEqual([
      ['svc', 'before any plan'],
      ['svc-databroker', 'reload failed; keeping the current plan'],
      ['svc-databroker', 'request'],
      ['svc-proxy', 'listening'],
      ['svc-proxy', 'request'],
      ['svc', 'listening'],
    ]);
    // The access line stays the bytes pino writes, label included.
    expect(lines[2]).toBe(accessLine(request, 1_700_000_000_000, 'svc-databroker'));
    expect(lines.every((l) => l.match(/"service"/g)?.length === 1)).toBe(true);
  });
});
