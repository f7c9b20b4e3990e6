/**
 * The identity manager on the Redis store against a Redis writer (docs/security.md S39; docs/scale-out.md
 * "What a Redis writer can and cannot do"), with a real redis-server: a lease key the writer holds
 * forever does not stop the refreshes, and the manager's scan, which reads every session, revokes a
 * replayed old record even for processes that never saw the newer one.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { IdentityProvider } from '../../../runtime/sessions/idp.ts';
import { deriveKey } from '../../../runtime/core/keys.ts';
import { KeyLayout } from '../../../runtime/databroker/redis-keys.ts';
import { RedisStore } from '../../../runtime/databroker/redis-store.ts';
import { IDENTITY_MANAGER_LEASE, IdentityManager } from '../../../runtime/sessions/identity-manager.ts';
import { SessionRefresher } from '../../../runtime/sessions/session-refresher.ts';
import { sessionRecord } from '../databroker/records.ts';
import { storage, STORE_SECRET } from '../databroker/redis-support.ts';
import { startRedis, type RedisProcess } from '../../support/redis-server.ts';
import { describeWithCommands } from '../../support/system.ts';

const keys = new KeyLayout(deriveKey(STORE_SECRET, 'session store names'));
/** Never asked: the sessions here have no refresh token and no directory run falls due. */
const provider = new IdentityProvider(
  { provider: 'oidc', providerUrl: 'http://127.0.0.1:9/', clientId: 'c', clientSecret: null, scopes: [], serviceAccount: null, requestParams: {}, trustUnverifiedEmail: false, refreshDirectoryIntervalMs: 3_600_000, refreshDirectoryTimeoutMs: 60_000 },
  's',
  'http://rp.test/oauth2/callback',
);

describeWithCommands(['redis-server'], 'IdentityManager on Redis against a Redis writer', () => {
  let redis: RedisProcess;
  let raw: Redis;
  const stores: RedisStore[] = [];
  const managers: IdentityManager[] = [];
  const logs: string[] = [];
  const store = async () => {
    const s = new RedisStore({ storage: storage(`redis://127.0.0.1:${redis.port}/0`), secret: STORE_SECRET, log: (e) => logs.push(JSON.stringify(e)) });
    stores.push(s);
    await s.ready();
    return s;
  };
  const manager = (s: RedisStore) => {
    const m = new IdentityManager({ store: s, refresher: new SessionRefresher(s), settings: () => ({ idp: provider, directoryIntervalMs: 3_600_000, directoryTimeoutMs: 60_000 }), holder: `m-${managers.length}` });
    managers.push(m);
    return m;
  };

  beforeAll(async () => {
    redis = await startRedis();
    raw = new Redis({ port: redis.port, host: '127.0.0.1' });
  }, 30_000);
  afterAll(async () => {
    for (const m of managers) await m.close();
    for (const s of stores) await s.close();
    raw?.disconnect();
    await redis?.stop();
  });

  it('a lease key the writer holds forever (no TTL) does not stop the refreshes: the manager takes it, and it is logged', async () => {
    await raw.set(keys.lease(IDENTITY_MANAGER_LEASE), 'held-by-the-writer');
    const m = manager(await store());
    expect(await m.renewLease()).toBe(true);
    expect(m.holdsLease).toBe(true);
    expect(logs.some((l) => l.includes('a lease was held by a value svc did not write'))).toBe(true);
    await m.close();
  });

  it('a replayed old record is served by a fresh process only until the lease holder’s next scan, which revokes it for all', async () => {
    const [held, writer] = [await store(), await store()];
    const m = manager(held);
    expect(await m.renewLease()).toBe(true);
    const r = sessionRecord(Date.now(), { groups: ['admins'] });
    const key = keys.session(r.id);
    await writer.put(r);
    const old = { value: (await raw.getBuffer(key))!, ttl: await raw.pttl(key) };
    // The user left `admins` (a directory refresh elsewhere); the manager's scan reads the new record.
    await writer.put({ ...r, groups: [] });
    await m.scan();
    await raw.set(key, old.value, 'PX', old.ttl);
    // A process started after the change never saw the newer record: nothing to compare with…
    const fresh = await store();
    expect((await fresh.get(r.id))?.groups).toEqual(['admins']);
    // …until the holder's scan, which has.
    await m.scan();
    expect(held.replaysRefused).toBe(1);
    expect(await fresh.get(r.id)).toBeUndefined();
    expect(await writer.get(r.id)).toBeUndefined();
  });
});
