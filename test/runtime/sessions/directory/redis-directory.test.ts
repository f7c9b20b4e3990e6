/**
 * The directory in Redis (runtime/sessions/directory/record.ts): the lease holder's sync writes it
 * once, sealed like a session (no group or user id in clear in Redis), and another instance's store
 * connection reads it, as its sign-ins do (docs/authentication.md "Groups from the directory").
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { PlanSettings } from '../../../../compiler/plan/types.ts';
import { newSessionId } from '../../../../runtime/core/session-store.ts';
import { RedisStore } from '../../../../runtime/databroker/redis-store.ts';
import { directoryClient } from '../../../../runtime/sessions/directory/index.ts';
import { readDirectory } from '../../../../runtime/sessions/directory/record.ts';
import { IdentityManager } from '../../../../runtime/sessions/identity-manager.ts';
import type { IdentityProvider } from '../../../../runtime/sessions/idp.ts';
import { SessionRefresher } from '../../../../runtime/sessions/session-refresher.ts';
import { storage, STORE_SECRET } from '../../databroker/redis-support.ts';
import { startRedis, type RedisProcess } from '../../../support/redis-server.ts';
import { describeWithCommands } from '../../../support/system.ts';
import { baseModel, FakeDirectory } from './fake-directory.ts';

describeWithCommands(['redis-server'], 'the directory in Redis', () => {
  let redis: RedisProcess;
  let fake: FakeDirectory;
  const stores: RedisStore[] = [];
  const store = async () => {
    const s = new RedisStore({ storage: storage(`redis://127.0.0.1:${redis.port}/0`), secret: STORE_SECRET });
    stores.push(s);
    await s.ready();
    return s;
  };

  beforeAll(async () => {
    redis = await startRedis();
    fake = await FakeDirectory.start(baseModel());
  }, 30_000);
  afterAll(async () => {
    for (const s of stores) await s.close();
    await fake?.close();
    await redis?.stop();
  });

  it('is written sealed by the lease holder and read by another instance; sessions there get the groups', async () => {
    const account = { value: fake.account('okta'), fingerprint: 'sha256:redis-directory' };
    const idpSettings = { provider: 'okta', providerUrl: null, serviceAccount: account } as unknown as PlanSettings['idp'];
    const directory = { provider: 'okta', account, client: directoryClient(idpSettings, (s) => ('value' in s ? s.value : ''))! };
    const idp = { hasUserInfo: async () => false } as unknown as IdentityProvider;
    const clock = { now: Date.now() };
    const a = await store();
    const session = { id: newSessionId(), userId: '2', groups: [], claims: { sub: '2' }, createdAtMs: clock.now, expiresAtMs: clock.now + 3_600_000 };
    await a.put(session);
    const m = new IdentityManager({ store: a, refresher: new SessionRefresher(a), settings: () => ({ idp, directoryIntervalMs: 600_000, directoryTimeoutMs: 10_000, directory }), now: () => clock.now, directoryDispatcher: fake.dispatcher });
    try {
      // No directory in the store yet: the lease holder reads it at once.
      await m.tick();
      expect(m.figures().userGroupRefreshSuccess).toBe(1);
      const b = await store();
      const seen = await readDirectory(b, 'okta', account);
      expect(seen?.snapshot.members).toEqual({ '1': ['101', '102'], '2': ['101'] });
      expect((await b.get(session.id))?.groups).toEqual(['101', 'engineering']);
      // Sealed: nothing in Redis names a group.
      const raw = new Redis({ port: redis.port, host: '127.0.0.1' });
      let read = 0;
      try {
        for (const key of await raw.keys('*')) {
          const type = await raw.type(key);
          const text = type === 'string' ? ((await raw.getBuffer(key)) ?? Buffer.alloc(0)) : type === 'hash' ? Buffer.from(JSON.stringify(await raw.hgetall(key))) : Buffer.alloc(0);
          expect(text.toString('latin1'), key).not.toContain('engineering');
          read += text.length;
        }
        expect(read).toBeGreaterThan(200);
      } finally {
        raw.disconnect();
      }
    } finally {
      await m.close();
    }
  });
});
