/**
 * The identity manager end to end, in real time with short intervals: `svc run` with the real
 * OpenID provider (demo/dev-idp.ts on oidc-provider) and an echo upstream. A user removed from a
 * group at the provider loses access at the next directory refresh without signing out; a revoked
 * grant ends the session in the background; tokens are refreshed before they expire with no request;
 * a provider outage keeps sessions and is not hammered; of two svc instances sharing a store, one
 * refreshes, and the other takes over when it stops. No assertion on timings: conditions are waited
 * for with generous deadlines, and call counts have upper bounds a slower machine only lowers.
 */
import { until } from './support.ts';
import { describe, it, type TestContext } from 'vitest';
import { MemoryStore } from '../../runtime/databroker/memory-store.ts';
import { run, type IdentityManagerTuning, type Running } from '../../runtime/process/run.ts';
import type { Hop } from '../support/http-browser.ts';
import { startRedis } from '../support/redis-server.ts';
import { which } from '../support/system.ts';
import { startAuthWorld, type AuthWorld, type AuthWorldOptions } from './auth-support.ts';

const last = (hops: Hop[]): Hop => hops[hops.length - 1]!;

const FAST: IdentityManagerTuning = { scanIntervalMs: 100, leaseTtlMs: 1_000, backOff: { baseMs: 500, maxMs: 2_000 } };
const STAFF_ROUTE = { name: 'app', from: 'https://app.localhost:PORT', to: 'UPSTREAM', policy: 'allow if groups has "staff"' };

/**
 * Starts a world of its own for the test `t`, closed when that test ends (after what the test
 * registers later: `onTestFinished` runs in reverse order).
 */
async function world(t: TestContext, options: Partial<AuthWorldOptions> = {}): Promise<AuthWorld> {
  const w = await startAuthWorld({ routes: [STAFF_ROUTE], identityManager: FAST, ...options });
  t.onTestFinished(() => w.close());
  return w;
}

/** A second svc instance on `configPath`, closed when the test `t` ends (before the world it joins). */
async function second(t: TestContext, options: Parameters<typeof run>[0]): Promise<Running> {
  const r = await run(options);
  t.onTestFinished(() => r.close());
  return r;
}

// The tests run side by side, each with a provider and svc of its own: most of their time is
// waiting for the manager's timers (token lifetimes of seconds, a 4 s outage).
describe.concurrent('identity manager with svc run and the real provider', () => {
  it('a user removed from a group at the provider loses access at the next directory refresh, still signed in', async (t) => {
    const { expect } = t;
    const w = await world(t, { settings: { idp_refresh_directory_interval: '1s' } });
    const alice = w.browser();
    expect(last(await alice.signIn(`${w.origin('app')}/`, 'alice@example.com')).status).toBe(200);
    const userinfo = w.idp.requests['/me'] ?? 0;
    w.idp.updateUser('alice', { groups: ['admins'] });
    let status = 0;
    await until('alice is refused', async () => (status = (await alice.request(`${w.origin('app')}/`)).status) !== 200);
    // Refused by policy (403), not signed out (302): her session stands with her new groups.
    expect(status).toBe(403);
    expect((w.idp.requests['/me'] ?? 0) - userinfo).toBeGreaterThanOrEqual(1);
    const me = await alice.request(`${w.origin('app')}/.svc/`);
    expect(me.status).toBe(200);
    expect(me.body).toContain('admins');
    expect(me.body).not.toContain('staff');
    expect(w.svc.identityManager?.figures().userGroupRefreshSuccess).toBeGreaterThanOrEqual(1);
    // Back in the group: access again, without signing in.
    w.idp.updateUser('alice', { groups: ['admins', 'staff'] });
    await until('alice is allowed again', async () => (await alice.request(`${w.origin('app')}/`)).status === 200);
  });

  it('tokens are refreshed before they expire, in the background, with no request', async (t) => {
    const { expect } = t;
    const w = await world(t, { accessTokenTtlSeconds: 3, identityManager: { ...FAST, refreshMarginMs: 2_000 } });
    const alice = w.browser();
    expect(last(await alice.signIn(`${w.origin('app')}/`, 'alice@example.com')).status).toBe(200);
    const before = w.idp.tokenCalls['refresh_token'] ?? 0;
    await until('the provider saw a refresh', () => (w.idp.tokenCalls['refresh_token'] ?? 0) > before);
    // The provider answers before svc has read the answer and counted it: wait for the count too.
    await until('svc counted the refresh', () => (w.svc.identityManager?.figures().sessionRefreshSuccess ?? 0) >= 1);
    expect((await alice.request(`${w.origin('app')}/after`)).status).toBe(200);
  });

  it('a revoked grant ends the session in the background: the next request must sign in', async (t) => {
    const { expect } = t;
    const w = await world(t, { accessTokenTtlSeconds: 3, identityManager: { ...FAST, refreshMarginMs: 2_000 } });
    const alice = w.browser();
    expect(last(await alice.signIn(`${w.origin('app')}/`, 'alice@example.com')).status).toBe(200);
    await w.idp.revokeUser('alice');
    await until('the manager saw the refusal', () => (w.svc.identityManager?.figures().sessionRefreshError ?? 0) >= 1);
    expect((await alice.request(`${w.origin('app')}/after-revoke`)).status).toBe(302);
  });

  it('provider down: sessions are kept and served, the provider is not hammered, and refreshes resume after', async (t) => {
    const { expect } = t;
    const w = await world(t, { accessTokenTtlSeconds: 2, identityManager: { ...FAST, refreshMarginMs: 1_500 } });
    const alice = w.browser();
    expect(last(await alice.signIn(`${w.origin('app')}/`, 'alice@example.com')).status).toBe(200);
    w.idp.setOutage(503);
    const start = w.idp.requests['/token'] ?? 0;
    const startedAt = Date.now();
    // Scans every 100 ms for 4 s: about 40 chances to ask. Requests meanwhile take the same back-off.
    let served = 0;
    while (Date.now() - startedAt < 4_000) {
      if ((await alice.request(`${w.origin('app')}/during-outage`)).status === 200) served++;
      await new Promise((r) => setTimeout(r, 200));
    }
    const asked = (w.idp.requests['/token'] ?? 0) - start;
    expect(served).toBeGreaterThan(0);
    expect(asked).toBeGreaterThanOrEqual(1);
    // 0.5 s, 1 s, 2 s, 2 s… with jitter: at most 8 tries in 4 s (of about 40 scans and 20 requests).
    expect(asked).toBeLessThanOrEqual(8);
    expect((await alice.request(`${w.origin('app')}/still-signed-in`)).status).toBe(200);
    w.idp.setOutage(null);
    const ok = w.svc.identityManager?.figures().sessionRefreshSuccess ?? 0;
    await until('refreshes resume', () => (w.svc.identityManager?.figures().sessionRefreshSuccess ?? 0) > ok);
    expect((await alice.request(`${w.origin('app')}/after-outage`)).status).toBe(200);
  });

  it('two svc instances sharing a store: one holds the lease and refreshes; the other takes over when it stops', async (t) => {
    const { expect } = t;
    const shared = new MemoryStore({ sweepIntervalMs: 0 });
    // Closed last: after both instances (onTestFinished runs in reverse order).
    t.onTestFinished(() => shared.close());
    const tuning = { ...FAST, refreshMarginMs: 2_000 };
    const a = await world(t, { accessTokenTtlSeconds: 3, identityManager: tuning, sessionStore: shared });
    const b = await second(t, { configPath: a.configPath, watch: false, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 }, sessionStore: shared, identityManager: tuning });
    const managers = [a.svc.identityManager!, b.identityManager!];
    await until('one instance holds the lease', () => managers.some((m) => m.holdsLease));
    expect(managers.filter((m) => m.holdsLease)).toHaveLength(1);
    const alice = a.browser();
    expect(last(await alice.signIn(`${a.origin('app')}/`, 'alice@example.com')).status).toBe(200);
    await until('a background refresh', () => managers.some((m) => m.figures().sessionRefreshSuccess > 0));
    const [holder, other] = managers[0]!.holdsLease ? [managers[0]!, managers[1]!] : [managers[1]!, managers[0]!];
    expect(other.figures().sessionRefreshSuccess).toBe(0);
    expect(other.holdsLease).toBe(false);
    await holder.close();
    await until('the other instance takes over', () => other.holdsLease);
    await until('it refreshes', () => other.figures().sessionRefreshSuccess > 0);
    expect((await alice.request(`${a.origin('app')}/after-takeover`)).status).toBe(200);
  });

  // Two instances, each with its own connections to one real redis-server (docs/scale-out.md): the
  // lease is the Redis key, and a grant revoked at the provider ends the session for both.
  const redisTest = which('redis-server') === undefined && process.env['SVC_TEST_REQUIRE_ALL'] !== '1' ? it.skip : it;
  if (redisTest === it.skip) console.log('skipping the Redis identity-manager test: redis-server is not installed');
  redisTest('two svc instances on one Redis: one lease holder refreshes; a grant revoked at the provider ends the session in the shared store', async (t) => {
    const { expect } = t;
    const redis = await startRedis({ password: 'test-only-idm-redis-password' });
    // Stopped last: after both instances (onTestFinished runs in reverse order).
    t.onTestFinished(() => redis.stop());
    const tuning = { ...FAST, refreshMarginMs: 2_000 };
    const settings = { databroker_storage_type: 'redis', databroker_storage_connection_string: `redis://:test-only-idm-redis-password@127.0.0.1:${redis.port}/6` };
    const a = await world(t, { accessTokenTtlSeconds: 3, identityManager: tuning, settings });
    const b = await second(t, { configPath: a.configPath, watch: false, listen: { host: '127.0.0.1', port: 0 }, identityManager: tuning, grpcListen: { host: '127.0.0.1', port: 0 } });
    const managers = [a.svc.identityManager!, b.identityManager!];
    await until('one instance holds the lease', () => managers.some((m) => m.holdsLease));
    expect(managers.filter((m) => m.holdsLease)).toHaveLength(1);
    const alice = a.browser();
    expect(last(await alice.signIn(`${a.origin('app')}/`, 'alice@example.com')).status).toBe(200);
    await a.idp.revokeUser('alice');
    await until('the lease holder saw the refusal', () => managers.some((m) => m.figures().sessionRefreshError > 0));
    expect(managers.filter((m) => m.figures().sessionRefreshError > 0)).toHaveLength(1);
    expect((await alice.request(`${a.origin('app')}/after-revoke`)).status).toBe(302);
  }, 60_000);
});
