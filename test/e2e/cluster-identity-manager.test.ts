/**
 * The identity manager with `svc run --workers 2` (a real child process, real node:cluster
 * workers): it runs in the primary only, where the memory store is held (one "took the lease" log
 * line, none from a worker), and a group removed at the provider is refused by both workers after
 * the next directory refresh, without signing the user out.
 */
import { request } from 'node:http';
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

describe('identity manager across svc run --workers 2', () => {
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
        idp_refresh_directory_interval: '1s',
        routes: [{ from: `https://app.localhost:${port}`, to: up.url, policy: 'allow if groups has "staff"' }],
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

  it('runs once, in the primary, and a group removed at the provider is refused by every worker', async () => {
    const b = new HttpBrowser((url) => (url.hostname.endsWith('.localhost') ? { port } : url.port === String(idp.port) ? { port: idp.port } : undefined));
    const hops: Hop[] = await b.signIn(`http://app.localhost:${port}/`, 'alice@example.com');
    expect(hops[hops.length - 1]!.status).toBe(200);
    const cookie = `_svc=${b.cookies('app.localhost')['_svc']}`;
    idp.updateUser('alice', { groups: ['admins'] });
    const deadline = Date.now() + 30_000;
    const seen = new Map<string, number>();
    // Until both workers have answered 403 (a worker that still says 200 has not seen the change yet).
    while ([...seen.values()].filter((s) => s === 403).length < 2) {
      if (Date.now() > deadline) throw new Error(`workers still answer ${JSON.stringify([...seen])}`);
      const r = await get(port, `app.localhost:${port}`, cookie);
      expect([200, 403]).toContain(r.status); // never signed out (302)
      seen.set(r.worker, r.status);
      await new Promise((res) => setTimeout(res, 50));
    }
    expect(seen.size).toBe(2);
    expect([...svc!.stdout().matchAll(/"msg":"identity manager: took the lease/g)]).toHaveLength(1);
    expect(idp.requests['/me'] ?? 0).toBeGreaterThanOrEqual(1);
  }, 60_000);
});
