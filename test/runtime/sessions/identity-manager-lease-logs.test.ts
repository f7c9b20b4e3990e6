/**
 * What the identity manager logs about its lease (runtime/sessions/identity-manager.ts), with a real
 * redis-server and the store started as `svc run` starts it (the manager's first request comes while
 * the store's connection is still being made): a start with Redis up logs no failed renewal; a second
 * instance, or a run after one that stopped without giving the lease up, stands by at info; only a
 * renewal that fails while holding the lease is a warning, and its recovery is said.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { IdentityProvider } from '../../../runtime/sessions/idp.ts';
import { RedisStore } from '../../../runtime/databroker/redis-store.ts';
import { IdentityManager } from '../../../runtime/sessions/identity-manager.ts';
import { SessionRefresher } from '../../../runtime/sessions/session-refresher.ts';
import { storage, STORE_SECRET } from '../databroker/redis-support.ts';
import { startRedis, type RedisProcess } from '../../support/redis-server.ts';
import { describeWithCommands } from '../../support/system.ts';

/** Never asked: no session has a refresh token, and no directory run falls due. */
const provider = new IdentityProvider(
  { provider: 'oidc', providerUrl: 'http://127.0.0.1:9/', clientId: 'c', clientSecret: null, scopes: [], serviceAccount: null, requestParams: {}, trustUnverifiedEmail: false, refreshDirectoryIntervalMs: 3_600_000, refreshDirectoryTimeoutMs: 60_000 },
  's',
  'http://rp.test/oauth2/callback',
);

/** Short enough for the test to see a lapse; renewals every 300 ms. */
const LEASE_TTL_MS = 900;

type Entry = Record<string, unknown>;
const said = (logs: readonly Entry[], text: string) => logs.filter((e) => String(e['msg']).includes(text));
/** What svc prints at the default `log_level` (info): the manager's debug lines are not. */
const printed = (logs: readonly Entry[]) => logs.filter((e) => e['level'] !== 'debug');

async function until(check: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describeWithCommands(['redis-server'], 'identity manager lease logs on Redis', () => {
  let redis: RedisProcess;
  const stores: RedisStore[] = [];
  const managers: IdentityManager[] = [];

  /** A store and a manager started the way svc run starts them: no wait for the store. */
  function instance(name: string, logs: Entry[], start = true): { store: RedisStore; manager: IdentityManager } {
    const store = new RedisStore({ storage: storage(`redis://127.0.0.1:${redis.port}/0`), secret: STORE_SECRET });
    stores.push(store);
    const manager = new IdentityManager({ store, refresher: new SessionRefresher(store), settings: () => ({ idp: provider, directoryIntervalMs: 3_600_000, directoryTimeoutMs: 60_000 }), holder: name, leaseTtlMs: LEASE_TTL_MS, log: (e) => logs.push(e) });
    managers.push(manager);
    if (start) manager.start();
    return { store, manager };
  }

  beforeAll(async () => {
    redis = await startRedis();
  }, 30_000);
  afterAll(async () => {
    for (const m of managers) await m.close();
    for (const s of stores) await s.close();
    await redis?.stop();
  });

  it('two instances start: the first takes the lease, the second stands by (info); neither logs a failed renewal', async () => {
    const logsA: Entry[] = [];
    const logsB: Entry[] = [];
    const a = instance('a', logsA);
    await until(() => a.manager.holdsLease, 'a to take the lease');
    const b = instance('b', logsB);
    await until(() => said(logsB, 'standing by').length > 0, 'b to stand by');
    // A few renewals later: still one line each, nothing else.
    await new Promise((r) => setTimeout(r, LEASE_TTL_MS));
    expect(a.manager.holdsLease).toBe(true);
    expect(b.manager.holdsLease).toBe(false);
    expect(printed(logsA).map((e) => e['msg'])).toEqual(['identity manager: took the lease; refreshing sessions here']);
    expect(printed(logsB).map((e) => e['msg'])).toEqual(['identity manager: another instance holds the identity manager lease; standing by']);
    expect(said(logsB, 'standing by')[0]!['level']).toBeUndefined(); // info (runtime/observe/log/run-log.ts)
    for (const e of [...logsA, ...logsB]) expect(e['msg']).not.toMatch(/cannot renew|answers again/);
    await b.manager.close();
    await a.manager.close();
  });

  it('a run after one that stopped without giving the lease up stands by (info), then takes it when it lapses', async () => {
    const crashed = instance('crashed', [], false);
    await crashed.store.ready();
    expect(await crashed.manager.renewLease()).toBe(true); // and never renewed or released again
    const logs: Entry[] = [];
    const next = instance('next', logs);
    await until(() => next.manager.holdsLease, 'the lease to lapse and be taken');
    expect(printed(logs).map((e) => e['msg'])).toEqual(['identity manager: another instance holds the identity manager lease; standing by', 'identity manager: took the lease; refreshing sessions here']);
    expect(logs.some((e) => e['level'] === 'warn')).toBe(false);
    await next.manager.close();
  });

  it('a renewal that fails while holding the lease is a warning, once; the recovery is said', async () => {
    const logs: Entry[] = [];
    const holder = instance('holder', logs);
    await until(() => holder.manager.holdsLease, 'the holder to take the lease');
    await redis.kill();
    await until(() => said(logs, 'cannot renew its lease').length > 0, 'the failed renewal');
    expect(said(logs, 'cannot renew its lease')[0]).toMatchObject({ level: 'warn', msg: 'identity manager: cannot renew its lease; pausing until the store answers' });
    await new Promise((r) => setTimeout(r, LEASE_TTL_MS)); // more failed tries: not said again
    expect(said(logs, 'cannot renew its lease')).toHaveLength(1);
    await redis.restart();
    await until(() => said(logs, 'the store answers again').length > 0, 'the recovery', 30_000);
    await until(() => holder.manager.holdsLease, 'the lease taken again', 30_000);
    expect(logs.filter((e) => e['level'] === 'warn')).toHaveLength(1);
    await holder.manager.close();
  }, 60_000);
});
