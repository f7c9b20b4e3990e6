/**
 * docs/security.md S35 and S36, HTTP/2 rapid reset (CVE-2023-44487): a client that opens streams and resets them at
 * once makes a server start work (here: upstream requests) that nobody waits for, without ever
 * exceeding the concurrent-stream limit. Rules (docs/security.md S35, S36):
 * - svc advertises a finite SETTINGS_MAX_CONCURRENT_STREAMS (100);
 * - a stream the client resets aborts its upstream request at once, and its access line says it
 *   was cut (499), never a complete 200;
 * - a session that resets streams far faster than it completes them gets GOAWAY
 *   (ENHANCE_YOUR_CALM) and is closed.
 * Real svc over TLS (`codec_type: auto`), a real slow upstream on loopback that counts requests; the
 * node:http2 client, and a raw HTTP/2 client (h2-frames.ts) for the burst on ONE connection.
 */
import { connect as http2Connect, constants, type ClientHttp2Session } from 'node:http2';
import { FRAME, getHeaders, rawH2, rstStream, settingsOf } from './h2-frames.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AccessEntry } from '../../runtime/observe/log/access-line.ts';
import { run, type Running } from '../../runtime/process/run.ts';
import { issue, makeCa, type Issued } from '../runtime/tls/pki.ts';
import { configDir, startUpstream, type Upstream } from '../e2e/support.ts';

let ca: Issued;
let server: Issued;

beforeAll(async () => {
  ca = await makeCa('svc rapid reset test CA (TEST ONLY)');
  server = await issue(ca, { cn: 'app.example.com', dns: ['app.example.com'], usage: 'server' });
});

describe('docs/security.md S35: HTTP/2 rapid reset', () => {
  const cfg = configDir();
  const lines: AccessEntry[] = [];
  let up: Upstream;
  let svc: Running;
  /** Requests the upstream received, by path prefix. */
  const seen = { reset: 0, single: 0, singleAborted: 0 };
  const port = () => svc.listening.address.port;

  beforeAll(async () => {
    // Slow: answers after 200 ms, so every request svc starts is still running when the next arrives.
    up = await startUpstream((req, res) => {
      if (req.url?.startsWith('/rr/')) seen.reset++;
      if (req.url === '/single') seen.single++;
      req.resume();
      // `/single` is held far longer than the test waits: only svc's abort can end it early.
      const timer = setTimeout(() => res.end('ok'), req.url === '/single' ? 30_000 : 200);
      res.on('close', () => {
        clearTimeout(timer);
        if (!res.writableFinished && req.url === '/single') seen.singleAborted++;
      });
    });
    cfg.writeTls(server, { codec_type: 'auto' }, [{ name: 'app', from: 'https://app.example.com', to: up.url, allow_public_unauthenticated_access: true }]);
    svc = await run({ configPath: cfg.path, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 }, watch: false, access: (e) => lines.push(e) });
  });

  afterAll(async () => {
    await svc?.close();
    await up?.close();
    cfg.remove();
  });

  /** A connected session: resolves once svc's SETTINGS arrived. */
  const connect = () =>
    new Promise<ClientHttp2Session>((resolve, reject) => {
      const session = http2Connect(`https://127.0.0.1:${port()}`, { ca: ca.certPem, servername: 'app.example.com' });
      session.on('error', () => undefined);
      session.once('remoteSettings', () => resolve(session));
      session.once('close', () => reject(new Error('closed before SETTINGS')));
    });

  it('advertises a finite SETTINGS_MAX_CONCURRENT_STREAMS of at most 100', async () => {
    const session = await connect();
    try {
      expect(session.remoteSettings.maxConcurrentStreams).toBeLessThanOrEqual(100);
    } finally {
      session.destroy();
    }
  });

  it('a stream the client resets aborts its upstream request and is logged as cut (499), never 200', async () => {
    const session = await connect();
    try {
      const before = seen.single;
      const stream = session.request({ ':path': '/single', ':authority': 'app.example.com' });
      stream.on('error', () => undefined);
      // The upstream holds the request (200 ms); the client gives up before it answers.
      await expect.poll(() => seen.single, { timeout: 5_000, interval: 5 }).toBe(before + 1);
      stream.close(constants.NGHTTP2_CANCEL);
      // svc closed its upstream request (the upstream would answer only after 30 s).
      await expect.poll(() => seen.singleAborted, { timeout: 5_000 }).toBe(1);
      await expect.poll(() => lines.filter((l) => l.path === '/single').length, { timeout: 5_000 }).toBe(1);
      expect(lines.find((l) => l.path === '/single')).toMatchObject({ status: 499, cut: true });
    } finally {
      session.destroy();
    }
  });

  it('1,000 HEADERS+RST_STREAM pairs on one connection: at most the stream limit reach the upstream, and the session gets GOAWAY', async () => {
    // Written by hand (h2-frames.ts), as an attacker sends them: the node:http2 client keeps to the
    // stream limit (a stream reset before its HEADERS left is never sent), and it stalls rather than
    // report the GOAWAY when the server closes under a burst of its own resets.
    const c = await rawH2(port(), 'app.example.com', ca.certPem);
    for (let batch = 0; batch < 10; batch++) {
      const pairs: Buffer[] = [];
      for (let i = 0; i < 100; i++) {
        const id = 1 + 2 * (batch * 100 + i);
        pairs.push(getHeaders(id, 'app.example.com', `/rr/${id}`), rstStream(id, constants.NGHTTP2_CANCEL));
      }
      if (!(await c.write(Buffer.concat(pairs)))) break;
    }
    const closed = await Promise.race([c.closed.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 10_000))]);
    c.socket.destroy();
    expect(closed).toBe(true);
    const settings = c.frames.find((f) => f.type === FRAME.SETTINGS && (f.flags & 0x1) === 0);
    const limit = settingsOf(settings!.payload).get(0x3)!;
    expect(limit).toBeLessThanOrEqual(100);
    // One GOAWAY, with ENHANCE_YOUR_CALM, and the connection closed.
    const goaway = c.frames.filter((f) => f.type === FRAME.GOAWAY).map((f) => f.payload.readUInt32BE(4));
    expect(goaway).toEqual([constants.NGHTTP2_ENHANCE_YOUR_CALM]);
    // Let any upstream request svc did start arrive (the upstream answers after 200 ms).
    await new Promise((r) => setTimeout(r, 500));
    expect(seen.reset).toBeLessThanOrEqual(limit);
    // Every stream svc started is logged as cut, none as a complete answer.
    const reset = lines.filter((l) => l.path.startsWith('/rr/'));
    expect(reset.length).toBeGreaterThan(0);
    expect(reset.filter((l) => l.status !== 499)).toEqual([]);
  });
});
