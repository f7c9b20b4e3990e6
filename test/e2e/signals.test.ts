/**
 * Signals of `svc run` as operators send them (a real child process; docs/observability.md): SIGHUP reloads
 * through the one reload path (never a stop), in the single process and with `--workers 2` (the
 * primary reloads; a worker that gets SIGHUP itself survives it); SIGTERM first turns readiness to
 * 503 `draining` on the metrics listener and on `/.svc/ready` while the main listener still accepts
 * connections for `--shutdown-delay`, keeps the metrics listener up for the whole drain, and a second
 * signal still exits at once. docs/running.md "Reload", docs/logging.md "Stopping".
 */
import { request, type ServerResponse } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../cli/main.ts';
import { freePort, scrape } from './metrics-support.ts';
import { spawnSvc, type SignalledSvc } from './svc-process.ts';
import { configDir, startUpstream, type Upstream } from './support.ts';

type Svc = SignalledSvc;

type Outcome = { status: number; body: string; headers: Record<string, string | string[] | undefined> } | { error: string };

/** One request on a new connection (no keep-alive): its answer, or the error that refused or cut it. */
function get(port: number, path: string, host = 'app.example.com', idleMs = 10_000): Promise<Outcome> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false, headers: { host } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
      res.on('error', (e) => resolve({ error: e.message }));
    });
    req.setTimeout(idleMs, () => req.destroy(new Error(`no answer in ${idleMs} ms`)));
    req.on('error', (e) => resolve({ error: e.message }));
    req.end();
  });
}

const statusOf = (o: Outcome) => ('status' in o ? o.status : o.error);

describe('svc run and signals', () => {
  let up: Upstream;
  const held = new Map<string, ServerResponse>();
  const cfg = configDir();
  let metricsPort = 0;
  let svc: Svc | undefined;

  beforeAll(async () => {
    up = await startUpstream((req, res) => {
      if (req.url === '/fast') return void res.end('fast');
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first half;');
      held.set(req.url ?? '', res);
    });
    metricsPort = await freePort();
    cfg.write({ address: '127.0.0.1:8443', metrics_address: `127.0.0.1:${metricsPort}` }, [{ name: 'app', from: 'https://app.example.com', to: up.url, allow_public_unauthenticated_access: true }]);
  });
  afterEach(async () => {
    if (svc && svc.child.exitCode === null && svc.child.signalCode === null) {
      svc.child.kill('SIGKILL');
      await svc.exited;
    }
    svc = undefined;
    for (const res of held.values()) res.destroy();
    held.clear();
  });
  afterAll(async () => {
    await up?.close();
    cfg.remove();
  });

  async function start(args: string[]): Promise<Svc> {
    svc = await spawnSvc(cfg.path, ['--expose-checksum', ...args]);
    return svc;
  }

  /** svc's JSON lines with this `msg` (matched by message only: levels and times are another concern). */
  const linesWith = (s: Svc, msg: string) =>
    s
      .out()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l['msg'] === msg);

  const alive = (s: Svc) => s.child.exitCode === null && s.child.signalCode === null;

  /** With workers: a worker that gets SIGHUP itself logs why it ignores it and serves on (the primary reloads). */
  const workerSurvivesSighup = async (s: Svc) => {
    const first = await get(s.port, '/fast');
    const worker = Number('headers' in first ? first.headers['x-svc-worker'] : Number.NaN);
    expect(Number.isInteger(worker)).toBe(true);
    process.kill(worker, 'SIGHUP');
    await expect.poll(() => linesWith(s, 'SIGHUP ignored by a worker: send it to the primary, which reloads and hands the plan to every worker').length, { timeout: 10_000 }).toBe(1);
    // Still running: signal 0 only checks that the process exists.
    expect(() => process.kill(worker, 0)).not.toThrow();
    expect(linesWith(s, 'worker died; replacing it')).toHaveLength(0);
    expect(statusOf(await get(s.port, '/fast'))).toBe(200);
  };

  it('rejects a --shutdown-delay that is not a number of seconds', async () => {
    let err = '';
    const code = await main(['run', cfg.path, '--shutdown-delay', 'soon'], { out: () => undefined, err: (t) => (err += t) });
    expect(code).toBe(2);
    expect(err).toContain('--shutdown-delay `soon` is not a number of seconds');
  });

  for (const workers of ['1', '2']) {
    describe(`--workers ${workers}`, () => {
      // With workers, the same process also shows that a worker that gets SIGHUP itself does not die (one start fewer).
      it(`SIGHUP reloads the configuration through the reload path, and svc keeps serving${workers === '2' ? '; a worker that gets SIGHUP itself does not die (the primary reloads)' : ''}`, async () => {
        const s = await start(['--workers', workers, '--shutdown-delay', '0']);
        s.child.kill('SIGHUP');
        // The config did not change: the reload path says so (no file watcher fires for it).
        const kept = () => s.out().split('\n').filter((l) => l.includes('"msg":"config unchanged; plan sha256:'));
        await expect.poll(() => kept().length, { timeout: 20_000 }).toBeGreaterThanOrEqual(1);
        expect(JSON.parse(kept()[0]!)).toMatchObject({ level: 'info', result: 'unchanged' });
        expect(linesWith(s, 'reload')).toHaveLength(0);
        expect(linesWith(s, 'SIGHUP: reloading the configuration')).toHaveLength(1);
        expect(alive(s)).toBe(true);
        expect(statusOf(await get(s.port, '/fast'))).toBe(200);
        if (workers === '2') await workerSurvivesSighup(s);
        s.child.kill('SIGTERM');
        expect(await s.exited).toBe(0);
      }, 120_000);

      it('SIGTERM: readiness says draining at once, connections are still accepted for the shutdown delay, liveness stays 200; a second signal exits at once', async () => {
        const s = await start(['--workers', workers, '--shutdown-delay', '600', '--drain-timeout', '600']);
        expect(statusOf(await get(s.port, '/.svc/ready'))).toBe(200);
        expect((await scrape(metricsPort, { path: '/readyz' })).status).toBe(200);
        s.child.kill('SIGTERM');
        await expect.poll(async () => (await scrape(metricsPort, { path: '/readyz' })).body, { timeout: 10_000 }).toBe('not ready: draining\n');
        expect((await scrape(metricsPort, { path: '/readyz' })).status).toBe(503);
        expect((await scrape(metricsPort, { path: '/healthz' })).status).toBe(200);
        // Within the shutdown delay: new connections are accepted and served, and the main
        // listener's own probes say the same as the metrics listener's.
        expect(statusOf(await get(s.port, '/fast'))).toBe(200);
        await expect.poll(async () => JSON.stringify(await get(s.port, '/.svc/ready')), { timeout: 10_000 }).toContain('"status":503,"body":"draining"');
        expect(await get(s.port, '/.svc/ping')).toMatchObject({ status: 200, body: 'OK' });
        expect(linesWith(s, 'stopping')[0]).toMatchObject({ shutdownDelayMs: 600_000, drainTimeoutMs: 600_000 });
        // Without the second signal svc would wait 600 s.
        s.child.kill('SIGTERM');
        expect(await s.exited).toBe(1);
      }, 120_000);

      it('the metrics listener answers through the whole drain (/readyz 503 draining, /healthz 200) until svc exits', async () => {
        const s = await start(['--workers', workers, '--shutdown-delay', '0', '--drain-timeout', '60']);
        // Held across the polls below, each of which may wait out its own timeout: idle for longer.
        const answer = get(s.port, '/slow', 'app.example.com', 45_000);
        await expect.poll(() => held.has('/slow'), { timeout: 10_000 }).toBe(true);
        s.child.kill('SIGTERM');
        // Draining: the main listener refuses new connections (ECONNREFUSED), and until it does
        // every new one is served (or, accepted the moment the drain starts and before its request
        // was read, closed at once as an idle connection): none is accepted and then left
        // unanswered (with --workers the primary closes the address once no worker takes them).
        const seen: string[] = [];
        // New connections while the drain starts (300: 10 every 10 ms, as a busy load balancer
        // still sends them; with Node's round robin one of them was often left unanswered), then
        // polls until one is refused.
        const burst: Promise<void>[] = [];
        for (let i = 0; i < 30; i++) {
          for (let j = 0; j < 10; j++) burst.push(get(s.port, '/fast', 'app.example.com', 10_000).then((o) => void seen.push(String(statusOf(o)))));
          await new Promise((r) => setTimeout(r, 10));
        }
        await Promise.all(burst);
        await expect
          .poll(
            async () => {
              const outcome = String(statusOf(await get(s.port, '/fast', 'app.example.com', 10_000)));
              seen.push(outcome);
              return outcome;
            },
            { timeout: 30_000 },
          )
          .toMatch(/ECONNREFUSED/);
        expect(seen.filter((o) => o !== '200' && !/ECONNREFUSED|ECONNRESET|socket hang up/.test(o))).toEqual([]);
        // ...while the health listener still answers.
        const ready = await scrape(metricsPort, { path: '/readyz' });
        expect([ready.status, ready.body]).toEqual([503, 'not ready: draining\n']);
        expect((await scrape(metricsPort, { path: '/healthz' })).status).toBe(200);
        held.get('/slow')!.end('second half');
        expect(await answer).toMatchObject({ status: 200, body: 'first half;second half' });
        expect(await s.exited).toBe(0);
      }, 120_000);
    });
  }
});
