/**
 * The HTTPS listener end to end: certificates chosen by SNI, a self-signed certificate for a served
 * host no certificate covers (docs/running.md "TLS"), 421 for a request whose host the connection's certificate
 * does not cover, 495 for a route requiring a client certificate, and the PROXY protocol in front
 * of a listener (the PROXY source is the client address; no header, no connection).
 */
import { X509Certificate } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request } from 'node:https';
import { connect } from 'node:net';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run, type Running } from '../../runtime/process/run.ts';
import type { AccessEntry } from '../../runtime/observe/log/access-line.ts';
import { BASE_SETTINGS } from '../support/compile-text.ts';
import { issue, makeCa, type Issued } from '../runtime/tls/pki.ts';
import { configDir, echo, startUpstream, tlsExchange, type Upstream } from './support.ts';

interface Answer {
  status: number;
  body: string;
  subject: string;
}

function get(port: number, servername: string, host: string, ca: string, client?: Issued, path = '/'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, servername, headers: { host }, ca, agent: false, ...(client ? { cert: client.certPem, key: client.keyPem } : {}), checkServerIdentity: () => undefined },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => {
          const cert = (res.socket as import('node:tls').TLSSocket).getPeerCertificate();
          resolve({ status: res.statusCode ?? 0, body, subject: String(cert.subjectaltname ?? '') });
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** Writes `server.pem`/`server.key` into the config dir (a TLS listener's files). */
function writeServerCert(cfg: ReturnType<typeof configDir>, cert: Issued): void {
  writeFileSync(join(cfg.dir, 'server.pem'), cert.certPem);
  writeFileSync(join(cfg.dir, 'server.key'), cert.keyPem);
}

/** A TLS config (no insecure_server) with the files of `writeServerCert`, plus `extra` and routes. */
function writeTlsConfig(cfg: ReturnType<typeof configDir>, extra: Record<string, unknown>, routes: unknown[]): void {
  const { insecure_server: _insecure, ...settings } = BASE_SETTINGS;
  cfg.writeRaw(stringify({ ...settings, address: '127.0.0.1:8443', certificate_file: join(cfg.dir, 'server.pem'), certificate_key_file: join(cfg.dir, 'server.key'), ...extra, routes }));
}

describe('svc run over TLS', () => {
  let up: Upstream;
  let svc: Running;
  let ca: Issued;
  let clientCa: Issued;
  let client: Issued;
  const cfg = configDir();
  const access: AccessEntry[] = [];

  beforeAll(async () => {
    up = await startUpstream(echo);
    ca = await makeCa('svc test CA (TEST ONLY)');
    clientCa = await makeCa('svc test client CA (TEST ONLY)');
    const server = await issue(ca, { cn: 'app.example.com', dns: ['app.example.com', 'mtls.example.com'], usage: 'server' });
    client = await issue(clientCa, { cn: 'alice', usage: 'client' });
    writeServerCert(cfg, server);
    writeFileSync(join(cfg.dir, 'client-ca.pem'), clientCa.certPem);
    writeTlsConfig(cfg, {}, [
      { from: 'https://app.example.com', to: up.url, allow_public_unauthenticated_access: true },
      { from: 'https://other.example.com', to: up.url, allow_public_unauthenticated_access: true },
      { from: 'https://mtls.example.com', to: up.url, allow_public_unauthenticated_access: true, tls_downstream_client_ca_file: join(cfg.dir, 'client-ca.pem') },
    ]);
    svc = await run({ configPath: cfg.path, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 }, watch: false, access: (e) => access.push(e) });
  });

  afterAll(async () => {
    await svc?.close();
    await up?.close();
    cfg.remove();
  });

  it('serves the configured certificate by SNI and forwards', async () => {
    const a = await get(svc.listening.address.port, 'app.example.com', 'app.example.com', ca.certPem);
    expect(a.status).toBe(200);
    expect(a.subject).toContain('DNS:app.example.com');
    expect((JSON.parse(a.body) as { headers: Record<string, string> }).headers['x-forwarded-proto']).toBe('https');
  });

  it('generates a self-signed certificate for a served host no certificate covers', async () => {
    const a = await new Promise<string>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: svc.listening.address.port, path: '/', servername: 'other.example.com', headers: { host: 'other.example.com' }, rejectUnauthorized: false, agent: false }, (res) => {
        resolve(String((res.socket as import('node:tls').TLSSocket).getPeerCertificate().subjectaltname));
        res.resume();
      });
      req.on('error', reject);
      req.end();
    });
    expect(a).toContain('DNS:other.example.com');
  });

  it('answers 421 when the host is not covered by the connection certificate', async () => {
    const a = await get(svc.listening.address.port, 'app.example.com', 'other.example.com', ca.certPem);
    expect(a.status).toBe(421);
  });

  it('requires a client certificate from the route CA (495 without one)', async () => {
    expect((await get(svc.listening.address.port, 'mtls.example.com', 'mtls.example.com', ca.certPem)).status).toBe(495);
    expect((await get(svc.listening.address.port, 'mtls.example.com', 'mtls.example.com', ca.certPem, client)).status).toBe(200);
    // The access line names the certificate by its SHA-256 fingerprint, as the route's CA judged it (for `svc diff --replay`).
    const fingerprint = new X509Certificate(client.certPem).fingerprint256.replaceAll(':', '').toLowerCase();
    await expect.poll(() => access.find((e) => e.host === 'mtls.example.com' && e.status === 200)?.clientCert).toEqual({ sha256: fingerprint, valid: true });
    // A route without its own CA does not ask.
    expect((await get(svc.listening.address.port, 'app.example.com', 'app.example.com', ca.certPem)).status).toBe(200);
  });
});

describe('forward-auth callers under the global client_ca (docs/security.md S13)', () => {
  let up: Upstream;
  let svc: Running;
  let ca: Issued;
  let proxyCert: Issued;
  let stranger: Issued;
  const cfg = configDir();

  beforeAll(async () => {
    up = await startUpstream(echo);
    ca = await makeCa('svc test CA (TEST ONLY)');
    const clientCa = await makeCa('svc test proxies CA (TEST ONLY)');
    const otherCa = await makeCa('svc test unrelated CA (TEST ONLY)');
    writeServerCert(cfg, await issue(ca, { cn: 'fwd.example.com', dns: ['fwd.example.com', 'app.example.com', 'auth.example.com'], usage: 'server' }));
    proxyCert = await issue(clientCa, { cn: 'nginx-proxy', usage: 'client' });
    stranger = await issue(otherCa, { cn: 'stranger', usage: 'client' });
    writeFileSync(join(cfg.dir, 'client-ca.pem'), clientCa.certPem);
    writeTlsConfig(cfg, { client_ca_file: join(cfg.dir, 'client-ca.pem'), forward_auth_url: 'https://fwd.example.com' }, [
      { from: 'https://app.example.com', to: up.url, allow_public_unauthenticated_access: true },
    ]);
    svc = await run({ configPath: cfg.path, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 }, watch: false });
  });

  afterAll(async () => {
    await svc?.close();
    await up?.close();
    cfg.remove();
  });

  const verify = async (client?: Issued) => (await get(svc.listening.address.port, 'fwd.example.com', 'fwd.example.com', ca.certPem, client, '/verify?uri=https://app.example.com/x')).status;

  it('answers a proxy presenting a certificate of client_ca', async () => {
    expect(await verify(proxyCert)).toBe(200);
  });

  it('refuses a caller without a certificate, or with one of another CA (495), never answering the check', async () => {
    expect(await verify()).toBe(495);
    expect(await verify(stranger)).toBe(495);
  });

  it('leaves the sign-in endpoints open to browsers without a certificate, and routes svc serves closed', async () => {
    const port = svc.listening.address.port;
    // The JWKS of the authenticate service: svc's own, browser-facing, answered without a certificate.
    const jwks = (await get(port, 'auth.example.com', 'auth.example.com', ca.certPem, undefined, '/.well-known/svc/jwks.json')).status;
    expect(jwks).toBe(200);
    expect((await get(port, 'app.example.com', 'app.example.com', ca.certPem)).status).toBe(495);
    expect((await get(port, 'app.example.com', 'app.example.com', ca.certPem, proxyCert)).status).toBe(200);
  });
});

describe('svc run behind the PROXY protocol', () => {
  let up: Upstream;
  let svc: Running;
  const cfg = configDir();

  beforeAll(async () => {
    up = await startUpstream(echo);
    cfg.write({ address: '127.0.0.1:8443', use_proxy_protocol: true }, [{ from: 'https://app.example.com', to: up.url, allow_public_unauthenticated_access: true }]);
    svc = await run({ configPath: cfg.path, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 }, watch: false });
  });

  afterAll(async () => {
    await svc?.close();
    await up?.close();
    cfg.remove();
  });

  const raw = (text: string) =>
    new Promise<string>((resolve) => {
      const s = connect(svc.listening.address.port, '127.0.0.1', () => s.write(text));
      let out = '';
      s.on('data', (c) => {
        out += c.toString();
        if (out.includes('\r\n\r\n') && out.includes('}')) s.end();
      });
      s.on('error', () => resolve(out));
      s.on('close', () => resolve(out));
    });

  it('takes the client address from the PROXY header', async () => {
    const out = await raw('PROXY TCP4 203.0.113.9 127.0.0.1 5555 8443\r\nGET / HTTP/1.1\r\nHost: app.example.com\r\nConnection: close\r\n\r\n');
    expect(out).toMatch(/^HTTP\/1\.1 200 /);
    expect(out).toContain('"x-forwarded-for":"203.0.113.9"');
  });

  it('closes a connection without a PROXY header', async () => {
    const out = await raw('GET / HTTP/1.1\r\nHost: app.example.com\r\n\r\n');
    expect(out).toBe('');
  });
});

describe('upstream TLS', () => {
  let svc: Running;
  let upstream: import('node:https').Server;
  let upstreamPort = 0;
  const seen: string[] = [];
  const cfg = configDir();

  beforeAll(async () => {
    const ca = await makeCa('svc upstream CA (TEST ONLY)');
    const serverCert = await issue(ca, { cn: 'upstream.internal', dns: ['upstream.internal'], usage: 'server' });
    const clientCert = await issue(ca, { cn: 'svc-proxy', usage: 'client' });
    const { createServer } = await import('node:https');
    upstream = createServer({ cert: serverCert.certPem, key: serverCert.keyPem, ca: ca.certPem, requestCert: true, rejectUnauthorized: true }, (req, res) => {
      const peer = (req.socket as import('node:tls').TLSSocket).getPeerCertificate();
      seen.push(String(peer.subject?.CN));
      res.end('secure');
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
    upstreamPort = (upstream.address() as { port: number }).port;
    for (const [name, text] of [
      ['ca.pem', ca.certPem],
      ['client.pem', clientCert.certPem],
      ['client.key', clientCert.keyPem],
    ] as const)
      writeFileSync(join(cfg.dir, name), text);
    cfg.write({ address: '127.0.0.1:8443' }, [
      {
        from: 'https://good.example.com',
        to: `https://127.0.0.1:${upstreamPort}`,
        allow_public_unauthenticated_access: true,
        tls_custom_ca_file: join(cfg.dir, 'ca.pem'),
        tls_server_name: 'upstream.internal',
        tls_client_cert_file: join(cfg.dir, 'client.pem'),
        tls_client_key_file: join(cfg.dir, 'client.key'),
      },
      { from: 'https://untrusted.example.com', to: `https://127.0.0.1:${upstreamPort}`, allow_public_unauthenticated_access: true },
    ]);
    svc = await run({ configPath: cfg.path, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 }, watch: false });
  });

  afterAll(async () => {
    await svc?.close();
    upstream?.close();
    cfg.remove();
  });

  const plainGet = (host: string) =>
    new Promise<number>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port: svc.listening.address.port, path: '/', headers: { host }, agent: false }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });

  it('verifies the upstream with tls_custom_ca and tls_server_name, and presents the client certificate', async () => {
    expect(await plainGet('good.example.com')).toBe(200);
    expect(seen).toContain('svc-proxy');
  });

  it('refuses an upstream certificate the trust store does not know (502)', async () => {
    expect(await plainGet('untrusted.example.com')).toBe(502);
  });
});

describe('HTTP/2 downstream (codec_type auto, ALPN)', () => {
  let up: Upstream;
  let svc: Running;
  let ca: Issued;
  const cfg = configDir();

  const accessLines: AccessEntry[] = [];
  beforeAll(async () => {
    up = await startUpstream(echo);
    ca = await makeCa('svc h2 CA (TEST ONLY)');
    const server = await issue(ca, { cn: 'app.example.com', dns: ['app.example.com'], usage: 'server' });
    writeServerCert(cfg, server);
    writeTlsConfig(cfg, { codec_type: 'auto' }, [{ from: 'https://app.example.com', to: `${up.url}/v2`, allow_public_unauthenticated_access: true }]);
    svc = await run({ configPath: cfg.path, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 }, watch: false, access: (e) => accessLines.push(e) });
  });

  afterAll(async () => {
    await svc?.close();
    await up?.close();
    cfg.remove();
  });

  it('serves HTTP/2 and forwards without pseudo-headers', async () => {
    const { connect: h2connect } = await import('node:http2');
    const session = h2connect(`https://127.0.0.1:${svc.listening.address.port}`, { ca: ca.certPem, servername: 'app.example.com' });
    const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = session.request({ ':path': '/x?y=1', ':authority': 'app.example.com' });
      let status = 0;
      let body = '';
      req.on('response', (h) => (status = Number(h[':status'])));
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => resolve({ status, body }));
      req.on('error', reject);
      req.end();
    });
    session.close();
    expect(status).toBe(200);
    const seen = JSON.parse(body) as { url: string; headers: Record<string, string> };
    expect(seen.url).toBe('/v2x?y=1');
    expect(Object.keys(seen.headers).filter((k) => k.startsWith(':'))).toEqual([]);
    // The access line of a completed HTTP/2 exchange: its status, never "cut"; no byte counts (shared connection).
    await expect.poll(() => accessLines.length).toBe(1);
    expect(accessLines[0]).toMatchObject({ status: 200, host: 'app.example.com', path: '/x', decision: 'allow' });
    expect(accessLines[0]!.cut).toBeUndefined();
    expect(accessLines[0]!.bytesIn).toBeUndefined();
  });

  it('its HTTP/1.1 fallback frames requests on one connection by their own heads: a POST without a body, a GET, a POST with one', async () => {
    const out = await tlsExchange(
      svc.listening.address.port,
      'POST /a HTTP/1.1\r\nHost: app.example.com\r\n\r\n' +
        'GET /b HTTP/1.1\r\nHost: app.example.com\r\n\r\n' +
        'POST /c HTTP/1.1\r\nHost: app.example.com\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc',
    );
    expect(out.match(/HTTP\/1\.1 \d+ /g)).toEqual(['HTTP/1.1 200 ', 'HTTP/1.1 200 ', 'HTTP/1.1 200 ']);
    expect([...out.matchAll(/"method":"(\w+)","url":"([^"]*)"/g)].map((m) => `${m[1]} ${m[2]}`)).toEqual(['POST /v2a', 'GET /v2b', 'POST /v2c']);
  });
});

describe('certificate files renewed in place', () => {
  let up: Upstream;
  let svc: Running;
  let ca: Issued;
  const cfg = configDir();

  const writeCert = async () => {
    const cert = await issue(ca, { cn: 'app.example.com', dns: ['app.example.com'], usage: 'server' });
    writeServerCert(cfg, cert);
    return cert.serial;
  };
  const servedSerial = () =>
    new Promise<string>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: svc.listening.address.port, path: '/', servername: 'app.example.com', headers: { host: 'app.example.com' }, ca: ca.certPem, agent: false }, (res) => {
        resolve(String((res.socket as import('node:tls').TLSSocket).getPeerCertificate().serialNumber).toLowerCase());
        res.resume();
      });
      req.on('error', reject);
      req.end();
    });

  beforeAll(async () => {
    up = await startUpstream(echo);
    ca = await makeCa('svc renewal CA (TEST ONLY)');
    await writeCert();
    writeTlsConfig(cfg, {}, [{ from: 'https://app.example.com', to: up.url, allow_public_unauthenticated_access: true }]);
    svc = await run({ configPath: cfg.path, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 } });
  });

  afterAll(async () => {
    await svc?.close();
    await up?.close();
    cfg.remove();
  });

  it('serves the new certificate to new connections without a restart', async () => {
    const before = await servedSerial();
    const renewed = await writeCert();
    expect(renewed).not.toBe(before);
    await expect.poll(servedSerial, { timeout: 10_000, interval: 100 }).toBe(renewed.replace(/^0+/, ''));
  });
});
