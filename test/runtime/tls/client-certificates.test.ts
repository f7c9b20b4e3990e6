/**
 * Client-certificate verification over real mTLS handshakes on loopback: the server requests a
 * certificate (never requires one) and verifies it per route; global `client_ca` + `client_crl`,
 * and a route's `tls_downstream_client_ca` overriding it.
 */
import { X509Certificate } from 'node:crypto';
import tls from 'node:tls';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PlanBody } from '../../../compiler/plan/types.ts';
import { ClientCertificatePolicy, ClientTrust, parseCrls, type ClientCertificateResult } from '../../../runtime/tls/client-certificates.ts';
import { TlsMaterialError } from '../../../runtime/tls/errors.ts';
import { loadTlsMaterial, secureContextOptions } from '../../../runtime/tls/material.ts';
import { issue, makeCa, makeCrl, type Issued } from './pki.ts';
import { compileBody, open, TempFiles } from './plan.ts';
import { closeServer, handshake, listen } from './tls-client.ts';

const DAY = 86_400_000;
let files: TempFiles;
let caA: Issued;
let caB: Issued;
let caRoute: Issued;
let interA: Issued;
const client: Record<string, Issued> = {};
let crlA: string;
let body: PlanBody;

const routes = [
  { from: 'https://app.example.com', to: 'http://127.0.0.1:1', ...open },
  { from: 'https://special.example.com', to: 'http://127.0.0.1:1', tls_downstream_client_ca_file: '', ...open },
];

beforeAll(async () => {
  files = new TempFiles();
  caA = await makeCa('Client CA A');
  caB = await makeCa('Client CA B');
  caRoute = await makeCa('Route CA');
  interA = await issue(caA, { cn: 'Intermediate A', usage: 'ca' });
  const server = await issue(caA, { cn: 'app.example.com', dns: ['app.example.com', 'special.example.com'] });
  client['good'] = await issue(caA, { cn: 'alice', usage: 'client' });
  client['revoked'] = await issue(caA, { cn: 'mallory', usage: 'client' });
  client['other'] = await issue(caB, { cn: 'bob', usage: 'client' });
  client['route'] = await issue(caRoute, { cn: 'carol', usage: 'client' });
  client['expired'] = await issue(caA, { cn: 'old', usage: 'client', notBefore: new Date(Date.now() - 10 * DAY), notAfter: new Date(Date.now() - DAY) });
  client['serverOnly'] = await issue(caA, { cn: 'srv', usage: 'server' });
  client['viaIntermediate'] = await issue(interA, { cn: 'dave', usage: 'client' });
  crlA = await makeCrl(caA, [client['revoked'].serial]);
  const r = structuredClone(routes);
  (r[1] as Record<string, unknown>)['tls_downstream_client_ca_file'] = files.write('route-ca.pem', caRoute.certPem);
  body = compileBody(
    {
      certificates: [{ cert: files.write('server.crt', server.certPem), key: files.write('server.key', server.keyPem) }],
      client_ca_file: files.write('ca-a.pem', caA.certPem),
      client_crl_file: files.write('crl-a.pem', crlA),
    },
    r,
    files,
  );
});
afterAll(() => files.remove());

let server: tls.Server | undefined;
afterEach(async () => {
  await closeServer(server);
  server = undefined;
});

interface Seen {
  readonly global: ClientCertificateResult | null;
  readonly special: ClientCertificateResult | null;
  readonly decision: { fingerprint: string; valid: boolean } | null;
}

/** A TLS server that reports, per connection, the verification for both routes as one JSON line. */
async function serve(plan: PlanBody): Promise<number> {
  const material = await loadTlsMaterial(plan);
  const [app, special] = plan.routes;
  server = tls.createServer(secureContextOptions(plan.settings, { current: () => material }), (s) => {
    const seen: Seen = {
      global: material.clients.verifySocket(app ?? null, s),
      special: material.clients.verifySocket(special ?? null, s),
      decision: material.clients.clientCertificateFor(app ?? null, s) ?? null,
    };
    s.end(`${JSON.stringify(seen)}\n`);
  });
  return listen(server);
}

async function present(port: number, who: Issued | null, chain = ''): Promise<Seen> {
  const opts: tls.ConnectionOptions = who ? { cert: `${who.certPem}\n${chain}`, key: who.keyPem } : {};
  const h = await handshake(port, { servername: 'app.example.com', ...opts });
  return JSON.parse(h.line) as Seen;
}

const fingerprintOf = (i: Issued): string => new X509Certificate(i.certPem).fingerprint256.replaceAll(':', '').toLowerCase();

describe('mTLS handshakes verified per route', () => {
  it('a certificate from the global CA is valid, with its sha256 fingerprint', async () => {
    const port = await serve(body);
    const seen = await present(port, client['good']!);
    expect(seen.global).toEqual({ present: true, valid: true, fingerprint: fingerprintOf(client['good']!), reason: null });
    expect(seen.global?.fingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(seen.decision).toEqual({ fingerprint: fingerprintOf(client['good']!), valid: true });
    // The route with its own CA does not accept the global CA's certificates.
    expect(seen.special).toMatchObject({ present: true, valid: false, reason: 'untrusted' });
  });

  it('a certificate from another CA is invalid', async () => {
    const port = await serve(body);
    const seen = await present(port, client['other']!);
    expect(seen.global).toMatchObject({ present: true, valid: false, reason: 'untrusted', fingerprint: fingerprintOf(client['other']!) });
    expect(seen.decision).toEqual({ fingerprint: fingerprintOf(client['other']!), valid: false });
  });

  it('a certificate revoked by the CRL is invalid', async () => {
    const port = await serve(body);
    expect((await present(port, client['revoked']!)).global).toMatchObject({ present: true, valid: false, reason: 'revoked' });
  });

  it('an expired certificate and one without clientAuth usage are invalid', async () => {
    const port = await serve(body);
    expect((await present(port, client['expired']!)).global).toMatchObject({ valid: false, reason: 'expired' });
    expect((await present(port, client['serverOnly']!)).global).toMatchObject({ valid: false, reason: 'not-for-client-auth' });
  });

  it('no certificate: not present, and the decision core sees none', async () => {
    const port = await serve(body);
    const seen = await present(port, null);
    expect(seen.global).toEqual({ present: false, valid: false, fingerprint: null, reason: 'absent' });
    expect(seen.decision).toBeNull();
  });

  it("a route's tls_downstream_client_ca overrides client_ca for that route", async () => {
    const port = await serve(body);
    const seen = await present(port, client['route']!);
    expect(seen.special).toMatchObject({ present: true, valid: true, fingerprint: fingerprintOf(client['route']!) });
    expect(seen.global).toMatchObject({ present: true, valid: false, reason: 'untrusted' });
  });
});

describe('ClientCertificatePolicy', () => {
  it('requests a certificate only when a CA is configured, and requires one per route', async () => {
    const policy = await ClientCertificatePolicy.create(body);
    expect(policy.requested).toBe(true);
    expect(policy.required(body.routes[0]!)).toBe(true);
    expect(policy.required(body.routes[1]!)).toBe(true);
    expect(policy.required(null)).toBe(true);
    expect(policy.caPems).toHaveLength(2);
    const material = await loadTlsMaterial(body);
    expect(secureContextOptions(body.settings, { current: () => material }).requestCert).toBe(true);

    const onlyRoute = compileBody({ certificates: body.settings.tls.certificates.map((c) => ({ cert: (c.cert as { file: string }).file, key: ('ref' in c.key ? c.key.ref : '').slice(5) })) }, [
      { from: 'https://app.example.com', to: 'http://127.0.0.1:1', ...open },
      { from: 'https://special.example.com', to: 'http://127.0.0.1:1', tls_downstream_client_ca_file: files.write('route-ca-2.pem', caRoute.certPem), ...open },
    ], files);
    const p2 = await ClientCertificatePolicy.create(onlyRoute);
    expect(p2.requested).toBe(true);
    expect(p2.required(onlyRoute.routes[0]!)).toBe(false);
    expect(p2.required(onlyRoute.routes[1]!)).toBe(true);
    expect(p2.verify(onlyRoute.routes[0]!, [])).toBeNull();

    const none = compileBody({ insecure_server: true }, [{ from: 'https://app.example.com', to: 'http://127.0.0.1:1', ...open }], files);
    const p3 = await ClientCertificatePolicy.create(none);
    expect(p3.requested).toBe(false);
    expect(p3.required(none.routes[0]!)).toBe(false);
    const plainMaterial = await loadTlsMaterial(none);
    expect(secureContextOptions(none.settings, { current: () => plainMaterial }).requestCert).toBe(false);
  });

  it('refuses a CRL signed by none of the configured CAs (it would fail open)', async () => {
    const stray = await makeCrl(caB, []);
    const plan = structuredClone(body) as { settings: { tls: { clientCrl: unknown } } } & PlanBody;
    plan.settings.tls.clientCrl = { pem: stray, sha256: 'sha256:x' };
    const err = await ClientCertificatePolicy.create(plan).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TlsMaterialError);
    expect((err as TlsMaterialError).code).toBe('SVC_ERR_TLS_MATERIAL');
    expect((err as Error).message).toMatch(/^client_crl: /);
  });
});

describe('ClientTrust.verify', () => {
  /** A chain checked against CA and CRL PEM documents, with a trust built for it. */
  const verifyClientCertificate = async (chain: readonly X509Certificate[], caPems: readonly string[], crlPems: readonly string[] = []): Promise<ClientCertificateResult> =>
    (await ClientTrust.create(caPems, (await Promise.all(crlPems.map((p) => parseCrls(p, 'client_crl')))).flat())).verify(chain);
  const chainOf = (...i: Issued[]) => i.map((x) => new X509Certificate(x.certPem));

  it('verifies a chain against CA and CRL PEM documents', async () => {
    expect(await verifyClientCertificate(chainOf(client['good']!), [caA.certPem], [crlA])).toMatchObject({ valid: true });
    expect(await verifyClientCertificate(chainOf(client['revoked']!), [caA.certPem], [crlA])).toMatchObject({ valid: false, reason: 'revoked' });
    expect(await verifyClientCertificate(chainOf(client['revoked']!), [caA.certPem], [])).toMatchObject({ valid: true });
    expect(await verifyClientCertificate([], [caA.certPem])).toEqual({ present: false, valid: false, fingerprint: null, reason: 'absent' });
  });

  it('builds a path through intermediates: sent with the chain, or configured in the CA bundle', async () => {
    const leaf = client['viaIntermediate']!;
    const rootOnly = await ClientTrust.create([caA.certPem], []);
    expect(rootOnly.verify(chainOf(leaf, interA))).toMatchObject({ valid: true });
    expect(rootOnly.verify(chainOf(leaf))).toMatchObject({ valid: false, reason: 'untrusted' });
    const bundle = await ClientTrust.create([`${caA.certPem}\n${interA.certPem}`], []);
    expect(bundle.verify(chainOf(leaf))).toMatchObject({ valid: true });
  });

  it('fails closed once the CRL is past its nextUpdate', async () => {
    const stale = await makeCrl(caA, [], new Date(Date.now() - 1000));
    const trust = await ClientTrust.create([caA.certPem], await parseCrls(stale, 'client_crl'));
    expect(trust.verify(chainOf(client['good']!))).toMatchObject({ valid: false, reason: 'crl-expired' });
  });

  it('checks validity dates against the given time', async () => {
    const trust = await ClientTrust.create([caA.certPem], []);
    expect(trust.verify(chainOf(client['good']!), new Date(Date.now() - 5 * DAY))).toMatchObject({ valid: false, reason: 'not-yet-valid' });
    expect(trust.verify(chainOf(client['good']!), new Date(Date.now() + 20 * DAY))).toMatchObject({ valid: false, reason: 'expired' });
  });

  it('does not accept a leaf certificate as an issuer', async () => {
    // A client certificate signed with another client certificate's key: not a CA, so no path.
    const forged = await issue(client['good']!, { cn: 'eve', usage: 'client' });
    expect(await verifyClientCertificate(chainOf(forged, client['good']!), [caA.certPem])).toMatchObject({ valid: false, reason: 'untrusted' });
  });
});
