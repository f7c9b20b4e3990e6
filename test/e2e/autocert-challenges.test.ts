/**
 * Autocert challenges end to end against a real ACME CA (pebble) whose TLS-ALPN-01 validation
 * connects to a port where nothing listens, as when the CA cannot reach svc's HTTPS port:
 * - with `http_redirect_addr` on the port pebble validates HTTP-01 on, svc falls back to HTTP-01,
 *   obtains and serves the certificate, and the redirect listener answers only pending tokens
 *   (404 for others) while it keeps redirecting everything else;
 * - without it, the failed challenge is logged once at error level with the name and the CA's
 *   problem (type and detail), retried with back-off, and the self-signed fallback keeps serving.
 */
import { request as httpRequest } from 'node:http';
import { request } from 'node:https';
import { mkdtempSync, rmSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { stringify } from 'yaml';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { run, type Running } from '../../runtime/process/run.ts';
import { autocertConfig, freePort, startPebble, type Pebble } from '../support/pebble.ts';
import { describeWithCommands } from '../support/system.ts';
import { configDir, echo, startUpstream, type Upstream } from './support.ts';

interface Answer {
  readonly status: number;
  readonly body: string;
  readonly pem: string;
}

/** GET https://<servername>:<port>/ on loopback; `ca` undefined: the certificate is not verified. */
function getTls(port: number, servername: string, ca: string | undefined): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/', servername, headers: { host: servername }, agent: false, ...(ca ? { ca } : { rejectUnauthorized: false }) }, (res) => {
      let body = '';
      const cert = (res.socket as TLSSocket).getPeerCertificate();
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, pem: `-----BEGIN CERTIFICATE-----\n${cert.raw.toString('base64')}\n-----END CERTIFICATE-----\n` }));
    });
    req.on('error', reject);
    req.end();
  });
}

function getPlain(port: number, host: string, path: string, method = 'GET'): Promise<{ status: number; body: string; location: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method, headers: { host }, agent: false }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, location: res.headers.location }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function until(what: string, f: () => boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!f()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describeWithCommands(['pebble', 'pebble-challtestsrv'], 'autocert challenges with pebble (TLS-ALPN-01 unreachable)', () => {
  let pebble: Pebble;
  /** Where pebble validates HTTP-01; svc's http_redirect_addr in the HTTP-01 test. */
  let httpPort: number;
  let up: Upstream;
  let root: string;
  const cfg = configDir();
  const dirs: string[] = [];

  const start = async (
    extra: Record<string, unknown>,
    logs: Record<string, unknown>[],
    renewalTime?: (notBefore: number, notAfter: number) => number,
    d = mkdtempSync(join(tmpdir(), 'svc-autocert-challenges-')),
  ): Promise<{ svc: Running; port: number; dir: string }> => {
    dirs.push(d);
    const port = await freePort();
    cfg.writeRaw(stringify(autocertConfig(pebble, port, join(d, 'autocert'), up.url, extra)));
    const svc = await run({
      configPath: cfg.path,
      watch: false,
      grpcListen: { host: '127.0.0.1', port: 0 },
      log: (e) => logs.push(e),
      autocertTiming: { pollMs: 200, backoff: { minMs: 300, maxMs: 1_000 }, ...(renewalTime ? { renewalTime } : {}) },
    });
    return { svc, port, dir: d };
  };

  beforeAll(async () => {
    httpPort = await freePort();
    // Nothing listens on the TLS-ALPN-01 port: svc's HTTPS listeners are on other ports.
    pebble = await startPebble({ tlsPort: await freePort(), httpPort });
    root = await pebble.root();
    up = await startUpstream(echo);
  }, 30_000);
  afterAll(async () => {
    await up?.close();
    await pebble?.close();
    cfg.remove();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('obtains and serves the certificate through HTTP-01 on http_redirect_addr when TLS-ALPN-01 cannot be validated', async () => {
    const logs: Record<string, unknown>[] = [];
    let renewNow = false;
    const { svc, port, dir } = await start({ http_redirect_addr: `127.0.0.1:${httpPort}` }, logs, (notBefore, notAfter) => (renewNow ? notBefore : notAfter));
    let restarted: Running | undefined;
    try {
      const first = await svc.autocert!.whenIssued('app.test');
      // Served with the CA-issued certificate: the chain verifies against pebble's root.
      const app = await getTls(port, 'app.test', root);
      expect(app.status).toBe(200);
      expect(JSON.parse(app.body).url).toBe('/');
      expect(new X509Certificate(app.pem).issuer).not.toMatch(/svc self-signed/);
      // The CA validated HTTP-01 (TLS-ALPN-01 failed first: nothing listens where pebble checks it).
      const obtained = logs.find((l) => l['msg'] === 'autocert: certificate obtained' && l['name'] === 'app.test');
      expect(obtained).toMatchObject({ challenge: 'http-01' });
      expect(obtained!['failedChallenges']).toEqual([{ challenge: 'tls-alpn-01', type: expect.stringMatching(/^urn:ietf:params:acme:error:/), detail: expect.any(String) }]);
      expect(pebble.output()).toContain(`Attempting to validate w/ HTTP: http://app.test:${httpPort}/.well-known/acme-challenge/`);
      // No error line: the name was obtained.
      expect(logs.filter((l) => l['msg'] === 'autocert: cannot obtain a certificate' && l['level'] === 'error')).toEqual([]);

      // The redirect listener answers a pending token with its key authorization, and only it.
      svc.autocert!.challenges.putHttp01('test-token_1', 'test-token_1.thumbprint');
      const answered = await getPlain(httpPort, 'app.test', '/.well-known/acme-challenge/test-token_1');
      expect(answered).toMatchObject({ status: 200, body: 'test-token_1.thumbprint' });
      svc.autocert!.challenges.removeHttp01('test-token_1');
      expect((await getPlain(httpPort, 'app.test', '/.well-known/acme-challenge/test-token_1')).status).toBe(404);
      expect((await getPlain(httpPort, 'app.test', '/.well-known/acme-challenge/unknown')).status).toBe(404);
      expect((await getPlain(httpPort, 'app.test', '/.well-known/acme-challenge/..%2F..%2Faccount.key')).status).toBe(404);
      // Everything else is redirected to https as before.
      expect(await getPlain(httpPort, 'app.test', '/some/page?q=1')).toMatchObject({ status: 308, location: `https://app.test:${port}/some/page?q=1` });
      expect(await getPlain(httpPort, 'app.test', '/.well-known/acme-challenge/test-token_1', 'POST')).toMatchObject({ status: 308 });

      // The renewal goes straight to the challenge that worked: no failed TLS-ALPN-01 first.
      renewNow = true;
      await svc.autocert!.whenIssued('app.test', first);
      renewNow = false;
      const renewed = logs.filter((l) => l['msg'] === 'autocert: certificate obtained' && l['name'] === 'app.test');
      expect(renewed).toHaveLength(2);
      expect(renewed[1]).toMatchObject({ challenge: 'http-01' });
      expect(renewed[1]!['failedChallenges']).toBeUndefined();

      // After a restart on the same directory too: the preference is kept there, not in memory.
      await svc.close();
      const after: Record<string, unknown>[] = [];
      restarted = (await start({ http_redirect_addr: `127.0.0.1:${httpPort}` }, after, (notBefore) => notBefore, dir)).svc;
      await until('a renewal after the restart', () => after.some((l) => l['msg'] === 'autocert: certificate obtained' && l['name'] === 'app.test'));
      const again = after.find((l) => l['msg'] === 'autocert: certificate obtained' && l['name'] === 'app.test');
      expect(again).toMatchObject({ challenge: 'http-01' });
      expect(again!['failedChallenges']).toBeUndefined();
    } finally {
      await svc.close();
      await restarted?.close();
    }
  }, 60_000);

  it('logs a failed challenge once with the name and the CA problem, retries with back-off, and keeps serving self-signed', async () => {
    const logs: Record<string, unknown>[] = [];
    const { svc, port } = await start({}, logs);
    try {
      const failed = () => logs.filter((l) => l['msg'] === 'autocert: cannot obtain a certificate' && l['name'] === 'app.test');
      // At least three attempts: the first logged at error level, the repeats at debug level.
      await until('three failed attempts', () => failed().length >= 3);
      const errors = failed().filter((l) => l['level'] === 'error');
      expect(errors).toHaveLength(1);
      const line = errors[0]!;
      expect(line).toMatchObject({ name: 'app.test', kind: 'challenge-failed', serving: 'a self-signed certificate' });
      expect(line['problems']).toEqual([{ challenge: 'tls-alpn-01', type: expect.stringMatching(/^urn:ietf:params:acme:error:(connection|tls|unauthorized)$/), detail: expect.any(String) }]);
      const problem = (line['problems'] as { detail: string }[])[0]!;
      expect(String(line['reason'])).toContain(problem.detail);
      expect(String(line['help'])).toMatch(/TLS-ALPN-01/);
      expect(failed().slice(1).every((l) => l['level'] === 'debug')).toBe(true);
      // Back-off: the waits grow (300 ms, 600 ms, then the 1 s cap).
      const waits = failed().map((l) => l['retryInMs'] as number);
      expect(waits.slice(0, 3)).toEqual([300, 600, 1_000]);
      // svc keeps serving, with the self-signed fallback for the name.
      const app = await getTls(port, 'app.test', undefined);
      expect(app.status).toBe(200);
      expect(new X509Certificate(app.pem).issuer).toMatch(/svc self-signed/);
      expect(svc.autocert!.get('app.test')).toBeUndefined();
    } finally {
      await svc.close();
    }
  }, 60_000);

  it('with http_redirect_addr where the CA cannot reach it either: one error line with both problems, in the order tried', async () => {
    const logs: Record<string, unknown>[] = [];
    // The redirect listener is not on the port pebble validates HTTP-01 on.
    const { svc, port } = await start({ http_redirect_addr: `127.0.0.1:${await freePort()}` }, logs);
    try {
      const failed = () => logs.filter((l) => l['msg'] === 'autocert: cannot obtain a certificate' && l['name'] === 'auth.test');
      await until('two failed attempts', () => failed().length >= 2);
      const errors = failed().filter((l) => l['level'] === 'error');
      expect(errors).toHaveLength(1);
      const problems = errors[0]!['problems'] as { challenge: string; type: string; detail: string }[];
      expect(problems.map((p) => p.challenge)).toEqual(['tls-alpn-01', 'http-01']);
      for (const p of problems) {
        expect(p.type).toMatch(/^urn:ietf:params:acme:error:/);
        expect(String(errors[0]!['reason'])).toContain(`${p.challenge}: ${p.detail}`);
      }
      // Each order has a new token, which pebble's HTTP-01 detail names: still the same reason.
      expect(failed()[1]!['reason']).not.toBe(failed()[0]!['reason']);
      expect(failed()[1]!['level']).toBe('debug');
      const served = await getTls(port, 'auth.test', undefined);
      expect(served.status).toBeGreaterThan(0);
      expect(new X509Certificate(served.pem).issuer).toMatch(/svc self-signed/);
    } finally {
      await svc.close();
    }
  }, 60_000);
});
