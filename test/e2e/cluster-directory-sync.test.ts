/**
 * Groups from the directory with `svc run --workers 2` (a real child process, real node:cluster
 * workers; docs/authentication.md "Groups from the directory"): the primary, which holds the store,
 * reads a loopback HTTPS fake of Okta's Groups API (trusted through NODE_EXTRA_CA_CERTS, as an
 * operator trusts a private CA); a sign-in on either worker gets the directory's groups from the
 * primary's store, and a group removed at the directory is refused by both workers after a sync,
 * without signing the user out.
 */
import { request } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DevIdp } from '../../demo/dev-idp.ts';
import { BASE_SETTINGS } from '../support/compile-text.ts';
import { HttpBrowser, type Hop } from '../support/http-browser.ts';
import { FakeDirectory } from '../runtime/sessions/directory/fake-directory.ts';
import { freePort, localhostSignInSettings, startLocalhostIdp } from './auth-support.ts';
import { startSvcProcess, type SvcProcess } from './svc-process.ts';
import { configDir, echo, startUpstream, type Upstream, until } from './support.ts';

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


describe('groups from the directory across svc run --workers 2', () => {
  let idp: DevIdp;
  let up: Upstream;
  let fake: FakeDirectory;
  let svc: SvcProcess | undefined;
  let port = 0;
  const cfg = configDir();
  const caDir = mkdtempSync(join(tmpdir(), 'svc-directory-ca-'));
  const extraCa = process.env['NODE_EXTRA_CA_CERTS'];

  beforeAll(async () => {
    port = await freePort();
    idp = await startLocalhostIdp(port);
    up = await startUpstream(echo);
    fake = await FakeDirectory.start({ groups: [{ id: '00g-sre', name: 'sre' }], members: { '00g-sre': ['alice'] }, users: { alice: {}, bob: {} } });
    writeFileSync(join(caDir, 'ca.pem'), fake.ca);
    cfg.writeRaw(
      stringify({
        ...BASE_SETTINGS,
        address: `127.0.0.1:${port}`,
        ...localhostSignInSettings(port, idp),
        idp_provider: 'okta',
        idp_scopes: ['openid', 'profile', 'email', 'offline_access'],
        idp_service_account: fake.account('okta'),
        idp_refresh_directory_interval: '1s',
        routes: [{ from: `https://app.localhost:${port}`, to: up.url, policy: 'allow if groups has "sre"' }],
      }),
    );
    // The child inherits this process's environment.
    process.env['NODE_EXTRA_CA_CERTS'] = join(caDir, 'ca.pem');
    try {
      svc = await startSvcProcess(cfg.path, { workers: 2, args: ['--expose-checksum'] });
    } finally {
      if (extraCa === undefined) delete process.env['NODE_EXTRA_CA_CERTS'];
      else process.env['NODE_EXTRA_CA_CERTS'] = extraCa;
    }
  }, 60_000);

  afterAll(async () => {
    await svc?.stop();
    await up?.close();
    await idp?.close();
    await fake?.close();
    cfg.remove();
    rmSync(caDir, { recursive: true, force: true });
  });

  it('a sign-in on a worker gets the directory groups; a group removed at the directory is refused by every worker', async () => {
    await until('the primary read the directory', () => /"msg":"identity manager: directory read"/.test(svc!.stdout()), 30_000);
    const b = new HttpBrowser((url) => (url.hostname.endsWith('.localhost') ? { port } : url.port === String(idp.port) ? { port: idp.port } : undefined));
    const hops: Hop[] = await b.signIn(`http://app.localhost:${port}/`, 'alice@example.com');
    expect(hops[hops.length - 1]!.status).toBe(200);
    const cookie = `_svc=${b.cookies('app.localhost')['_svc']}`;
    fake.model.members['00g-sre'] = [];
    const deadline = Date.now() + 30_000;
    const seen = new Map<string, number>();
    while ([...seen.values()].filter((s) => s === 403).length < 2) {
      if (Date.now() > deadline) throw new Error(`workers still answer ${JSON.stringify([...seen])}`);
      const r = await get(port, `app.localhost:${port}`, cookie);
      expect([200, 403]).toContain(r.status); // never signed out (302)
      seen.set(r.worker, r.status);
      await new Promise((res) => setTimeout(res, 50));
    }
    expect(seen.size).toBe(2);
    expect([...svc!.stdout().matchAll(/"msg":"identity manager: took the lease/g)]).toHaveLength(1);
    expect(fake.requests.filter((r) => r.path === '/api/v1/groups').length).toBeGreaterThanOrEqual(2);
  }, 60_000);
});
