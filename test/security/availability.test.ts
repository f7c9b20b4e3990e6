/**
 * Availability (docs/security.md S57): requests a client can shape so that svc fails them all, or holds them
 * open forever. Rules:
 * - `Expect: 100-continue` is answered by svc at the door, after the gate admitted the request (a
 *   refused request gets its final answer and no `100 Continue`), and the body is forwarded without
 *   the expectation (undici refuses the header): over HTTP/1.1 and HTTP/2.
 * - Every global timeout applies on every codec, the TLS handshake included (below).
 * - More than 1,000 header fields is refused with 431 at the door (rule book §9), never truncated.
 * - A client header whose name contains `_` is dropped before forwarding unless the route sets
 *   `allow_underscores_in_headers` (rule book §6), at every way in (the decision's headers).
 * Real svc over TLS (`codec_type: auto`) and a real upstream; raw TLS sockets and the node:http2
 * client, which send the shapes as written.
 */
import { connect as http2Connect } from 'node:http2';
import { connect as netConnect } from 'node:net';
import { join } from 'node:path';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run, type Running } from '../../runtime/process/run.ts';
import { issue, makeCa, type Issued } from '../runtime/tls/pki.ts';
import { configDir, startUpstream, type Upstream } from '../e2e/support.ts';

interface Seen {
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

let ca: Issued;
let server: Issued;

/** A config for a TLS svc with this codec and these settings, a public and a private route to `up`. */
function writeConfig(cfg: ReturnType<typeof configDir>, up: Upstream, extra: Record<string, unknown>, routeExtra: Record<string, unknown> = {}): void {
  cfg.writeTls(server, { codec_type: 'auto', ...extra }, [
    { from: 'https://app.example.com', to: up.url, allow_public_unauthenticated_access: true, ...routeExtra },
    { from: 'https://private.example.com', to: up.url, policy: 'allow if groups has "admins"' },
  ]);
}

/** A TLS connection to svc for `app.example.com`, HTTP/1.1 by ALPN. */
function tls(port: number, host = 'app.example.com'): Promise<TLSSocket> {
  return new Promise((resolve) => {
    const s: TLSSocket = tlsConnect({ host: '127.0.0.1', port, servername: host, ca: ca.certPem, ALPNProtocols: ['http/1.1'] }, () => resolve(s));
    s.on('error', () => undefined);
  });
}

/** Resolves with everything read once `pattern` has been read (or, after 3 s, with what was read). */
function readUntil(s: TLSSocket, pattern: RegExp): Promise<string> {
  return new Promise((resolve) => {
    let out = '';
    const timer = setTimeout(() => done(`${out}<timeout>`), 3000);
    const done = (text: string) => {
      clearTimeout(timer);
      s.off('data', onData);
      s.off('close', onClose);
      resolve(text);
    };
    const onData = (c: Buffer) => {
      out += c.toString('latin1');
      if (pattern.test(out)) done(out);
    };
    const onClose = () => done(out);
    s.on('data', onData);
    s.on('close', onClose);
  });
}

beforeAll(async () => {
  ca = await makeCa('svc availability test CA (TEST ONLY)');
  server = await issue(ca, { cn: 'app.example.com', dns: ['app.example.com', 'private.example.com'], usage: 'server' });
});

describe('Expect: 100-continue', () => {
  const cfg = configDir();
  const seen: Seen[] = [];
  let up: Upstream;
  let svc: Running;
  const port = () => svc.listening.address.port;

  beforeAll(async () => {
    up = await startUpstream((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ headers: req.headers, body });
        res.end('ok');
      });
    });
    writeConfig(cfg, up, {});
    svc = await run({ configPath: cfg.path, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 }, watch: false });
  });

  afterAll(async () => {
    await svc?.close();
    await up?.close();
    cfg.remove();
  });

  it('HTTP/1.1: svc answers 100 Continue after the gate, then forwards the body without the expectation', async () => {
    const s = await tls(port());
    try {
      s.write('POST /upload HTTP/1.1\r\nHost: app.example.com\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n');
      expect(await readUntil(s, /\r\n\r\n/)).toMatch(/^HTTP\/1\.1 100 Continue\r\n/);
      const n = seen.length;
      s.write('hello');
      expect(await readUntil(s, /\r\n\r\nok/)).toMatch(/^HTTP\/1\.1 200 /);
      expect(seen.length).toBe(n + 1);
      expect(seen[n]!.body).toBe('hello');
      expect(seen[n]!.headers['expect']).toBeUndefined();
    } finally {
      s.destroy();
    }
  });

  it('HTTP/1.1: a request the gate refuses gets its final answer, and no 100 Continue solicits its body', async () => {
    const s = await tls(port(), 'private.example.com');
    try {
      const n = seen.length;
      s.write('POST /upload HTTP/1.1\r\nHost: private.example.com\r\nExpect: 100-continue\r\nAccept: application/json\r\nContent-Length: 5\r\n\r\n');
      expect(await readUntil(s, /\r\n\r\n/)).toMatch(/^HTTP\/1\.1 401 /);
      expect(seen.length).toBe(n);
    } finally {
      s.destroy();
    }
  });

  it('HTTP/2: the stream gets 100 Continue, then the body is forwarded without the expectation', async () => {
    const session = http2Connect(`https://127.0.0.1:${port()}`, { ca: ca.certPem, servername: 'app.example.com' });
    try {
      const n = seen.length;
      const status = await new Promise<number>((resolve, reject) => {
        const stream = session.request({ ':method': 'POST', ':path': '/upload', ':authority': 'app.example.com', expect: '100-continue' });
        let answered = 0;
        stream.on('continue', () => stream.end('hello'));
        stream.on('response', (h) => (answered = Number(h[':status'])));
        stream.on('data', () => undefined);
        stream.on('close', () => resolve(answered));
        stream.on('error', reject);
      });
      expect(status).toBe(200);
      expect(seen.length).toBe(n + 1);
      expect(seen[n]!.body).toBe('hello');
      expect(seen[n]!.headers['expect']).toBeUndefined();
    } finally {
      session.close();
    }
  });
});

describe('more than 1,000 header fields', () => {
  const cfg = configDir();
  const seen: Seen[] = [];
  let up: Upstream;
  let svc: Running;
  const port = () => svc.listening.address.port;
  /** `n` header fields besides Host, one line each. */
  const fields = (n: number) => Array.from({ length: n }, (_, i) => `x-f${i}: 1\r\n`).join('');

  beforeAll(async () => {
    up = await startUpstream((req, res) => {
      req.resume();
      seen.push({ headers: req.headers, body: '' });
      res.end('ok');
    });
    // Node 24's own server refuses more than 1,000 fields with 431 (Node 20 truncated): this upstream must
    // see the 998 test fields plus the forwarding headers svc adds.
    up.server.maxHeadersCount = 0;
    writeConfig(cfg, up, {}, { allow_websockets: true });
    svc = await run({ configPath: cfg.path, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 }, watch: false });
  });

  afterAll(async () => {
    await svc?.close();
    await up?.close();
    cfg.remove();
  });

  const send = async (bytes: string) => {
    const s = await tls(port());
    try {
      s.write(bytes);
      return await readUntil(s, /\r\n\r\n/);
    } finally {
      s.destroy();
    }
  };

  it('HTTP/1.1: a request with 1,001 fields is refused with 431, never truncated and forwarded', async () => {
    const n = seen.length;
    expect(await send(`GET / HTTP/1.1\r\nHost: app.example.com\r\n${fields(1000)}\r\n`)).toMatch(/^HTTP\/1\.1 431 /);
    // The same through an upgrade and a CONNECT: one door.
    const upgrade = 'Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n';
    expect(await send(`GET /ws HTTP/1.1\r\nHost: app.example.com\r\n${upgrade}${fields(1000)}\r\n`)).toMatch(/^HTTP\/1\.1 431 /);
    expect(await send(`CONNECT app.example.com:443 HTTP/1.1\r\nHost: app.example.com:443\r\n${fields(1000)}\r\n`)).toMatch(/^HTTP\/1\.1 431 /);
    expect(seen.length).toBe(n);
    // 1,000 fields (Host, 998, Connection) pass whole.
    expect(await send(`GET / HTTP/1.1\r\nHost: app.example.com\r\n${fields(998)}Connection: close\r\n\r\n`)).toMatch(/^HTTP\/1\.1 200 /);
    expect(Object.keys(seen[n]!.headers).filter((h) => /^x-f[0-9]+$/.test(h))).toHaveLength(998);
  });

  it('HTTP/2: a request with 1,001 fields is refused with 431', async () => {
    const session = http2Connect(`https://127.0.0.1:${port()}`, { ca: ca.certPem, servername: 'app.example.com' });
    try {
      const status = (count: number) =>
        new Promise<number>((resolve, reject) => {
          const headers: Record<string, string> = { ':path': '/', ':authority': 'app.example.com' };
          for (let i = 0; i < count; i++) headers[`x-f${i}`] = '1';
          const stream = session.request(headers);
          let answered = 0;
          stream.on('response', (h) => (answered = Number(h[':status'])));
          stream.on('data', () => undefined);
          stream.on('close', () => resolve(answered));
          stream.on('error', reject);
        });
      const n = seen.length;
      expect(await status(1001)).toBe(431);
      expect(seen.length).toBe(n);
      expect(await status(999)).toBe(200);
    } finally {
      session.close();
    }
  });
});

describe('header names with `_`', () => {
  const cfg = configDir();
  const seen: Seen[] = [];
  let up: Upstream;
  let svc: Running;
  const port = () => svc.listening.address.port;

  beforeAll(async () => {
    up = await startUpstream((req, res) => {
      req.resume();
      seen.push({ headers: req.headers, body: '' });
      res.end('ok');
    });
    cfg.writeTls(server, { codec_type: 'auto' }, [
      { from: 'https://app.example.com', to: up.url, allow_public_unauthenticated_access: true },
      { from: 'https://private.example.com', to: up.url, allow_public_unauthenticated_access: true, allow_underscores_in_headers: true },
    ]);
    svc = await run({ configPath: cfg.path, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 }, watch: false });
  });

  afterAll(async () => {
    await svc?.close();
    await up?.close();
    cfg.remove();
  });

  const send = async (host: string) => {
    const s = await tls(port(), host);
    try {
      s.write(`GET / HTTP/1.1\r\nHost: ${host}\r\nX_User: admin\r\nX-Auth_Request-User: admin\r\nX-Plain: kept\r\nConnection: close\r\n\r\n`);
      return await readUntil(s, /\r\n\r\nok/);
    } finally {
      s.destroy();
    }
  };

  it('drops them before forwarding by default (an upstream may read `_` as `-`)', async () => {
    const n = seen.length;
    expect(await send('app.example.com')).toMatch(/^HTTP\/1\.1 200 /);
    const h = seen[n]!.headers;
    expect(Object.keys(h).filter((name) => name.includes('_'))).toEqual([]);
    expect(h['x-plain']).toBe('kept');
  });

  it('forwards them on a route with allow_underscores_in_headers', async () => {
    const n = seen.length;
    expect(await send('private.example.com')).toMatch(/^HTTP\/1\.1 200 /);
    expect(seen[n]!.headers['x_user']).toBe('admin');
    expect(seen[n]!.headers['x-auth_request-user']).toBe('admin');
  });

  it('HTTP/2: drops them by default too', async () => {
    const session = http2Connect(`https://127.0.0.1:${port()}`, { ca: ca.certPem, servername: 'app.example.com' });
    try {
      const n = seen.length;
      const status = await new Promise<number>((resolve, reject) => {
        const stream = session.request({ ':path': '/', ':authority': 'app.example.com', x_user: 'admin' });
        let answered = 0;
        stream.on('response', (h) => (answered = Number(h[':status'])));
        stream.on('data', () => undefined);
        stream.on('close', () => resolve(answered));
        stream.on('error', reject);
      });
      expect(status).toBe(200);
      expect(seen[n]!.headers['x_user']).toBeUndefined();
    } finally {
      session.close();
    }
  });
});

/**
 * Rule: every global timeout applies on every codec (`http1`, `auto` and its HTTP/1.1 fallback,
 * `http2`), the TLS handshake included: `timeout_read` bounds the handshake and each request (head
 * and body, HTTP/1.1 connection or HTTP/2 stream), `timeout_idle` an idle connection or session.
 * Short timeouts; the assertions only say "closed within a generous bound", never how fast.
 * The tests of one codec run side by side: each on connections of its own, each waiting for svc.
 */
describe.concurrent.each(['auto', 'http2', 'http1'] as const)('timeouts with codec_type %s', (codec) => {
  const cfg = configDir();
  let up: Upstream;
  let svc: Running;
  const port = () => svc.listening.address.port;
  const BOUND_MS = 8_000;
  /** Upstream connections that carried an upload and were closed (svc ended the request on them). */
  let uploadsEnded = 0;

  beforeAll(async () => {
    up = await startUpstream((req, res) => {
      // The connection that carried an upload: svc's pool keeps it while the request runs.
      if (req.url === '/upload') req.socket.once('close', () => uploadsEnded++);
      req.resume();
      req.on('end', () => {
        if (req.url !== '/slow') return res.end('ok');
        // A response that streams on past timeout_read, in small pieces (so never idle for long).
        let left = 8;
        const tick = setInterval(() => {
          res.write('.');
          if (--left === 0) {
            clearInterval(tick);
            res.end();
          }
        }, 100);
      });
    });
    writeConfig(cfg, up, { codec_type: codec, timeout_read: '300ms', timeout_idle: '500ms' });
    svc = await run({ configPath: cfg.path, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 }, watch: false });
  });

  afterAll(async () => {
    await svc?.close();
    await up?.close();
    cfg.remove();
  });

  /** Resolves true when `s` closes within the bound, false when it is still open then. */
  const closesWithinBound = (s: { once(e: 'close', f: () => void): unknown; destroy(): void }) =>
    new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        s.destroy();
        resolve(false);
      }, BOUND_MS);
      s.once('close', () => {
        clearTimeout(timer);
        resolve(true);
      });
    });

  it('closes a TCP connection that never sends a TLS ClientHello', async () => {
    const s = netConnect(port(), '127.0.0.1');
    s.on('error', () => undefined);
    expect(await closesWithinBound(s)).toBe(true);
  });

  // HTTP/1.1 on the codecs that speak it, HTTP/2 on those that do (not skips: the shape does not exist).
  if (codec !== 'http2')
    it('cuts an HTTP/1.1 client that sends its request head too slowly', async () => {
    const s = await tls(port());
    s.write('GET / HTTP/1.1\r\nHost: app.example.com\r\n');
    const drip = setInterval(() => s.writable && s.write('X-Drip: 1\r\n'), 100);
    s.on('data', () => undefined);
    const closed = await closesWithinBound(s);
    clearInterval(drip);
    expect(closed).toBe(true);
  });

  if (codec !== 'http2')
    it('closes an idle HTTP/1.1 keep-alive connection', async () => {
    const s = await tls(port());
    s.write('GET / HTTP/1.1\r\nHost: app.example.com\r\n\r\n');
    expect(await readUntil(s, /\r\n\r\nok/)).toMatch(/^HTTP\/1\.1 200 /);
    expect(await closesWithinBound(s)).toBe(true);
  });

  if (codec !== 'http1')
    it('closes an idle HTTP/2 session', async () => {
    const session = http2Connect(`https://127.0.0.1:${port()}`, { ca: ca.certPem, servername: 'app.example.com' });
    session.on('error', () => undefined);
    const status = await new Promise<number>((resolve, reject) => {
      const stream = session.request({ ':path': '/', ':authority': 'app.example.com' });
      let answered = 0;
      stream.on('response', (h) => (answered = Number(h[':status'])));
      stream.on('data', () => undefined);
      stream.on('close', () => resolve(answered));
      stream.on('error', reject);
    });
    expect(status).toBe(200);
    expect(await closesWithinBound(session)).toBe(true);
  });

  if (codec !== 'http1')
    it('lets an HTTP/2 response stream on past timeout_read once the request is whole', async () => {
      const session = http2Connect(`https://127.0.0.1:${port()}`, { ca: ca.certPem, servername: 'app.example.com' });
      session.on('error', () => undefined);
      try {
        const answer = await new Promise<string>((resolve, reject) => {
          const stream = session.request({ ':path': '/slow', ':authority': 'app.example.com' });
          let body = '';
          stream.on('response', (h) => (body += `${h[':status']} `));
          stream.on('data', (c: Buffer) => (body += c.toString()));
          stream.on('close', () => resolve(body));
          stream.on('error', reject);
        });
        expect(answer).toBe('200 ........');
      } finally {
        session.destroy();
      }
    });

  if (codec !== 'http1')
    it('S72: ends an HTTP/2 stream whose request body does not arrive within timeout_read, and the upstream request it opened', async () => {
    const session = http2Connect(`https://127.0.0.1:${port()}`, { ca: ca.certPem, servername: 'app.example.com' });
    session.on('error', () => undefined);
    try {
      const stream = session.request({ ':method': 'POST', ':path': '/upload', ':authority': 'app.example.com' });
      stream.on('error', () => undefined);
      stream.on('data', () => undefined);
      // Keep the session busy (so only the stream's own limit can end it), but never end the body.
      const before = uploadsEnded;
      const drip = setInterval(() => !stream.destroyed && stream.write('a'), 100);
      const closed = await closesWithinBound(stream);
      clearInterval(drip);
      expect(closed).toBe(true);
      // svc answered 408 itself: the upstream request it had opened is ended too (its connection with
      // it), never left holding that connection while it waits for a body that will not come.
      const started = Date.now();
      while (uploadsEnded === before && Date.now() - started < 3_000) await new Promise((r) => setTimeout(r, 20));
      expect(uploadsEnded).toBe(before + 1);
    } finally {
      session.destroy();
    }
  });
});
