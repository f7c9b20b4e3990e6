/**
 * The session-store outage grace (docs/scale-out.md "Failure behaviour", runtime/sessions/outage-grace.ts)
 * with a real redis-server and a real OIDC provider: two `svc run` processes share one Redis, A with
 * `--store-outage-grace 6` (one process), B with `--store-outage-grace 0` (two workers). Redis is
 * killed (its data saved first, so it comes back with the sessions). The provider's access tokens
 * live 10 s, so a cache entry stops being fresh at the token's expiry (before the cache's own 30 s)
 * and the outage is waited out in seconds on the same code paths; the steps before the outage take
 * about 2 s, well inside the tokens' lifetime, so no session is refreshed before Redis dies.
 * - A keeps serving alice past her cache entry (counted in `svc_sessions_served_stale_total`, the
 *   first logged once as a warning), then answers 503 once the grace is over, and never 200 again
 *   until Redis is back;
 * - B (grace 0) answers 503 once its cache entries expire, as svc did before the grace, and counts nothing;
 * - a session signed out on B before the outage is not served by A, and one signed out on A during
 *   the outage (503: the store cannot record it) is not served by A afterwards;
 * - a new sign-in answers 503 with Retry-After at svc's sign-in endpoint, before any redirect to
 *   the provider, on A and on B's workers;
 * - Redis back: the sessions work again on both and a new sign-in completes.
 */
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../cli/main.ts';
import type { DevIdp } from '../../demo/dev-idp.ts';
import { BASE_SETTINGS } from '../support/compile-text.ts';
import { HttpBrowser, type Hop } from '../support/http-browser.ts';
import { cli, startRedis, type RedisProcess } from '../support/redis-server.ts';
import { describeWithCommands } from '../support/system.ts';
import { freePort, localhostSignInSettings, startLocalhostIdp } from './auth-support.ts';
import { sample, scrape } from './metrics-support.ts';
import { startSvcWithEnv, type EnvSvc } from './svc-process.ts';
import { configDir, echo, getAt, startUpstream, until, type Upstream } from './support.ts';

/** TEST ONLY password. */
const PASSWORD = 'test-only-redis-grace-password';
const GRACE_SECONDS = 6;
/** The provider's access token lifetime: how long a session stays fresh in svc's cache. */
const TOKEN_TTL_SECONDS = 10;
/** A and B: same port, different loopback addresses (Linux routes all of 127.0.0.0/8 to lo). */
const ADDRESSES = ['127.0.0.1', '127.0.0.2'] as const;
const STALE = 'svc_sessions_served_stale_total';
const GRACE_WARNING = 'session store unreachable: serving sessions this process verified recently from the outage grace';

describe('svc run --store-outage-grace', () => {
  it('refuses a value that is not a number of seconds from 0 to 600', async () => {
    for (const bad of ['soon', '-1', '601', '']) {
      let err = '';
      const code = await main(['run', 'no-such-config.yaml', '--store-outage-grace', bad], { out: () => undefined, err: (t) => (err += t) });
      expect(code).toBe(2);
      expect(err).toContain(`--store-outage-grace \`${bad}\` is not a number of seconds (0-600)`);
    }
  });
});

describeWithCommands(['redis-server', 'redis-cli'], 'the session-store outage grace with a real Redis', () => {
  let idp: DevIdp;
  let up: Upstream;
  let redis: RedisProcess;
  let port = 0;
  const metricsPorts = [0, 0];
  const instances: (EnvSvc | undefined)[] = [undefined, undefined];
  const cfg = configDir();
  const host = () => `app.localhost:${port}`;
  /** Instance i's count of requests served from the grace (its primary aggregates its workers'). */
  const stale = async (i: 0 | 1) => sample((await scrape(metricsPorts[i]!)).body, STALE) ?? Number.NaN;
  /** A browser whose `*.localhost` requests go to instance `via()`, and the provider's to the provider. */
  const browserVia = (via: () => 0 | 1) => new HttpBrowser((url) => (url.hostname.endsWith('.localhost') ? { port, address: ADDRESSES[via()]! } : url.port === String(idp.port) ? { port: idp.port } : undefined));
  const signedIn = async (b: HttpBrowser): Promise<string> => {
    const hops = await b.signIn(`http://${host()}/`, 'alice@example.com');
    expect(hops[hops.length - 1]!.status).toBe(200);
    return `_svc=${b.cookies('app.localhost')['_svc']}`;
  };

  const start = async (i: 0 | 1, args: readonly string[]): Promise<void> => {
    instances[i] = await startSvcWithEnv(cfg.path, args, { ADDRESS: `${ADDRESSES[i]}:${port}`, METRICS_ADDRESS: `127.0.0.1:${metricsPorts[i]}` });
  };
  const stop = async (i: 0 | 1): Promise<void> => instances[i]?.stop();
  /** svc's JSON lines with this message. */
  const lines = (i: 0 | 1, msg: string) =>
    instances[i]!
      .out()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l['msg'] === msg);

  beforeAll(async () => {
    [port, metricsPorts[0], metricsPorts[1]] = [await freePort(), await freePort(), await freePort()];
    [redis, idp, up] = await Promise.all([startRedis({ password: PASSWORD }), startLocalhostIdp(port, port, { accessTokenTtlSeconds: TOKEN_TTL_SECONDS }), startUpstream(echo)]);
    cfg.writeRaw(
      stringify({
        ...BASE_SETTINGS,
        ...localhostSignInSettings(port, idp),
        databroker_storage_type: 'redis',
        databroker_storage_connection_string: `redis://:${PASSWORD}@127.0.0.1:${redis.port}/6`,
        routes: [{ from: `https://app.localhost:${port}`, to: up.url, policy: 'allow if domain is "example.com"' }],
      }),
    );
    await Promise.all([start(0, ['--workers', '1', '--store-outage-grace', String(GRACE_SECONDS)]), start(1, ['--workers', '2', '--store-outage-grace', '0'])]);
  }, 90_000);

  afterAll(async () => {
    await Promise.all([stop(0), stop(1)]);
    await up?.close();
    await idp?.close();
    await redis?.stop();
    cfg.remove();
  });

  it('serves verified sessions for the grace, then 503; never a revoked one; no sign-in into the dead store; all well once Redis is back', async () => {
    // Three sessions of alice's, each signed in through A, each cached by A (and used on B).
    let bobVia: 0 | 1 = 0;
    const alice = await signedIn(browserVia(() => 0));
    const bobBrowser = browserVia(() => bobVia);
    const bob = await signedIn(bobBrowser);
    const carolBrowser = browserVia(() => 0);
    const carol = await signedIn(carolBrowser);
    for (const c of [alice, bob, carol]) for (const a of ADDRESSES) expect((await getAt(a, port, host(), c)).status).toBe(200);

    // Bob signs out on B before the outage: A, which has his session cached, drops it (pub/sub).
    bobVia = 1;
    const confirm = await bobBrowser.request(`http://${host()}/.svc/signout/`);
    expect(confirm.status).toBe(200);
    expect((await bobBrowser.submitForm(confirm))[0]!.status).toBe(302);
    await until('A refuses the signed-out session', async () => (await getAt(ADDRESSES[0], port, host(), bob)).status === 302, 5_000);
    expect(await stale(0)).toBe(0);

    // Redis dies, its data saved first (the same server comes back with the sessions).
    cli(redis.port, ['SAVE'], PASSWORD);
    await redis.kill();
    await until('A logs the outage', async () => lines(0, 'session store (redis) unreachable').length === 1, 10_000);

    // A new sign-in stops at svc's own sign-in endpoint with 503 and Retry-After: never sent to the provider.
    for (const via of [0, 1] as const) {
      const fresh = browserVia(() => via);
      const hops: Hop[] = await fresh.navigate(`http://${host()}/`);
      const last = hops[hops.length - 1]!;
      expect(last.status, `instance ${via}`).toBe(503);
      expect(new URL(last.url).pathname).toBe('/.svc/sign_in');
      expect(last.headers['retry-after']).toBe('5');
      expect(last.body).toContain('session-store-unavailable');
      expect(hops.some((h) => new URL(h.url).port === String(idp.port))).toBe(false);
    }

    // A serves alice all along: from its cache, then (once the entry is stale) from the grace.
    await until(
      'A serves alice from the grace',
      async () => {
        expect((await getAt(ADDRESSES[0], port, host(), alice)).status).toBe(200);
        return (await stale(0)) > 0;
      },
      45_000,
    );
    // (Lines reach standard output within half a second: svc buffers them.)
    await until('A logs the grace in use', async () => lines(0, GRACE_WARNING).length > 0, 5_000);
    expect(lines(0, GRACE_WARNING)).toHaveLength(1);
    expect(lines(0, GRACE_WARNING)[0]).toMatchObject({ level: 'warn', graceMs: GRACE_SECONDS * 1000 });

    // Within the grace: bob's session, signed out before the outage, is not served.
    const bobNow = await getAt(ADDRESSES[0], port, host(), bob);
    expect(bobNow.status).toBe(503);
    expect(bobNow.body).toContain('session-store-unavailable');
    // Carol signs out on A during the outage: the store cannot record it (503), and A never serves her session again.
    expect((await getAt(ADDRESSES[0], port, host(), carol)).status).toBe(200);
    const carolConfirm = await carolBrowser.request(`http://${host()}/.svc/signout/`);
    expect(carolConfirm.status).toBe(200);
    expect((await carolBrowser.submitForm(carolConfirm))[0]!.status).toBe(503);
    expect((await getAt(ADDRESSES[0], port, host(), carol)).status).toBe(503);

    // The grace ends: 503, and never 200 again while Redis is away.
    await until('A answers 503 after the grace', async () => (await getAt(ADDRESSES[0], port, host(), alice)).status === 503, 30_000);
    const counted = await stale(0);
    for (let i = 0; i < 5; i++) expect((await getAt(ADDRESSES[0], port, host(), alice)).status).toBe(503);
    expect(await stale(0)).toBe(counted);
    expect(lines(0, GRACE_WARNING)).toHaveLength(1);

    // B, grace 0: 503 once its cache entries expired, as before the grace; nothing served stale.
    await until('B answers 503', async () => (await getAt(ADDRESSES[1], port, host(), alice)).status === 503, 40_000);
    expect(await stale(1)).toBe(0);
    expect(lines(1, GRACE_WARNING)).toHaveLength(0);

    // Redis returns: the sessions work again on both (carol's too: her sign-out was never recorded), a new sign-in completes.
    await redis.restart();
    for (const a of ADDRESSES) await until(`${a} serves alice again`, async () => (await getAt(a, port, host(), alice)).status === 200, 20_000);
    expect((await getAt(ADDRESSES[0], port, host(), carol)).status).toBe(200);
    expect((await getAt(ADDRESSES[0], port, host(), bob)).status).toBe(302);
    await until('A logs the end of the grace', async () => lines(0, 'session store answers again: sessions are verified again; the outage grace ends').length === 1, 10_000);
    for (const via of [0, 1] as const) await signedIn(browserVia(() => via));
    for (const instance of instances) expect(instance!.out()).not.toContain(PASSWORD);
  }, 150_000);
});
