/**
 * Conflicting authorities (docs/security.md S52). Rule (docs/decisions.md §1, canonical-request.ts
 * one-authority): a request has one authority, read from one place — an absolute-form target's,
 * else HTTP/2's `:authority`, else `Host` — and a `Host` beside it naming another host (after
 * normalization of case and default port) is refused with 400, never read instead and never
 * silently dropped; whitespace around a Host value is refused, not trimmed. The rule lives in the
 * canonical request, so it holds at every way in: a plain request and a websocket upgrade, over
 * HTTP/1.1 and HTTP/2. Real svc over TLS (`codec_type: auto`), a real upstream that records the
 * Host it was sent; raw TLS sockets and the node:http2 client, which send the conflicting fields
 * as written.
 */
import { connect as http2Connect, type ClientHttp2Session } from 'node:http2';
import { connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run, type Running } from '../../runtime/process/run.ts';
import { issue, makeCa, type Issued } from '../runtime/tls/pki.ts';
import { configDir, startUpstream, type Upstream } from '../e2e/support.ts';

describe('issue 13 §6: one authority per request', () => {
  const cfg = configDir();
  const received: string[] = [];
  let up: Upstream;
  let svc: Running;
  let ca: Issued;
  const port = () => svc.listening.address.port;

  beforeAll(async () => {
    ca = await makeCa('svc authority test CA (TEST ONLY)');
    const server = await issue(ca, { cn: 'a.example.com', dns: ['a.example.com', 'b.example.com'], usage: 'server' });
    up = await startUpstream((req, res) => {
      received.push(String(req.headers.host));
      res.end('ok');
    });
    cfg.writeTls(server, { codec_type: 'auto' }, [
      // Both hosts go to the same upstream: the route (and so the Host sent) tells which won.
      { from: 'https://a.example.com', to: up.url, preserve_host_header: true, allow_websockets: true, allow_public_unauthenticated_access: true },
      { from: 'https://b.example.com', to: up.url, preserve_host_header: true, allow_websockets: true, allow_public_unauthenticated_access: true },
    ]);
    svc = await run({ configPath: cfg.path, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 }, watch: false });
  });

  afterAll(async () => {
    await svc?.close();
    await up?.close();
    cfg.remove();
  });

  /** Writes raw bytes over TLS (HTTP/1.1 by ALPN) and returns svc's answer until it closes. */
  const raw = (bytes: string) =>
    new Promise<string>((resolve) => {
      const s = tlsConnect({ host: '127.0.0.1', port: port(), servername: 'a.example.com', ca: ca.certPem, ALPNProtocols: ['http/1.1'] }, () => s.write(bytes));
      let out = '';
      s.on('data', (c: Buffer) => (out += c.toString('latin1')));
      s.on('error', () => resolve(out));
      s.on('close', () => resolve(out));
      setTimeout(() => {
        s.destroy();
        resolve(`${out}<still open>`);
      }, 3000);
    });

  /** One HTTP/2 request with these headers; its status. */
  const h2 = (session: ClientHttp2Session, headers: Record<string, string>) =>
    new Promise<number>((resolve, reject) => {
      const stream = session.request({ ':method': 'GET', ':path': '/x', ...headers });
      let status = 0;
      stream.on('response', (h) => (status = Number(h[':status'])));
      stream.on('data', () => undefined);
      stream.on('close', () => resolve(status));
      stream.on('error', reject);
      stream.end();
    });

  it('HTTP/2: a host header naming another host than :authority is refused (400), and nothing is forwarded', async () => {
    const session = http2Connect(`https://127.0.0.1:${port()}`, { ca: ca.certPem, servername: 'a.example.com' });
    try {
      const n = received.length;
      expect(await h2(session, { ':authority': 'a.example.com', host: 'b.example.com' })).toBe(400);
      expect(await h2(session, { ':authority': 'a.example.com', host: 'a.example.com:8443' })).toBe(400);
      expect(received.length).toBe(n);
      // The same host, normalized (case, default port), is one authority; :authority alone too.
      expect(await h2(session, { ':authority': 'a.example.com', host: 'A.example.com:443' })).toBe(200);
      expect(await h2(session, { ':authority': 'b.example.com' })).toBe(200);
      expect(received.slice(n)).toEqual(['a.example.com', 'b.example.com']);
    } finally {
      session.close();
    }
  });

  it('HTTP/1.1: an absolute-form target naming another host than Host is refused (400), for requests and upgrades', async () => {
    const n = received.length;
    expect(await raw('GET https://b.example.com/x HTTP/1.1\r\nHost: a.example.com\r\nConnection: close\r\n\r\n')).toMatch(/^HTTP\/1\.1 400 /);
    expect(await raw('GET https://a.example.com:8443/x HTTP/1.1\r\nHost: a.example.com\r\nConnection: close\r\n\r\n')).toMatch(/^HTTP\/1\.1 400 /);
    const upgrade = 'Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n';
    expect(await raw(`GET https://b.example.com/ws HTTP/1.1\r\nHost: a.example.com\r\n${upgrade}\r\n`)).toMatch(/^HTTP\/1\.1 400 /);
    expect(received.length).toBe(n);
    // An absolute-form target naming the Host's own host is routed by it.
    expect(await raw('GET https://B.example.com:443/x HTTP/1.1\r\nHost: b.example.com\r\nConnection: close\r\n\r\n')).toMatch(/^HTTP\/1\.1 200 /);
    expect(received.slice(n)).toEqual(['b.example.com']);
  });
});
