/**
 * Sessions with `svc run --workers 2` (a real child process, real node:cluster workers): the one
 * memory data broker lives in the primary, so a sign-in completed on one worker is valid on the
 * other, a hand-off is single use across workers, and a sign-out on one worker revokes the session
 * in every worker's cache at once (docs/security.md S30).
 */
import { createPublicKey } from 'node:crypto';
import { request } from 'node:http';
import { decodeProtectedHeader, jwtVerify } from 'jose';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DevIdp } from '../../demo/dev-idp.ts';
import { BASE_SETTINGS } from '../support/compile-text.ts';
import { HttpBrowser, type Hop } from '../support/http-browser.ts';
import { freePort, localhostSignInSettings, startLocalhostIdp } from './auth-support.ts';
import { startSvcProcess, type SvcProcess } from './svc-process.ts';
import { configDir, echo, startUpstream, type Upstream } from './support.ts';

/** One request on a new connection (so the cluster may give it to either worker). */
function get(port: number, host: string, cookie: string): Promise<{ status: number; worker: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/', agent: false, headers: { host, cookie, accept: 'text/html' } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, worker: String(res.headers['x-svc-worker']) }));
    });
    req.setTimeout(5000, () => req.destroy(new Error('no answer in 5 s')));
    req.on('error', reject);
    req.end();
  });
}

/** The identity assertion the upstream received for one request, and the worker that sent it. */
function assertion(port: number, host: string, cookie: string): Promise<{ worker: string; jwt: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/', agent: false, headers: { host, cookie } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ worker: String(res.headers['x-svc-worker']), jwt: String((JSON.parse(body) as { headers: Record<string, string> }).headers['x-svc-jwt-assertion']) }));
    });
    req.setTimeout(5000, () => req.destroy(new Error('no answer in 5 s')));
    req.on('error', reject);
    req.end();
  });
}

/** Requests until both workers have answered (or 40 tries); returns each worker's statuses. */
async function acrossWorkers(port: number, host: string, cookie: string): Promise<Map<string, number[]>> {
  const seen = new Map<string, number[]>();
  for (let i = 0; i < 40 && (seen.size < 2 || i < 8); i++) {
    const r = await get(port, host, cookie);
    seen.set(r.worker, [...(seen.get(r.worker) ?? []), r.status]);
  }
  return seen;
}

describe('sessions across svc run --workers 2', () => {
  let idp: DevIdp;
  let up: Upstream;
  let svc: SvcProcess | undefined;
  let port = 0;
  const cfg = configDir();

  beforeAll(async () => {
    port = await freePort();
    idp = await startLocalhostIdp(port);
    up = await startUpstream(echo);
    cfg.writeRaw(
      stringify({
        ...BASE_SETTINGS,
        address: `127.0.0.1:${port}`,
        ...localhostSignInSettings(port, idp),
        routes: [{ from: `https://app.localhost:${port}`, to: up.url, policy: 'allow if domain is "example.com"', pass_identity_headers: true }],
      }),
    );
    svc = await startSvcProcess(cfg.path, { workers: 2, args: ['--expose-checksum'] });
  }, 60_000);

  afterAll(async () => {
    await svc?.stop();
    await up?.close();
    await idp?.close();
    cfg.remove();
  });

  it('a session made on one worker is honoured by both, and a sign-out revokes it in both', async () => {
    const b = new HttpBrowser((url) => (url.hostname.endsWith('.localhost') ? { port } : url.port === String(idp.port) ? { port: idp.port } : undefined));
    const hops: Hop[] = await b.signIn(`http://app.localhost:${port}/`, 'alice@example.com');
    expect(hops[hops.length - 1]!.status).toBe(200);
    const cookie = `_svc=${b.cookies('app.localhost')['_svc']}`;

    const before = await acrossWorkers(port, `app.localhost:${port}`, cookie);
    expect(before.size).toBe(2);
    for (const statuses of before.values()) expect(new Set(statuses)).toEqual(new Set([200]));

    // Without signing_key, svc has one ephemeral key (docs/authentication.md "Identity for upstreams"), logged once: both workers
    // sign the upstream's identity assertions with it.
    const logged = [...svc!.stdout().matchAll(/"msg":"no signing_key: signing identity assertions with an ephemeral key"[^\n]*"publicKey":"([^"]+)"/g)].map((m) => m[1]!);
    expect(logged).toHaveLength(1);
    const key = createPublicKey({ key: Buffer.from(logged[0]!, 'base64'), format: 'der', type: 'spki' });
    const signed = new Map<string, string>();
    for (let i = 0; i < 40 && signed.size < 2; i++) {
      const a = await assertion(port, `app.localhost:${port}`, cookie);
      signed.set(a.worker, a.jwt);
    }
    expect(signed.size).toBe(2);
    for (const jwt of signed.values()) {
      await expect(jwtVerify(jwt, key)).resolves.toBeDefined();
    }
    expect(new Set([...signed.values()].map((jwt) => decodeProtectedHeader(jwt).kid)).size).toBe(1);

    // A hand-off is single use across workers too.
    const handoff = hops.find((h) => h.url.includes('/.svc/callback?'))!;
    for (let i = 0; i < 4; i++) expect((await new HttpBrowser(() => ({ port })).request(handoff.url)).status).toBe(400);

    const confirm = await b.request(`http://app.localhost:${port}/.svc/signout/`);
    expect(confirm.status).toBe(200);
    const out = await b.submitForm(confirm);
    expect(out[0]!.status).toBe(302);

    const after = await acrossWorkers(port, `app.localhost:${port}`, cookie);
    expect(after.size).toBe(2);
    for (const statuses of after.values()) expect(new Set(statuses)).toEqual(new Set([302]));
  }, 60_000);
});
