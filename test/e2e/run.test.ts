/**
 * `svc run` end to end on loopback with real upstream servers: forwarding with streamed bodies and
 * header edits, svc's own answers (302/401/403/404/400/505), upstream failures (502/504 with the
 * request id, never a hang), client disconnects aborting the upstream request.
 */
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run, type Running } from '../../runtime/process/run.ts';
import { configDir, echo, startUpstream, type Upstream } from './support.ts';

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

/** One HTTP/1.1 request to svc with a raw target and Host (fetch would normalize both). */
function send(port: number, target: string, headers: Record<string, string>, method = 'GET', body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path: target, method, headers }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (data += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: data }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('svc run: forwarding and answers', () => {
  let up: Upstream;
  let slow: Upstream;
  let svc: Running;
  let port: number;
  const closedEarly: string[] = [];
  const cfg = configDir();

  beforeAll(async () => {
    up = await startUpstream((req, res) => {
      if (req.url?.includes('/early')) {
        res.end('early'); // answers without reading the request body
        return;
      }
      if (req.url?.includes('/upload')) {
        // Streams the body back as it arrives, counting bytes.
        let n = 0;
        req.on('data', (c: Buffer) => (n += c.length));
        req.on('end', () => res.end(JSON.stringify({ bytes: n })));
        return;
      }
      if (req.url?.startsWith('/hang')) {
        req.on('close', () => closedEarly.push(req.url ?? ''));
        return; // never answers
      }
      if (req.url?.includes('/redirecting')) {
        res.writeHead(302, { location: `${up.url}/elsewhere`, 'set-cookie': ['a=1', 'b=2'] });
        res.end();
        return;
      }
      echo(req, res);
    });
    slow = await startUpstream(() => undefined);
    cfg.write({ address: '127.0.0.1:8443' }, [
      {
        name: 'public',
        from: 'https://public.example.com',
        to: `${up.url}/base/`,
        allow_public_unauthenticated_access: true,
        set_request_headers: { 'X-From-Svc': 'yes' },
        set_response_headers: { 'X-Frame-Options': 'DENY' },
        rewrite_response_headers: [{ header: 'Location', prefix: `${up.url}/`, value: 'https://public.example.com/' }],
      },
      { name: 'hang', from: 'https://hang.example.com', to: up.url, allow_public_unauthenticated_access: true, timeout: '10s' },
      { name: 'slow', from: 'https://slow.example.com', to: slow.url, allow_public_unauthenticated_access: true, timeout: '1s' },
      { name: 'down', from: 'https://down.example.com', to: 'http://127.0.0.1:1', allow_public_unauthenticated_access: true },
      { name: 'app', from: 'https://app.example.com', to: up.url, policy: 'allow if domain is "example.com"' },
      { name: 'moved', from: 'https://old.example.com', redirect: { host_redirect: 'new.example.com', response_code: 308 }, allow_public_unauthenticated_access: true },
    ]);
    svc = await run({ configPath: cfg.path, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 }, watch: false, exposeChecksum: true });
    port = svc.listening.address.port;
  });

  afterAll(async () => {
    await svc?.close();
    await up?.close();
    await slow?.close();
    cfg.remove();
  });

  it('forwards the canonical path joined to the `to` path, with the trust boundary applied', async () => {
    const a = await send(port, '/a/%2e%2e/b?q=1', { host: 'public.example.com', 'x-forwarded-for': '6.6.6.6', 'x-svc-jwt-assertion': 'forged' });
    expect(a.status).toBe(200);
    const seen = JSON.parse(a.body) as { url: string; headers: Record<string, string> };
    expect(seen.url).toBe('/base/b?q=1');
    expect(seen.headers['host']).toBe(`127.0.0.1:${up.port}`);
    expect(seen.headers['x-from-svc']).toBe('yes');
    expect(seen.headers['x-forwarded-for']).toBe('127.0.0.1');
    expect(seen.headers['x-svc-jwt-assertion']).toBeUndefined();
    expect(seen.headers['x-request-id']).toBe(a.headers['x-request-id']);
    expect(a.headers['x-frame-options']).toBe('DENY');
    expect(a.headers['x-content-type-options']).toBe('nosniff');
    expect(a.headers['x-svc-plan-checksum']).toBe(svc.store.current.plan.checksum);
  });

  it('streams a large request body through and edits response headers', async () => {
    const body = 'x'.repeat(5 * 1024 * 1024);
    const a = await send(port, '/upload', { host: 'public.example.com', 'content-type': 'text/plain' }, 'POST', body);
    expect(JSON.parse(a.body)).toEqual({ bytes: body.length });
    const early = await send(port, '/early', { host: 'public.example.com' }, 'POST', body).catch((e: NodeJS.ErrnoException) => ({ status: -1, body: e.code ?? '' }));
    // Either the answer arrives (then the connection closes) or the upload is cut: never a stall.
    expect([200, -1]).toContain(early.status);
    const r = await send(port, '/redirecting', { host: 'public.example.com' });
    expect(r.status).toBe(302);
    expect(r.headers['location']).toBe('https://public.example.com/elsewhere');
    expect(r.headers['set-cookie']).toEqual(['a=1', 'b=2']);
  });

  it("answers with svc's own pages: sign-in, 401, 404, 400, 505, redirects", async () => {
    const browser = await send(port, '/x', { host: 'app.example.com', accept: 'text/html' });
    expect(browser.status).toBe(302);
    // The decision's sign-in link, with its parameters signed by the runtime (S05).
    const signIn = new URL(String(browser.headers['location']));
    expect(`${signIn.origin}${signIn.pathname}`).toBe('https://auth.example.com/.svc/sign_in');
    // …and bound to this browser: the hash of the binding cookie set with the redirect.
    expect([...signIn.searchParams.keys()]).toEqual(['svc_redirect_uri', 'svc_binding', 'svc_expiry', 'svc_signature']);
    expect([browser.headers['set-cookie'] ?? []].flat().some((c) => c.startsWith('_svc_bind_'))).toBe(true);
    expect(signIn.searchParams.get('svc_redirect_uri')).toBe('https://app.example.com/x');
    expect(signIn.searchParams.get('svc_signature')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const api = await send(port, '/x', { host: 'app.example.com', accept: 'application/json' });
    expect(api.status).toBe(401);
    expect(JSON.parse(api.body)).toMatchObject({ status: 401, reason: 'sign-in-required', request_id: api.headers['x-request-id'] });
    const none = await send(port, '/', { host: 'unknown.example.com' });
    expect(none.status).toBe(404);
    expect(none.body).toContain(String(none.headers['x-request-id']));
    const bad = await send(port, '/admin%2Fsecret', { host: 'public.example.com' });
    expect(bad.status).toBe(400);
    expect(bad.headers['connection']).toBe('close');
    const moved = await send(port, '/p?q', { host: 'old.example.com' });
    expect([moved.status, moved.headers['location']]).toEqual([308, 'https://new.example.com/p?q']);
  });

  it('refuses HTTP/1.0 with a clear error', async () => {
    const net = await import('node:net');
    const text = await new Promise<string>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => s.write('GET / HTTP/1.0\r\nHost: public.example.com\r\n\r\n'));
      let out = '';
      s.on('data', (c) => (out += c.toString()));
      s.on('close', () => resolve(out));
    });
    expect(text).toMatch(/^HTTP\/1\.1 505 /);
  });

  it('gives 502 for a refused upstream and 504 for a slow one, with the request id', async () => {
    const down = await send(port, '/', { host: 'down.example.com', accept: 'application/json' });
    expect(down.status).toBe(502);
    expect(JSON.parse(down.body)).toMatchObject({ reason: 'upstream-unreachable', request_id: down.headers['x-request-id'] });
    const late = await send(port, '/', { host: 'slow.example.com' });
    expect(late.status).toBe(504);
  });

  it('aborts the upstream request when the client goes away', async () => {
    const req = httpRequest({ host: '127.0.0.1', port, path: '/hang/1', headers: { host: 'hang.example.com' } });
    req.on('error', () => undefined);
    req.end();
    await new Promise((r) => setTimeout(r, 200));
    req.destroy();
    await expect.poll(() => closedEarly, { timeout: 5000 }).toContain('/hang/1');
    // The pool did not stall: the next request goes through.
    expect((await send(port, '/', { host: 'public.example.com' })).status).toBe(200);
  });
});
