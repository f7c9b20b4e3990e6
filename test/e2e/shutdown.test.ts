/**
 * Graceful stop of `svc run` as operators run it (a real child process): SIGTERM lets a
 * request in flight finish (the client gets its whole 200, svc exits 0), a request still running at
 * the drain deadline is cut and logged as cut (499, never 200), a second signal exits at once; the
 * same with `--workers 2`.
 */
import { request, type ServerResponse } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { spawnSvc, type SignalledSvc } from './svc-process.ts';
import { configDir, startUpstream, type Upstream } from './support.ts';


type Svc = SignalledSvc;

/** The outcome of one request through svc: its status and body, or the error that cut it. */
function get(port: number, path: string): Promise<{ status: number; body: string } | { error: string }> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false, headers: { host: 'app.example.com' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', (e) => resolve({ error: e.message }));
      res.on('aborted', () => resolve({ error: 'aborted' }));
    });
    req.on('error', (e) => resolve({ error: e.message }));
    req.end();
  });
}

describe('svc run stops gracefully', () => {
  let up: Upstream;
  /** Responses the slow upstream holds, by path, until the test lets them go. */
  const held = new Map<string, ServerResponse>();
  const cfg = configDir();
  let svc: Svc | undefined;

  beforeAll(async () => {
    up = await startUpstream((req, res) => {
      if (req.url === '/fast') return void res.end('fast');
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first half;');
      held.set(req.url ?? '', res);
    });
    cfg.write({ address: '127.0.0.1:8443' }, [{ name: 'app', from: 'https://app.example.com', to: up.url, allow_public_unauthenticated_access: true }]);
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

  /** Starts svc; `group`: in a process group of its own (as a terminal runs it), so a signal can reach every process. */
  async function start(args: string[], group = false): Promise<Svc> {
    // The shutdown delay is tested in signals.test.ts: here the drain starts at once.
    svc = await spawnSvc(cfg.path, ['--shutdown-delay', '0', ...args], { group });
    return svc;
  }

  /** Waits until the upstream holds the request for `path` (it is in flight through svc). */
  async function inFlight(path: string): Promise<ServerResponse> {
    await expect.poll(() => held.has(path), { timeout: 10_000 }).toBe(true);
    return held.get(path)!;
  }

  /** The access lines for `path`. */
  const lines = (s: Svc, path: string) =>
    s
      .out()
      .split('\n')
      .filter((l) => l.includes('"msg":"request"') && l.includes(`"path":"${path}"`))
      .map((l) => JSON.parse(l) as Record<string, unknown>);

  for (const workers of ['1', '2']) {
    describe(`--workers ${workers}`, () => {
      it('SIGTERM lets a request in flight finish: the client gets its whole 200 and svc exits 0', async () => {
        const s = await start(['--workers', workers, '--drain-timeout', '60']);
        const answer = get(s.port, '/slow');
        const res = await inFlight('/slow');
        s.child.kill('SIGTERM');
        await expect.poll(s.out, { timeout: 10_000 }).toContain('"msg":"stopping"');
        // Draining: no new connection is accepted.
        await expect.poll(async () => 'error' in (await get(s.port, '/fast')), { timeout: 10_000 }).toBe(true);
        res.end('second half');
        expect(await answer).toEqual({ status: 200, body: 'first half;second half' });
        expect(await s.exited).toBe(0);
        expect(lines(s, '/slow')).toEqual([expect.objectContaining({ status: 200, route: 'app' })]);
        expect(s.out()).toContain('"msg":"stopped"');
      }, 60_000);

      it('a request still running at the drain deadline is cut and logged as cut, never as 200', async () => {
        const s = await start(['--workers', workers, '--drain-timeout', '1']);
        const answer = get(s.port, '/stuck');
        await inFlight('/stuck');
        s.child.kill('SIGTERM');
        expect(await s.exited).toBe(0);
        expect(await answer).toHaveProperty('error');
        expect(lines(s, '/stuck')).toEqual([expect.objectContaining({ status: 499, cut: true, cutBy: 'shutdown', level: 'warn' })]);
        expect(s.out()).toContain('"msg":"drain deadline reached; cutting what is still running"');
      }, 60_000);

      // With workers, a Ctrl-C reaches the primary and every worker, in either order (a single
      // process has no such race: the case exists for the two-worker variant only, not skipped).
      if (workers === '2')
        it('Ctrl-C in a terminal (SIGINT to every process of the group) stops gracefully too', async () => {
        const s = await start(['--workers', workers, '--drain-timeout', '60'], true);
        const answer = get(s.port, '/slow');
        const res = await inFlight('/slow');
        process.kill(-s.child.pid!, 'SIGINT');
        await expect.poll(s.out, { timeout: 10_000 }).toContain('"msg":"stopping"');
        res.end('second half');
        expect(await answer).toEqual({ status: 200, body: 'first half;second half' });
        expect(await s.exited).toBe(0);
      }, 60_000);

      it('a second signal stops at once', async () => {
        const s = await start(['--workers', workers, '--drain-timeout', '600']);
        const answer = get(s.port, '/stuck');
        await inFlight('/stuck');
        s.child.kill('SIGTERM');
        await expect.poll(s.out, { timeout: 10_000 }).toContain('"msg":"stopping"');
        s.child.kill('SIGTERM');
        // Without the second signal svc would wait 600 s for the request.
        expect(await s.exited).toBe(1);
        expect(await answer).toHaveProperty('error');
      }, 60_000);
    });
  }
});
