/**
 * Response bodies streamed through `svc run` with real sockets on loopback: back-pressure from a
 * slow client reaches the upstream (svc never buffers a whole body), a body cut by the upstream or
 * by the route timeout or the idle timeout is cut for the client too (never a short body that looks
 * complete), a body that keeps coming or a client that holds it back is never taken for idle, and an
 * informational 103 before the answer is not mistaken for it.
 */
import { createHash } from 'node:crypto';
import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect as http2Connect, constants as http2Constants, type ClientHttp2Session, type ClientHttp2Stream } from 'node:http2';
import { createServer as createNetServer, type Server as NetServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run, type Running } from '../../runtime/process/run.ts';
import { configDir, startUpstream, type Upstream } from './support.ts';
import { issue, makeCa, type Issued } from '../runtime/tls/pki.ts';

const CHUNK = Buffer.alloc(64 * 1024, 'x');
const BIG_CHUNKS = 1024; // 64 MiB: far more than every socket buffer on the way
const BIG_BYTES = CHUNK.length * BIG_CHUNKS;

/** Starts a GET to svc; resolves with the response as soon as its head arrives. */
function open(port: number, host: string, path: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers: { host } }, resolve);
    req.on('error', reject);
    req.end();
  });
}

/** Reads a response to its end: the bytes' hash and count, and whether it ended complete. */
function drain(res: IncomingMessage): Promise<{ sha256: string; bytes: number; complete: boolean }> {
  return new Promise((resolve) => {
    const hash = createHash('sha256');
    let bytes = 0;
    res.on('data', (c: Buffer) => {
      hash.update(c);
      bytes += c.length;
    });
    const done = () => resolve({ sha256: hash.digest('hex'), bytes, complete: res.complete });
    res.once('end', done);
    res.once('error', () => undefined);
    res.once('close', () => {
      if (!res.readableEnded) done();
    });
  });
}

/** How far the upstream got with `/big`: whether svc pushed back. */
let bigWritten = 0;

/**
 * The upstream of both suites: `/big` (64 MiB, written as fast as its socket drains), `/cut` (resets
 * mid-body), `/stall` (part of a body, then nothing), `/trickle` (a chunk every 100 ms), `/hints`
 * (103 before the answer).
 */
function bodies(req: IncomingMessage, res: ServerResponse): void {
  if (req.url === '/big') {
    // Writes as fast as its socket drains: how far it got says whether svc pushed back.
    bigWritten = 0;
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(BIG_BYTES) });
    let i = 0;
    const more = () => {
      while (i < BIG_CHUNKS) {
        i++;
        bigWritten += CHUNK.length;
        if (!res.write(CHUNK)) return void res.once('drain', more);
      }
      res.end();
    };
    more();
    return;
  }
  if (req.url === '/cut') {
    // Promises 1 MiB, sends 128 KiB, then resets the connection.
    res.writeHead(200, { 'content-length': String(1024 * 1024) });
    res.write(CHUNK);
    res.write(CHUNK, () => setTimeout(() => req.socket.destroy(), 50));
    return;
  }
  if (req.url === '/stall') {
    // Sends part of the body, then nothing: the route or the idle timeout must end it.
    res.writeHead(200, { 'content-length': String(1024 * 1024) });
    res.write(CHUNK);
    return;
  }
  if (req.url === '/trickle') {
    // A chunk every 100 ms for 1.2 s: longer than the idle route's idle timeout in all, never
    // idle that long between two chunks.
    res.writeHead(200, { 'content-length': String(12 * 1024) });
    let sent = 0;
    const tick = setInterval(() => {
      res.write(Buffer.alloc(1024, 't'));
      if (++sent === 12) {
        clearInterval(tick);
        res.end();
      }
    }, 100);
    res.once('close', () => clearInterval(tick));
    return;
  }
  if (req.url === '/hints') {
    res.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' }, () => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('after the hints');
    });
    return;
  }
  res.writeHead(404);
  res.end();
}

describe('svc run: streamed response bodies', () => {
  let up: Upstream;
  let svc: Running;
  let port: number;
  const cfg = configDir();

  beforeAll(async () => {
    up = await startUpstream(bodies);
    cfg.write({ address: '127.0.0.1:8443' }, [
      { name: 'stream', from: 'https://stream.example.com', to: up.url, allow_public_unauthenticated_access: true, timeout: '1s', idle_timeout: '0s' },
      { name: 'bulk', from: 'https://bulk.example.com', to: up.url, allow_public_unauthenticated_access: true, timeout: '20s' },
      // A route timeout far past every test's own: only the idle timeout ends an exchange in time.
      { name: 'idle', from: 'https://idle.example.com', to: up.url, allow_public_unauthenticated_access: true, timeout: '30s', idle_timeout: '400ms' },
    ]);
    svc = await run({ configPath: cfg.path, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 }, watch: false });
    port = svc.listening.address.port;
  });

  afterAll(async () => {
    await svc?.close();
    await up?.close();
    cfg.remove();
  });

  it.each([
    ['a client that does not read holds the upstream back; once it reads, every byte arrives', 'bulk.example.com', 700],
    // Longer than the idle route's idle timeout: the upstream is paused, not idle, and is not cut.
    ['a client that holds the upstream back longer than the idle timeout is not cut: the upstream is paused, not idle', 'idle.example.com', 1000],
  ])('%s', async (_, host, pausedMs) => {
    const res = await open(port, host, '/big');
    expect(res.statusCode).toBe(200);
    res.pause();
    await new Promise((r) => setTimeout(r, pausedMs));
    // Without back-pressure svc would have taken the whole 64 MiB from the upstream by now.
    expect(bigWritten).toBeLessThan(BIG_BYTES / 2);
    const got = await drain(res.resume());
    const expected = createHash('sha256');
    for (let i = 0; i < BIG_CHUNKS; i++) expected.update(CHUNK);
    expect(got).toEqual({ sha256: expected.digest('hex'), bytes: BIG_BYTES, complete: true });
    expect(bigWritten).toBe(BIG_BYTES);
  });

  it('an upstream that resets mid-body gives the client a cut response, not a short complete one', async () => {
    const res = await open(port, 'bulk.example.com', '/cut');
    expect(res.statusCode).toBe(200);
    const got = await drain(res);
    expect(got.complete).toBe(false);
    expect(got.bytes).toBeLessThan(1024 * 1024);
  });

  it.each([
    ['the route timeout', 'stream.example.com'],
    ['the idle timeout, long before the route timeout,', 'idle.example.com'],
  ])('%s cuts a body the upstream stops sending (without it the test would hang)', async (_, host) => {
    const res = await open(port, host, '/stall');
    expect(res.statusCode).toBe(200);
    const got = await drain(res);
    expect(got.complete).toBe(false);
    expect(got.bytes).toBe(CHUNK.length);
  });

  it('a body that keeps coming outlasts the idle timeout: each chunk starts the idle time again', async () => {
    const res = await open(port, 'idle.example.com', '/trickle');
    expect(res.statusCode).toBe(200);
    const got = await drain(res);
    expect(got).toMatchObject({ bytes: 12 * 1024, complete: true });
  });

  it('an informational 103 from the upstream is not taken for the answer', async () => {
    const res = await open(port, 'bulk.example.com', '/hints');
    expect(res.statusCode).toBe(200);
    let body = '';
    for await (const c of res) body += String(c);
    expect(body).toBe('after the hints');
  });

  it('still serves the next request on the same pool after the cuts', async () => {
    const res = await open(port, 'bulk.example.com', '/hints');
    expect(res.statusCode).toBe(200);
    res.resume();
  });
});

/**
 * The same over HTTP/2: a stream svc cuts mid-body is reset with INTERNAL_ERROR (ended cleanly, or
 * reset with NO_ERROR, it would read as complete), and a client's flow control is not idleness. A
 * CONNECT tunnel whose upstream connection is reset is reset with CONNECT_ERROR; one whose upstream
 * closes cleanly ends cleanly.
 */
describe('svc run: HTTP/2 streams cut mid-body, and the idle timeout', () => {
  let ca: Issued;
  let up: Upstream;
  let svc: Running;
  let session: ClientHttp2Session;
  let tcp: NetServer;
  const cfg = configDir();

  beforeAll(async () => {
    ca = await makeCa('svc streaming test CA (TEST ONLY)');
    const server = await issue(ca, { cn: 'idle.example.com', dns: ['idle.example.com', 'tcp.example.com'], usage: 'server' });
    // A TCP upstream that says a word, then closes: with a reset after `hi`, cleanly after `bye`.
    let connections = 0;
    tcp = createNetServer((socket) => {
      socket.on('error', () => undefined);
      if (connections++ % 2 === 0) socket.write('hi', () => setTimeout(() => socket.resetAndDestroy(), 50));
      else socket.end('bye');
    });
    await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve));
    const tcpPort = (tcp.address() as { port: number }).port;
    up = await startUpstream(bodies);
    cfg.writeTls(server, { codec_type: 'http2' }, [
      { name: 'idle', from: 'https://idle.example.com', to: up.url, allow_public_unauthenticated_access: true, timeout: '30s', idle_timeout: '400ms' },
      { name: 'tcp', from: 'tcp+https://tcp.example.com:7000', to: `tcp://127.0.0.1:${tcpPort}`, allow_public_unauthenticated_access: true },
    ]);
    svc = await run({ configPath: cfg.path, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 }, watch: false });
    session = http2Connect(`https://127.0.0.1:${svc.listening.address.port}`, { ca: ca.certPem, servername: 'idle.example.com' });
    session.on('error', () => undefined);
  });

  afterAll(async () => {
    session?.destroy();
    await svc?.close();
    await up?.close();
    await new Promise((r) => tcp?.close(r));
    cfg.remove();
  });

  /** A CONNECT tunnel through svc to the TCP upstream: its status, what came through, how it closed. */
  function tunnel(): Promise<{ status: number; received: string; ended: boolean; rstCode: number | undefined }> {
    return new Promise((resolve) => {
      const stream = session.request({ ':method': 'CONNECT', ':authority': 'tcp.example.com:7000' });
      let status = 0;
      let received = '';
      let ended = false;
      stream.on('error', () => undefined);
      stream.on('response', (h) => (status = Number(h[':status'])));
      stream.on('data', (c: Buffer) => (received += c.toString()));
      stream.once('end', () => (ended = true));
      stream.once('close', () => resolve({ status, received, ended, rstCode: stream.rstCode }));
    });
  }

  it('S73: resets a CONNECT tunnel whose upstream connection is reset with CONNECT_ERROR, never as a clean close', async () => {
    // Node's client emits `end` on a reset stream too: the reset's code is what tells.
    expect(await tunnel()).toMatchObject({ status: 200, received: 'hi', rstCode: http2Constants.NGHTTP2_CONNECT_ERROR });
  });

  it('ends a CONNECT tunnel whose upstream closes cleanly with the end of its stream', async () => {
    expect(await tunnel()).toMatchObject({ status: 200, received: 'bye', ended: true, rstCode: http2Constants.NGHTTP2_NO_ERROR });
  });

  /** Opens a GET stream; resolves with the stream and its status once the head arrives. */
  function open(path: string): Promise<{ stream: ClientHttp2Stream; status: number }> {
    return new Promise((resolve, reject) => {
      const stream = session.request({ ':path': path, ':authority': 'idle.example.com' });
      stream.on('error', () => undefined);
      stream.once('response', (h) => resolve({ stream, status: Number(h[':status']) }));
      stream.once('close', () => reject(new Error('closed before its head')));
    });
  }

  /** Reads a stream to its close: the bytes, and whether it ended with END_STREAM (not reset). */
  function drainStream(stream: ClientHttp2Stream): Promise<{ bytes: number; complete: boolean }> {
    return new Promise((resolve) => {
      let bytes = 0;
      let ended = false;
      stream.on('data', (c: Buffer) => (bytes += c.length));
      stream.once('end', () => (ended = true));
      stream.once('close', () => resolve({ bytes, complete: ended && stream.rstCode === 0 }));
    });
  }

  it('S73: resets a stream whose upstream stops sending, at the idle timeout, long before the route timeout', async () => {
    const { stream, status } = await open('/stall');
    expect(status).toBe(200);
    const got = await drainStream(stream);
    expect(got).toEqual({ bytes: CHUNK.length, complete: false });
  });

  it('S73: resets a stream whose upstream resets mid-body, so the client never takes it for complete', async () => {
    const { stream, status } = await open('/cut');
    expect(status).toBe(200);
    const got = await drainStream(stream);
    expect(got.complete).toBe(false);
    expect(got.bytes).toBeLessThan(1024 * 1024);
  });

  it('does not cut a stream whose client holds the upstream back longer than the idle timeout', async () => {
    const { stream, status } = await open('/big');
    expect(status).toBe(200);
    stream.pause();
    await new Promise((r) => setTimeout(r, 1000));
    expect(bigWritten).toBeLessThan(BIG_BYTES / 2);
    const got = drainStream(stream);
    stream.resume();
    expect(await got).toEqual({ bytes: BIG_BYTES, complete: true });
  });
});
