/**
 * The SNI certificate store over real TLS handshakes on loopback: exact and wildcard names, the
 * self-signed certificate for a service URL without a configured certificate (docs/running.md "TLS"), the
 * default for unknown names and clients without SNI, ALPN per codec_type, and the 421 rule.
 */
import { X509Certificate } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import tls from 'node:tls';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PlanBody } from '../../../compiler/plan/types.ts';
import { CertificateStore } from '../../../runtime/tls/certificates.ts';
import { TlsMaterialError } from '../../../runtime/tls/errors.ts';
import { bareHost, nameCovers } from '../../../runtime/tls/host-names.ts';
import { alpnProtocols, loadTlsMaterial, secureContextOptions, type TlsMaterial } from '../../../runtime/tls/material.ts';
import { issue, makeCa, type Issued } from './pki.ts';
import { compileBody, open, TempFiles } from './plan.ts';
import { closeServer, handshake, listen } from './tls-client.ts';

let files: TempFiles;
let first: Issued;
let exact: Issued;
let wild: Issued;
let body: PlanBody;

const routes = [
  { from: 'https://app.example.com', to: 'http://127.0.0.1:1', ...open },
  { from: 'https://x.wild.example.com', to: 'http://127.0.0.1:1', ...open },
  { from: 'https://bare.example.com', to: 'http://127.0.0.1:1', ...open },
];

beforeAll(async () => {
  files = new TempFiles();
  const ca = await makeCa('Test CA');
  first = await issue(ca, { cn: 'first.example.com', dns: ['first.example.com', 'other.example.com'] });
  exact = await issue(ca, { cn: 'app.example.com', dns: ['app.example.com'] });
  wild = await issue(ca, { cn: '*.wild.example.com', dns: ['*.wild.example.com'] });
  const pair = (name: string, i: Issued) => ({ cert: files.write(`${name}.crt`, i.certPem), key: files.write(`${name}.key`, i.keyPem) });
  body = compileBody(
    {
      certificates: [pair('first', first), pair('exact', exact), pair('wild', wild)],
      forward_auth_url: 'https://fwd.example.com',
    },
    routes,
    files,
  );
});
afterAll(() => files.remove());

let server: tls.Server | undefined;
afterEach(async () => {
  await closeServer(server);
  server = undefined;
});

async function serve(material: TlsMaterial, codecType: 'auto' | 'http1' | 'http2' = 'auto'): Promise<number> {
  const opts = secureContextOptions({ server: { ...body.settings.server, codecType } }, { current: () => material });
  server = tls.createServer(opts, (s) => s.end(`${s.servername || '-'}\n`));
  return listen(server);
}

const fp = (pem: string): string => new X509Certificate(pem).fingerprint256;

describe('SNI choice over real handshakes', () => {
  it('serves the certificate with the exact name', async () => {
    const port = await serve(await loadTlsMaterial(body));
    const h = await handshake(port, { servername: 'app.example.com' });
    expect(h.cert.fingerprint256).toBe(fp(exact.certPem));
    expect(h.cert.subjectAltName).toBe('DNS:app.example.com');
    expect(h.line).toBe('app.example.com');
  });

  it('serves the wildcard certificate for one label under it, not two', async () => {
    const port = await serve(await loadTlsMaterial(body));
    const one = await handshake(port, { servername: 'x.wild.example.com' });
    expect(one.cert.fingerprint256).toBe(fp(wild.certPem));
    expect(one.cert.subjectAltName).toBe('DNS:*.wild.example.com');
    const two = await handshake(port, { servername: 'a.b.wild.example.com' });
    expect(two.cert.fingerprint256).toBe(fp(first.certPem));
  });

  it('serves a generated self-signed ECDSA P-256 certificate for a route host without a configured certificate, once per name', async () => {
    const port = await serve(await loadTlsMaterial(body));
    const h = await handshake(port, { servername: 'bare.example.com' });
    expect(h.cert.subjectAltName).toBe('DNS:bare.example.com');
    expect(h.cert.subject).toContain('CN=bare.example.com');
    expect(h.cert.issuer).toBe(h.cert.subject);
    expect(h.cert.verify(h.cert.publicKey)).toBe(true);
    expect(h.cert.publicKey.asymmetricKeyType).toBe('ec');
    expect(h.cert.publicKey.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
    const again = await handshake(port, { servername: 'bare.example.com' });
    expect(again.cert.fingerprint256).toBe(h.cert.fingerprint256);
  });

  it('generates for the authenticate and forward-auth hosts too', async () => {
    const port = await serve(await loadTlsMaterial(body));
    expect((await handshake(port, { servername: 'auth.example.com' })).cert.subjectAltName).toBe('DNS:auth.example.com');
    expect((await handshake(port, { servername: 'fwd.example.com' })).cert.subjectAltName).toBe('DNS:fwd.example.com');
  });

  it('serves the first configured certificate for a name svc does not serve, and to clients without SNI', async () => {
    const material = await loadTlsMaterial(body);
    const port = await serve(material);
    expect((await handshake(port, { servername: 'unknown.example.net' })).cert.fingerprint256).toBe(fp(first.certPem));
    // Connecting to an IP address without `servername`: Node sends no SNI.
    const noSni = await handshake(port);
    expect(noSni.line).toBe('-');
    expect(noSni.cert.fingerprint256).toBe(fp(first.certPem));
    expect(material.selfSigned.size).toBe(0);
  });

  it('without configured certificates, serves a self-signed default for the first served host', async () => {
    const plain = compileBody({ insecure_server: true }, routes, files);
    const material = await loadTlsMaterial(plain);
    const port = await serve(material);
    const noSni = await handshake(port);
    expect(noSni.cert.subjectAltName).toBe('DNS:app.example.com');
    const other = await handshake(port, { servername: 'bare.example.com' });
    expect(other.cert.subjectAltName).toBe('DNS:bare.example.com');
  });

  it('negotiates ALPN per codec_type', async () => {
    const material = await loadTlsMaterial(body);
    let port = await serve(material, 'auto');
    expect((await handshake(port, { servername: 'app.example.com', ALPNProtocols: ['h2', 'http/1.1'] })).alpn).toBe('h2');
    expect((await handshake(port, { servername: 'app.example.com', ALPNProtocols: ['http/1.1'] })).alpn).toBe('http/1.1');
    await closeServer(server);
    port = await serve(material, 'http1');
    expect((await handshake(port, { servername: 'app.example.com', ALPNProtocols: ['h2', 'http/1.1'] })).alpn).toBe('http/1.1');
    expect(alpnProtocols('http2')).toEqual(['h2']);
    expect(alpnProtocols('auto')).toEqual(['h2', 'http/1.1']);
    expect(secureContextOptions(body.settings, { current: () => material }).minVersion).toBe('TLSv1.2');
  });

  it('refuses a TLS 1.1 client', async () => {
    const port = await serve(await loadTlsMaterial(body));
    await expect(handshake(port, { servername: 'app.example.com', minVersion: 'TLSv1', maxVersion: 'TLSv1.1' })).rejects.toThrow();
  });
});

describe('servesHost: the 421 rule for coalesced HTTP/2 connections', () => {
  it('answers whether the certificate chosen for the SNI name covers the request host', async () => {
    const store = (await loadTlsMaterial(body)).certificates;
    const table: [string | false, string, boolean][] = [
      ['app.example.com', 'app.example.com', true],
      ['app.example.com', 'APP.example.com:443', true],
      ['app.example.com', 'bare.example.com', false],
      ['x.wild.example.com', 'y.wild.example.com', true],
      ['x.wild.example.com', 'a.b.wild.example.com', false],
      ['x.wild.example.com', 'wild.example.com', false],
      ['bare.example.com', 'bare.example.com', true],
      ['bare.example.com', 'app.example.com', false],
      // Unknown SNI and no SNI get the first certificate: it covers its own two names only.
      ['unknown.example.net', 'other.example.com', true],
      [false, 'first.example.com', true],
      [false, 'app.example.com', false],
      ['app.example.com', '', false],
    ];
    for (const [sni, host, want] of table) expect([sni, host, store.servesHost(sni, host)]).toEqual([sni, host, want]);
  });

  it('matches wildcards on exactly one left-most label', () => {
    expect(nameCovers('*.example.com', 'a.example.com')).toBe(true);
    expect(nameCovers('*.example.com', 'example.com')).toBe(false);
    expect(nameCovers('*.example.com', 'a.b.example.com')).toBe(false);
    expect(nameCovers('*.example.com', '.example.com')).toBe(false);
    expect(bareHost('[::1]:8443')).toBe('::1');
    expect(bareHost('Example.COM.')).toBe('example.com');
  });
});

describe('bad material', () => {
  it('refuses at load a key file that changed since the plan was compiled', async () => {
    const local = new TempFiles();
    try {
      const ca = await makeCa('CA');
      const a = await issue(ca, { cn: 'a.example.com', dns: ['a.example.com'] });
      const b = await issue(ca, { cn: 'a.example.com', dns: ['a.example.com'] });
      const keyFile = local.write('a.key', a.keyPem);
      const plan = compileBody({ certificates: [{ cert: local.write('a.crt', a.certPem), key: keyFile }] }, routes, local);
      writeFileSync(keyFile, b.keyPem);
      const err = await CertificateStore.create(plan).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TlsMaterialError);
      expect((err as TlsMaterialError).code).toBe('SVC_ERR_TLS_MATERIAL');
      expect(((err as TlsMaterialError).cause as { code: string }).code).toBe('SVC_ERR_SECRET_CHANGED');
      // On a reload the new file is read, and a key that does not match its certificate is refused.
      const mismatch = await CertificateStore.create(plan, { mode: 'reload' }).catch((e: unknown) => e);
      expect(mismatch).toBeInstanceOf(TlsMaterialError);
      expect((mismatch as Error).message).toMatch(/^certificates\[0\]: cannot use the certificate and key/);
    } finally {
      local.remove();
    }
  });
});
