/**
 * docs/security.md rows the running server owns, each against a real `svc run` and a real upstream that
 * reports what it received: S13/S14 (forwarded headers from an untrusted client), S15 (unparsable
 * client address with trusted hops), S16/S18 (client identity and internal headers), S17 (duplicate
 * Host), S19 (no decision depends on User-Agent), S20 (h2c), S21 (request smuggling shapes: 400 and
 * close), S27 (no admin, metrics or debug surface on the public listener), and clients too slow
 * (timeout_read) or too large (431).
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run, type Running } from '../../runtime/process/run.ts';
import { configDir, startUpstream, type Upstream } from '../e2e/support.ts';

/** Writes raw bytes to svc and returns everything it answers until it closes (or 3 s pass). */
function raw(port: number, text: string): Promise<string> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1', () => s.write(text));
    let out = '';
    s.on('data', (c) => (out += c.toString('latin1')));
    s.on('error', () => resolve(out));
    s.on('close', () => resolve(out));
    setTimeout(() => {
      s.destroy();
      resolve(`${out}<still open>`);
    }, 3000);
  });
}

describe('server-side docs/security.md rows', () => {
  let up: Upstream;
  let svc: Running;
  let trusted: Running;
  const received: Record<string, string | string[] | undefined>[] = [];
  /** Each request the upstream read whole: its method, path and body. */
  const bodies: { method: string | undefined; path: string | undefined; body: string }[] = [];
  const cfg = configDir();
  const cfgTrusted = configDir();

  beforeAll(async () => {
    up = await startUpstream((req, res) => {
      received.push({ ...req.headers, ':path': req.url });
      let body = '';
      req.setEncoding('latin1');
      req.on('data', (c: string) => (body += c));
      req.on('end', () => {
        bodies.push({ method: req.method, path: req.url, body });
        res.setHeader('x-path', req.url ?? '');
        res.end('ok');
      });
    });
    const routes = [
      { from: 'https://app.example.com', prefix: '/public', to: up.url, allow_public_unauthenticated_access: true },
      { from: 'https://app.example.com', to: up.url, policy: 'allow if groups has "admins"' },
    ];
    cfg.write({ address: '127.0.0.1:8443', jwt_claims_headers: { 'Remote-User': 'email' } }, routes);
    cfgTrusted.write({ address: '127.0.0.1:8443', xff_num_trusted_hops: 1 }, routes);
    svc = await run({ configPath: cfg.path, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 }, watch: false });
    trusted = await run({ configPath: cfgTrusted.path, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 }, watch: false });
  });

  afterAll(async () => {
    await svc?.close();
    await trusted?.close();
    await up?.close();
    cfg.remove();
    cfgTrusted.remove();
  });

  const port = () => svc.listening.address.port;
  const last = () => received[received.length - 1]!;

  it('S13: a forwarded URI from a direct client never changes routing or policy', async () => {
    const out = await raw(port(), 'GET /admin HTTP/1.1\r\nHost: app.example.com\r\nX-Forwarded-Uri: /public\r\nX-Original-URL: /public\r\nAccept: application/json\r\nConnection: close\r\n\r\n');
    expect(out).toMatch(/^HTTP\/1\.1 401 /);
  });

  it('S14: X-Forwarded-Proto/Host from an untrusted client reach neither the upstream nor the sign-in URL', async () => {
    const n = received.length;
    const out = await raw(port(), 'GET /public HTTP/1.1\r\nHost: app.example.com\r\nX-Forwarded-Proto: https\r\nX-Forwarded-Host: evil.example\r\nX-Forwarded-Prefix: /x\r\nConnection: close\r\n\r\n');
    expect(out).toMatch(/^HTTP\/1\.1 200 /);
    expect(received.length).toBe(n + 1);
    expect(last()['x-forwarded-proto']).toBe('http');
    expect(last()['x-forwarded-host']).toBeUndefined();
    expect(last()['x-forwarded-prefix']).toBeUndefined();
    const signIn = await raw(port(), 'GET /admin HTTP/1.1\r\nHost: app.example.com\r\nX-Forwarded-Host: evil.example\r\nAccept: text/html\r\nConnection: close\r\n\r\n');
    expect(signIn).toMatch(/location: https:\/\/auth\.example\.com\/\.svc\/sign_in\?svc_redirect_uri=https%3A%2F%2Fapp\.example\.com%2Fadmin/i);
    expect(signIn).not.toContain('evil.example');
  });

  it('S15: an unparsable client address with trusted hops is refused, never "no restriction"', async () => {
    const out = await raw(trusted.listening.address.port, 'GET /public HTTP/1.1\r\nHost: app.example.com\r\nX-Forwarded-For: a\r\nConnection: close\r\n\r\n');
    expect(out).toMatch(/^HTTP\/1\.1 400 /);
  });

  it('S16/S18: configured identity headers and the internal namespace are deleted whatever the client sends', async () => {
    await raw(port(), 'GET /public HTTP/1.1\r\nHost: app.example.com\r\nRemote-User: admin\r\nRemote_User: admin\r\nX-Svc-Jwt-Assertion: forged\r\nX-Envoy-Original-Path: /admin\r\nConnection: close\r\n\r\n');
    for (const h of ['remote-user', 'remote_user', 'x-svc-jwt-assertion', 'x-envoy-original-path']) expect(last()[h]).toBeUndefined();
  });

  it('S17: a duplicated Host is refused', async () => {
    const out = await raw(port(), 'GET /public HTTP/1.1\r\nHost: app.example.com\r\nHost: evil.example\r\nConnection: close\r\n\r\n');
    expect(out).toMatch(/^HTTP\/1\.1 400 /);
  });

  it('S19: no decision depends on User-Agent', async () => {
    const answers = await Promise.all(
      ['kube-probe/1.29', 'ELB-HealthChecker/2.0', '', 'curl/8'].map((ua) => raw(port(), `GET /admin HTTP/1.1\r\nHost: app.example.com\r\nUser-Agent: ${ua}\r\nAccept: application/json\r\nConnection: close\r\n\r\n`)),
    );
    for (const a of answers) expect(a).toMatch(/^HTTP\/1\.1 401 /);
  });

  it('S20: an h2c upgrade is refused, never forwarded', async () => {
    const n = received.length;
    const out = await raw(port(), 'GET /public HTTP/1.1\r\nHost: app.example.com\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n');
    expect(out).toMatch(/^HTTP\/1\.1 400 /);
    expect(received.length).toBe(n);
  });

  describe('S21: request smuggling shapes get 400 and the connection closed', () => {
    const shapes: Record<string, string> = {
      'Content-Length with Transfer-Encoding': 'POST /public HTTP/1.1\r\nHost: app.example.com\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
      'obs-fold Transfer-Encoding': 'POST /public HTTP/1.1\r\nHost: app.example.com\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n',
      'bare CR in a header value': 'GET /public HTTP/1.1\r\nHost: app.example.com\r\nX-A: a\rb\r\n\r\n',
      'chunked, identity': 'POST /public HTTP/1.1\r\nHost: app.example.com\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n',
      'two Content-Length values': 'POST /public HTTP/1.1\r\nHost: app.example.com\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab',
    };
    for (const [name, text] of Object.entries(shapes)) {
      it(name, async () => {
        const n = received.length;
        const out = await raw(port(), text);
        expect(out).toMatch(/^HTTP\/1\.1 400 /);
        expect(out).not.toContain('<still open>');
        expect(received.length).toBe(n);
      });
    }
  });

  it('S21: requests on one connection are framed by their own heads alone: a POST without a body, a GET, a POST with one', async () => {
    // A request without Content-Length or Transfer-Encoding has no body (RFC 9112 §6.3): svc's
    // listener takes Node's fast path for it, and the bytes after its head are the next request.
    const n = bodies.length;
    const out = await raw(
      port(),
      'POST /public/a HTTP/1.1\r\nHost: app.example.com\r\n\r\n' +
        'GET /public/b HTTP/1.1\r\nHost: app.example.com\r\n\r\n' +
        'POST /public/c HTTP/1.1\r\nHost: app.example.com\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc',
    );
    expect(out.match(/HTTP\/1\.1 \d+ /g)).toEqual(['HTTP/1.1 200 ', 'HTTP/1.1 200 ', 'HTTP/1.1 200 ']);
    expect(out.match(/x-path: [^\r]*/g)).toEqual(['x-path: /public/a', 'x-path: /public/b', 'x-path: /public/c']);
    expect(out).not.toContain('<still open>');
    const read = bodies.slice(n).sort((x, y) => String(x.path).localeCompare(String(y.path)));
    expect(read).toEqual([
      { method: 'POST', path: '/public/a', body: '' },
      { method: 'GET', path: '/public/b', body: '' },
      { method: 'POST', path: '/public/c', body: 'abc' },
    ]);
  });

  it('S27: no metrics, admin or debug surface on the public listener', async () => {
    for (const [host, path] of [
      ['auth.example.com', '/metrics'],
      ['auth.example.com', '/debug/pprof/'],
      ['127.0.0.1', '/metrics'],
      ['app.example.com', '/.svc/metrics'],
    ] as const) {
      const out = await raw(port(), `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
      expect(out, `${host}${path}`).toMatch(/^HTTP\/1\.1 404 /);
    }
  });
});

describe('slow and oversized clients', () => {
  let svc: Running;
  const cfg = configDir();

  beforeAll(async () => {
    cfg.write({ address: '127.0.0.1:8443', timeout_read: '1s' }, [{ from: 'https://app.example.com', to: 'http://127.0.0.1:1', allow_public_unauthenticated_access: true }]);
    svc = await run({ configPath: cfg.path, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 }, watch: false });
  });

  afterAll(async () => {
    await svc?.close();
    cfg.remove();
  });

  it('cuts a client that sends its request head too slowly (timeout_read)', async () => {
    const closedAfter = await new Promise<number>((resolve) => {
      const started = Date.now();
      const s = connect(svc.listening.address.port, '127.0.0.1', () => s.write('GET / HTTP/1.1\r\nHost: app.example.com\r\n'));
      const drip = setInterval(() => s.writable && s.write('X-Drip: 1\r\n'), 200);
      s.on('data', () => undefined);
      s.on('error', () => undefined);
      s.on('close', () => {
        clearInterval(drip);
        resolve(Date.now() - started);
      });
      setTimeout(() => s.destroy(), 15_000);
    });
    expect(closedAfter).toBeLessThan(15_000);
  });

  it('refuses oversized headers and URLs with 431', async () => {
    const big = 'a'.repeat(20 * 1024);
    expect(await raw(svc.listening.address.port, `GET / HTTP/1.1\r\nHost: app.example.com\r\nX-Big: ${big}\r\n\r\n`)).toMatch(/^HTTP\/1\.1 431 /);
    expect(await raw(svc.listening.address.port, `GET /${big} HTTP/1.1\r\nHost: app.example.com\r\n\r\n`)).toMatch(/^HTTP\/1\.1 431 /);
  });
});
