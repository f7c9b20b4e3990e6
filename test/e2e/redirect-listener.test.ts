/**
 * The http→https redirect listener (`http_redirect_addr`, docs/security.md S45): a 308 to the same host,
 * path and query on the HTTPS listener, built from the canonical target, so an absolute-form target
 * (`GET http://host/p?q`) is redirected to `https://host:PORT/p?q` and not to a Location with the
 * whole target glued after the port; what cannot be rebuilt (userinfo, another host) is answered 400.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run, type Running } from '../../runtime/process/run.ts';
import { issue, makeCa } from '../runtime/tls/pki.ts';
import { freePort } from '../support/ports.ts';
import { configDir, startUpstream, type Upstream } from './support.ts';

/** Sends `head` to the redirect listener; resolves with the status and Location of its answer. */
function ask(port: number, head: string): Promise<{ status: number; location: string | undefined }> {
  return new Promise((resolve, reject) => {
    let text = '';
    const s = connect(port, '127.0.0.1', () => s.write(head));
    s.setEncoding('utf8');
    s.on('data', (c: string) => {
      text += c;
      if (text.includes('\r\n\r\n')) s.end();
    });
    s.on('close', () => resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), location: /\r\nlocation: ([^\r]*)/i.exec(text)?.[1] }));
    s.on('error', reject);
  });
}

describe('the http→https redirect listener', () => {
  const cfg = configDir();
  let up: Upstream;
  let svc: Running;
  let port: number;
  let https: number;

  beforeAll(async () => {
    up = await startUpstream((_req, res) => res.end('ok'));
    const ca = await makeCa('svc test CA (TEST ONLY)');
    const cert = await issue(ca, { cn: 'app.example.com', dns: ['app.example.com'], usage: 'server' });
    port = await freePort();
    cfg.writeTls(cert, { http_redirect_addr: `127.0.0.1:${port}` }, [{ from: 'https://app.example.com', to: up.url, allow_public_unauthenticated_access: true }]);
    svc = await run({ configPath: cfg.path, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 }, watch: false });
    https = svc.listening.address.port;
    expect(svc.listening.redirectAddress?.port).toBe(port);
  }, 30_000);
  afterAll(async () => {
    await svc?.close();
    await up?.close();
    cfg.remove();
  });

  it('redirects an origin-form target to the same host, path and query', async () => {
    expect(await ask(port, 'GET /a/b?x=1 HTTP/1.1\r\nHost: app.example.com\r\n\r\n')).toEqual({ status: 308, location: `https://app.example.com:${https}/a/b?x=1` });
  });

  it('redirects an absolute-form target to its own path and query, not the target glued after the port', async () => {
    expect(await ask(port, 'GET http://app.example.com/a/b?x=1 HTTP/1.1\r\nHost: app.example.com\r\n\r\n')).toEqual({ status: 308, location: `https://app.example.com:${https}/a/b?x=1` });
  });

  it('refuses (400) an absolute-form target it cannot rebuild: userinfo, or a host the Host header contradicts', async () => {
    expect((await ask(port, 'GET http://alice:pw@app.example.com/x HTTP/1.1\r\nHost: app.example.com\r\n\r\n')).status).toBe(400);
    expect((await ask(port, 'GET http://evil.example.com/x HTTP/1.1\r\nHost: app.example.com\r\n\r\n')).status).toBe(400);
  });
});
