/**
 * Scale-out: two `svc run` processes on different loopback addresses (127.0.0.1 and
 * 127.0.0.2, the same port) share one redis-server and a real OIDC provider. A session made on one
 * is used on the other; a sign-out on the other is refused by the first within a second; both
 * restart and the session lives on; Redis killed → 503 on protected routes and forward-auth, 200 on
 * public ones, the session kept → Redis back → the same session works again.
 */
import { stringify } from 'yaml';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { DevIdp } from '../../demo/dev-idp.ts';
import { BASE_SETTINGS } from '../support/compile-text.ts';
import { HttpBrowser } from '../support/http-browser.ts';
import { cli, startRedis, type RedisProcess } from '../support/redis-server.ts';
import { describeWithCommands } from '../support/system.ts';
import { freePort, startLocalhostIdp } from './auth-support.ts';
import { startSvcWithEnv, type EnvSvc } from './svc-process.ts';
import { configDir, echo, getAt, startUpstream, type Upstream } from './support.ts';

const PASSWORD = 'test-only-redis-password';
const ADDRESSES = ['127.0.0.1', '127.0.0.2'] as const;

async function until(check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}

describeWithCommands(['redis-server', 'redis-cli'], 'two svc instances sharing one Redis', () => {
  let idp: DevIdp;
  let up: Upstream;
  let redis: RedisProcess;
  let port = 0;
  const instances: (EnvSvc | undefined)[] = [undefined, undefined];
  const cfg = configDir();

  const start = async (i: 0 | 1): Promise<void> => {
    instances[i] = await startSvcWithEnv(cfg.path, ['--workers', '1'], { ADDRESS: `${ADDRESSES[i]}:${port}` });
  };
  const stop = async (i: 0 | 1): Promise<void> => instances[i]?.stop();
  /** What each instance wrote so far. */
  const outs = () => instances.map((instance) => instance?.out() ?? '');

  beforeAll(async () => {
    port = await freePort();
    redis = await startRedis({ password: PASSWORD });
    const origin = (name: string) => `http://${name}.localhost:${port}`;
    idp = await startLocalhostIdp(port);
    up = await startUpstream(echo);
    cfg.writeRaw(
      stringify({
        ...BASE_SETTINGS,
        cookie_secure: false,
        authenticate_service_url: origin('authenticate'),
        signout_redirect_url: `${origin('app')}/`,
        forward_auth_url: origin('fwd'),
        idp_provider_url: idp.issuer,
        idp_client_id: 'c',
        idp_client_secret: 's',
        databroker_storage_type: 'redis',
        databroker_storage_connection_string: `redis://:${PASSWORD}@127.0.0.1:${redis.port}/4`,
        routes: [
          { from: `https://app.localhost:${port}`, to: up.url, policy: 'allow if domain is "example.com"' },
          { from: `https://public.localhost:${port}`, to: up.url, allow_public_unauthenticated_access: true },
        ],
      }),
    );
    await Promise.all([start(0), start(1)]);
  }, 90_000);

  afterAll(async () => {
    await Promise.all([stop(0), stop(1)]);
    await up?.close();
    await idp?.close();
    await redis?.stop();
    cfg.remove();
  });

  it('one session for both instances, revoked on both at once, kept across restarts and a Redis outage', async () => {
    // The browser signs in through instance 0 only.
    let via = 0;
    const browser = new HttpBrowser((url) => (url.hostname.endsWith('.localhost') ? { port, address: ADDRESSES[via]! } : url.port === String(idp.port) ? { port: idp.port } : undefined));
    const hops = await browser.signIn(`http://app.localhost:${port}/`, 'alice@example.com');
    expect(hops[hops.length - 1]!.status).toBe(200);
    const cookie = `_svc=${browser.cookies('app.localhost')['_svc']}`;
    const host = `app.localhost:${port}`;
    for (const a of ADDRESSES) expect((await getAt(a, port, host, cookie)).status).toBe(200);

    // Both restart: the session lives in Redis, not in either process. (Their caches are empty now.)
    await Promise.all([stop(0), stop(1)]);
    await Promise.all([start(0), start(1)]);

    // Redis dies (its data saved first, so the same server comes back with it): requests that need
    // the session answer 503, not a sign-in redirect, and the cookie is kept; public routes serve.
    cli(redis.port, ['SAVE'], PASSWORD);
    await redis.kill();
    for (const a of ADDRESSES) {
      const r = await getAt(a, port, host, cookie);
      expect(r.status).toBe(503);
      expect(r.body).toContain('session-store-unavailable');
      expect(r.headers['retry-after']).toBe('5');
      expect(r.headers['set-cookie']).toBeUndefined();
      expect((await getAt(a, port, `public.localhost:${port}`, '')).status).toBe(200);
      expect((await getAt(a, port, host, cookie)).status).toBe(503);
      // A reverse proxy asking svc's forward-auth about this user gets 503 too, not 401 or 403.
      expect((await getAt(a, port, `fwd.localhost:${port}`, cookie, `/verify?uri=${encodeURIComponent(`http://app.localhost:${port}/`)}`)).status).toBe(503);
    }
    // The outage is logged once per process, whatever the number of requests; never the password.
    await until(async () => outs().every((l) => /session store \(redis\) unreachable/.test(l)), 10_000);
    for (const l of outs()) expect(l.match(/session store \(redis\) unreachable/g)).toHaveLength(1);
    for (const l of outs()) expect(l).not.toContain(PASSWORD);

    // Redis returns and svc heals without a restart: the same session works again on both.
    await redis.restart();
    for (const a of ADDRESSES) await until(async () => (await getAt(a, port, host, cookie)).status === 200, 20_000);
    // (The primary logs it; its stdout may arrive a little after the worker's answer.)
    await until(async () => outs().every((l) => /session store \(redis\) reachable again/.test(l)), 10_000);
    for (const l of outs()) expect(l.match(/session store \(redis\) reachable again/g)).toHaveLength(1);

    // Signed out on instance 1; instance 0, which has the session cached, refuses it within a
    // second (the change reaches it through Redis pub/sub; the cache alone would keep it 30 s).
    via = 1;
    const confirm = await browser.request(`http://app.localhost:${port}/.svc/signout/`);
    expect(confirm.status).toBe(200);
    const out = await browser.submitForm(confirm);
    expect(out[0]!.status).toBe(302);
    await until(async () => (await getAt(ADDRESSES[0], port, host, cookie)).status === 302, 5_000);
    expect((await getAt(ADDRESSES[1], port, host, cookie)).status).toBe(302);
  }, 120_000);
});
