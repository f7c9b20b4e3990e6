/**
 * Choosing the store from the plan, and what a reload may change: the storage settings (and the
 * secret that seals Redis values) are fixed while svc runs; `svc diff` never shows the Redis
 * password or the connection string.
 */
import { describe, expect, it } from 'vitest';
import { diffPlans } from '../../../cli/diff/diff.ts';
import { renderDiffJson } from '../../../cli/diff/render-json.ts';
import { renderDiffText } from '../../../cli/diff/render-text.ts';
import { MemoryStore } from '../../../runtime/databroker/memory-store.ts';
import { openSessionStore, storageChange } from '../../../runtime/databroker/open-store.ts';
import { RedisStore } from '../../../runtime/databroker/redis-store.ts';
import { createReloader } from '../../../runtime/generation/reload.ts';
import { planOf, route } from '../../cli/diff/helpers.ts';

const routes = [route('app.example.com', { allow_any_authenticated_user: true })];
const PASSWORD = 'test-only-pa55word';
const redisAt = (password: string, db = 0) => ({ databroker_storage_type: 'redis', databroker_storage_connection_string: `redis://svc:${password}@127.0.0.1:1/${db}` });

describe('openSessionStore', () => {
  it('opens the store the plan names: memory by default, Redis with databroker_storage_type: redis (without waiting for it)', async () => {
    const memory = await openSessionStore(planOf(routes).body.settings);
    expect(memory).toBeInstanceOf(MemoryStore);
    await memory.close();
    const redis = await openSessionStore(planOf(routes, redisAt(PASSWORD)).body.settings);
    expect(redis).toBeInstanceOf(RedisStore);
    await redis.close();
  });
});

describe('storageChange (reload)', () => {
  it('refuses a reload that changes the storage settings, with a message naming them and no secret', () => {
    const memory = planOf(routes).body.settings;
    const redis = planOf(routes, redisAt(PASSWORD)).body.settings;
    const otherPassword = planOf(routes, redisAt('another-password')).body.settings;
    const otherDb = planOf(routes, redisAt(PASSWORD, 2)).body.settings;
    for (const [a, b] of [
      [memory, redis],
      [redis, memory],
      [redis, otherPassword],
      [redis, otherDb],
    ] as const) {
      const message = storageChange(a, b);
      expect(message).toMatch(/session storage settings changed .*restart svc/);
      expect(message).not.toContain(PASSWORD);
    }
    expect(storageChange(redis, planOf(routes, redisAt(PASSWORD)).body.settings)).toBeUndefined();
    expect(storageChange(memory, planOf(routes, { timeout_read: '5s' }).body.settings)).toBeUndefined();
  });

  it('the reloader keeps the running plan and says why', async () => {
    const current = planOf(routes);
    const next = planOf(routes, redisAt(PASSWORD));
    const logged: Record<string, unknown>[] = [];
    const reloader = createReloader({ load: () => next, current: () => current, prepare: () => Promise.reject(new Error('not reached')), log: (e) => logged.push(e) });
    const r = await reloader.reload();
    expect(r).toMatchObject({ ok: false, error: expect.stringMatching(/session storage settings changed/) });
    expect(JSON.stringify(logged)).not.toContain(PASSWORD);
  });
});

describe('svc diff of storage settings', () => {
  it('shows the Redis connection as changed, never the password or the connection string', () => {
    const a = planOf(routes, redisAt(PASSWORD));
    const b = planOf(routes, redisAt('a-new-secret-password', 3));
    for (const text of [renderDiffText(diffPlans(a, b)), renderDiffJson(diffPlans(a, b))]) {
      expect(text).toContain('databroker_storage_connection_string');
      for (const secret of [PASSWORD, 'a-new-secret-password', 'redis://']) expect(text).not.toContain(secret);
    }
  });
});
