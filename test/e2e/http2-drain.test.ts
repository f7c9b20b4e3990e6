/**
 * docs/security.md S38 (drain): the graceful stop bounds HTTP/2 streams too. With HTTP/2 streams open to an
 * upstream that never answers, SIGTERM with `--drain-timeout 1` makes `svc run` exit within the
 * drain bound: a stream the client reset has its upstream request aborted at once (a request left
 * running would hold the upstream pools open after the stop), at the deadline every session gets
 * GOAWAY and is destroyed, every open stream and its upstream request is aborted (the upstream sees
 * its connections closed), and each stream's access line says it was cut (499), by the client or
 * by the shutdown; an HTTP/1.1 request on the same listener is cut too. A real child process over TLS
 * (`codec_type: auto`), as operators run it, alone and with `--workers 2`.
 */
import { connect as http2Connect, constants, type ClientHttp2Session, type ClientHttp2Stream } from 'node:http2';
import type { ServerResponse } from 'node:http';
import { connect as tlsConnect } from 'node:tls';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { issue, makeCa, type Issued } from '../runtime/tls/pki.ts';
import { spawnSvc, type SignalledSvc } from './svc-process.ts';
import { configDir, startUpstream, type Upstream } from './support.ts';

/** How long svc may take to exit after SIGTERM with a 1 s drain: the deadline plus a generous margin. */
const EXIT_BOUND_MS = 15_000;

type Svc = SignalledSvc;

describe('svc run drains HTTP/2 streams within the drain bound', () => {
  let ca: Issued;
  let up: Upstream;
  /** Requests the upstream holds forever (it never answers them). */
  const held = new Set<ServerResponse>();
  /** Upstream requests whose connection svc closed (aborted). */
  let aborted = 0;
  const cfg = configDir();
  let svc: Svc | undefined;
  const sessions: ClientHttp2Session[] = [];

  beforeAll(async () => {
    ca = await makeCa('svc h2 drain test CA (TEST ONLY)');
    const server = await issue(ca, { cn: 'app.example.com', dns: ['app.example.com'], usage: 'server' });
    up = await startUpstream((req, res) => {
      held.add(res);
      res.on('close', () => {
        held.delete(res);
        if (!res.writableFinished) aborted++;
      });
      req.resume();
    });
    cfg.writeTls(server, { codec_type: 'auto' }, [{ name: 'app', from: 'https://app.example.com', to: up.url, allow_public_unauthenticated_access: true }]);
  });
  afterEach(async () => {
    for (const s of sessions.splice(0)) s.destroy();
    if (svc && svc.child.exitCode === null && svc.child.signalCode === null) {
      svc.child.kill('SIGKILL');
      await svc.exited;
    }
    svc = undefined;
    for (const res of held) res.destroy();
    held.clear();
  });
  afterAll(async () => {
    await up?.close();
    cfg.remove();
  });

  async function start(args: string[]): Promise<Svc> {
    svc = await spawnSvc(cfg.path, ['--shutdown-delay', '0', ...args]);
    return svc;
  }

  /** Opens `count` streams on a new session; they stay open (the upstream never answers). */
  function openStreams(port: number, prefix: string, count: number): ClientHttp2Stream[] {
    const session = http2Connect(`https://127.0.0.1:${port}`, { ca: ca.certPem, servername: 'app.example.com' });
    session.on('error', () => undefined);
    sessions.push(session);
    return Array.from({ length: count }, (_, i) => {
      const stream = session.request({ ':path': `${prefix}/${i}`, ':authority': 'app.example.com' });
      stream.on('error', () => undefined);
      stream.resume();
      return stream;
    });
  }

  /** The access lines of the `/hang-…` streams. */
  const accessLines = (s: Svc) =>
    s
      .out()
      .split('\n')
      .filter((l) => l.includes('"msg":"request"') && l.includes('"path":"/hang-'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);

  /** Resolves with the exit code, or 'still running' when svc has not exited within the bound. */
  const exitWithinBound = (s: Svc) => Promise.race([s.exited, new Promise<string>((r) => setTimeout(() => r('still running'), EXIT_BOUND_MS).unref())]);

  for (const workers of ['1', '2']) {
    it(`--workers ${workers}: SIGTERM with open HTTP/2 streams to a hanging upstream exits after the drain deadline`, async () => {
      const s = await start(['--workers', workers, '--drain-timeout', '1']);
      aborted = 0;
      // Two sessions (with two workers, likely one per worker), 20 streams each; the client gives
      // up on half of them (RST_STREAM) before the stop: their upstream requests must end too.
      const a = openStreams(s.port, '/hang-a', 20);
      const b = openStreams(s.port, '/hang-b', 20);
      await expect.poll(() => held.size, { timeout: 10_000 }).toBe(40);
      for (const stream of [...a.slice(10), ...b.slice(10)]) stream.close(constants.NGHTTP2_CANCEL);
      await expect.poll(() => accessLines(s).length, { timeout: 5_000 }).toBe(20);
      // And one HTTP/1.1 request on the same listener (ALPN http/1.1: Node's HTTP/2 server cannot
      // close such a connection itself).
      const h1 = tlsConnect({ host: '127.0.0.1', port: s.port, servername: 'app.example.com', ca: ca.certPem, ALPNProtocols: ['http/1.1'] });
      h1.on('error', () => undefined);
      h1.on('data', () => undefined);
      h1.write('GET /hang-h1 HTTP/1.1\r\nHost: app.example.com\r\n\r\n');
      await expect.poll(() => held.size, { timeout: 10_000 }).toBe(21);
      s.child.kill('SIGTERM');
      expect(await exitWithinBound(s)).toBe(0);
      h1.destroy();
      // svc aborted every upstream request it had open.
      await expect.poll(() => aborted, { timeout: 5_000 }).toBe(41);
      const lines = accessLines(s);
      expect(lines).toHaveLength(41);
      // Cut by the client (499), or by the shutdown (499, `cutBy: shutdown`); never a 200.
      const cutBy = (l: Record<string, unknown>) => (l['status'] === 499 ? (l['cutBy'] ?? 'client') : `status ${String(l['status'])}`);
      expect(lines.map(cutBy).sort()).toEqual([...Array<string>(20).fill('client'), ...Array<string>(21).fill('shutdown')]);
    }, 60_000);
  }
});
