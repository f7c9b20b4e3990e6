/**
 * The Redis store against a real redis-server on loopback: the store contract (same as the memory
 * store), two instances sharing one server, encryption at rest, key names, secrets kept out of
 * messages, the outage and the recovery, and the pool figures.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStore, type RedisStoreOptions } from '../../../runtime/databroker/redis-store.ts';
import { LEVELS } from '../../../runtime/observe/log/run-log.ts';
import type { StorageOperation } from '../../../runtime/core/session-store.ts';
import { cli, startRedis, type RedisProcess } from '../../support/redis-server.ts';
import { describeWithCommands } from '../../support/system.ts';
import { sessionRecord } from './records.ts';
import { eventually, storeContract } from './store-contract.ts';
import { storage, STORE_SECRET } from './redis-support.ts';

const PASSWORD = 'test-only-p@ss:word';

describeWithCommands(['redis-server', 'redis-cli'], 'RedisStore (standalone, password)', () => {
  let redis: RedisProcess;
  let db = 0;
  const url = () => `redis://:${encodeURIComponent(PASSWORD)}@127.0.0.1:${redis.port}/${db}`;
  const stores: RedisStore[] = [];
  const make = async (over: Partial<RedisStoreOptions> = {}) => {
    const s = new RedisStore({ storage: storage(url()), secret: STORE_SECRET, ...over });
    stores.push(s);
    await s.ready();
    return s;
  };

  beforeAll(async () => {
    redis = await startRedis({ password: PASSWORD });
  }, 30_000);
  afterAll(async () => {
    for (const s of stores) await s.close();
    await redis?.stop();
  });

  describe('the store contract', () => {
    storeContract({ open: () => make(), peer: () => make() });
  });

  it('stores nothing readable: sealed values, no raw id in any key name, values bound to their key', async () => {
    db = 1;
    const s = await make();
    const r = sessionRecord(Date.now(), { accessToken: 'secret-access-token', refreshToken: 'secret-refresh-token' });
    await s.put(r);
    await s.consumeOnce('handoff:jti-1', Date.now() + 60_000);
    const keys = cli(redis.port, ['-n', '1', '--scan'], PASSWORD).trim().split('\n').filter(Boolean);
    expect(keys).toHaveLength(2);
    for (const k of keys) {
      expect(k).toMatch(/^svc:[A-Za-z0-9_-]{8}:/);
      expect(k).not.toContain(r.id);
      expect(k).not.toContain('jti-1');
    }
    const sessionKey = keys.find((k) => k.endsWith(':s'))!;
    const dump = cli(redis.port, ['-n', '1', 'GET', sessionKey], PASSWORD);
    for (const plain of ['secret-access-token', 'secret-refresh-token', 'u@example.com', 'user-1', r.id]) expect(dump).not.toContain(plain);
    // The key's TTL is the session's expiry.
    const ttl = Number(cli(redis.port, ['-n', '1', 'PTTL', sessionKey], PASSWORD));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60_000);
    // A value moved to another session's key does not open there.
    const other = sessionRecord(Date.now());
    await s.put(other);
    const otherKey = cli(redis.port, ['-n', '1', '--scan'], PASSWORD).trim().split('\n').find((k) => k.endsWith(':s') && k !== sessionKey)!;
    const copied = cli(redis.port, ['-n', '1', 'COPY', sessionKey, otherKey, 'REPLACE'], PASSWORD);
    expect(copied.trim()).toBe('1');
    expect(await s.get(other.id)).toBeUndefined();
    expect(await s.get(r.id)).toEqual(r);
    // A store with another secret sees nothing of it (another namespace).
    const foreign = await make({ secret: Buffer.alloc(32, 9) });
    expect(await foreign.get(r.id)).toBeUndefined();
    db = 0;
  });

  it('never shows the password or the connection string: in errors, in logs', async () => {
    const lines: string[] = [];
    // Wrong password: the server refuses; the messages must still hide what was configured.
    const wrong = `redis://:${encodeURIComponent('wrong-' + PASSWORD)}@127.0.0.1:${redis.port}/0`;
    const s = new RedisStore({ storage: storage(wrong), secret: STORE_SECRET, log: (e) => lines.push(JSON.stringify(e)) });
    stores.push(s);
    const err = await s.get('x').catch((e: Error) => e);
    expect(err).toMatchObject({ code: 'SVC_ERR_SESSION_STORE_UNAVAILABLE' });
    await eventually(() => lines.length > 0);
    for (const text of [...lines, (err as Error).message]) {
      expect(text).not.toContain(PASSWORD);
      expect(text).not.toContain(encodeURIComponent(PASSWORD));
      expect(text).not.toContain('wrong-');
    }
  });

  it('outage: fails fast with SVC_ERR_SESSION_STORE_UNAVAILABLE, logs once, heals by itself, keeps no session lost; flushes listeners after resubscribing', async () => {
    db = 2;
    const lines: string[] = [];
    const entries: Record<string, unknown>[] = [];
    const s = await make({
      log: (e) => {
        lines.push(String(e['msg']));
        entries.push(e);
      },
    });
    let flushed = 0;
    s.onFlush(() => flushed++);
    const r = sessionRecord(Date.now());
    await s.put(r);
    await redis.kill();
    await eventually(() => !s.poolFigures().up);
    for (let i = 0; i < 5; i++) {
      const started = Date.now();
      await expect(s.get(r.id)).rejects.toMatchObject({ code: 'SVC_ERR_SESSION_STORE_UNAVAILABLE' });
      // Bounded: no offline queue (a generous bound for a loaded machine).
      expect(Date.now() - started).toBeLessThan(5_000);
    }
    expect(lines.filter((l) => l.includes('unreachable'))).toHaveLength(1);
    // An error line (docs/logging.md) that says what users see, ioredis's reason only as `error`.
    const down = entries.find((e) => String(e['msg']).includes('unreachable'))!;
    expect(down['msg']).toBe('session store (redis) unreachable');
    expect(LEVELS[String(down['msg'])]).toBe('error');
    expect(down['impact']).toMatch(/503 session-store-unavailable.*not signed out.*public routes are served/);
    await redis.restart();
    await eventually(() => s.poolFigures().up, 15_000);
    await eventually(() => flushed > 0, 15_000);
    expect(lines.filter((l) => l.includes('reachable again'))).toHaveLength(1);
    const back = entries.find((e) => e['msg'] === 'session store (redis) reachable again')!;
    expect(LEVELS[String(back['msg'])]).toBeUndefined(); // info
    expect(back['outageMs']).toBeGreaterThan(0);
    // Persistence is off, so the restarted server is empty: the store works again for new sessions.
    const again = sessionRecord(Date.now());
    await s.put(again);
    expect(await s.get(again.id)).toEqual(again);
    db = 0;
  }, 60_000);

  it('starts while Redis is down, says so, and connects when it comes', async () => {
    const lines: string[] = [];
    const down = await startRedis({ password: PASSWORD });
    await down.kill();
    const s = new RedisStore({ storage: storage(`redis://:${encodeURIComponent(PASSWORD)}@127.0.0.1:${down.port}`), secret: STORE_SECRET, log: (e) => lines.push(String(e['msg'])) });
    stores.push(s);
    await expect(s.get('x')).rejects.toMatchObject({ code: 'SVC_ERR_SESSION_STORE_UNAVAILABLE' });
    await eventually(() => lines.some((l) => l.includes('unreachable at start')));
    expect(LEVELS[lines.find((l) => l.includes('unreachable at start'))!]).toBe('error');
    await down.restart();
    await s.ready(15_000);
    expect(await s.get('x')).toBeUndefined();
    await down.stop();
  }, 60_000);

  it('keeps the figures of spec §6: every operation timed, pool figures', async () => {
    const seen: { op: StorageOperation; result: string; backend: string; ms: number }[] = [];
    const s = await make({ observer: { operation: (op, result, backend, ms) => seen.push({ op, result, backend, ms }) } });
    const r = sessionRecord(Date.now());
    await s.put(r);
    await s.get(r.id);
    await s.isRevoked(r.id);
    await s.consumeOnce('k', Date.now() + 1_000);
    await s.delete(r.id);
    await s.acquireLease('l', 'h', 1_000);
    await s.releaseLease('l', 'h');
    for await (const _ of s.sessionIds()) void _;
    expect(seen.map((x) => x.op)).toEqual(['put', 'get', 'isRevoked', 'consumeOnce', 'delete', 'acquireLease', 'releaseLease', 'sessionIds']);
    for (const x of seen) {
      expect(x).toMatchObject({ result: 'ok', backend: 'redis' });
      expect(x.ms).toBeGreaterThanOrEqual(0);
    }
    await s.put({ ...r, id: 'x', groups: [1] as unknown as string[] }).catch(() => undefined);
    const f = s.poolFigures();
    // One wait: the subscription, issued before the pub/sub connection was up.
    expect(f).toMatchObject({ up: true, conns: 2, idleConns: 2, waitCount: 1 });
  });

  it('counts the commands that waited for a connection (before the first connect, during an outage), and no command on a ready connection', async () => {
    const down = await startRedis({ password: PASSWORD });
    await down.kill();
    const s = new RedisStore({ storage: storage(`redis://:${encodeURIComponent(PASSWORD)}@127.0.0.1:${down.port}`), secret: STORE_SECRET });
    stores.push(s);
    try {
      // Before the first connect: the subscription waits (queued until Redis comes), and a command
      // fails at once (no offline queue) but is counted.
      expect(s.poolFigures().waitCount).toBe(1);
      await expect(s.get('x')).rejects.toMatchObject({ code: 'SVC_ERR_SESSION_STORE_UNAVAILABLE' });
      expect(s.poolFigures().waitCount).toBe(2);
      await down.restart();
      await s.ready(15_000);
      const connected = s.poolFigures();
      expect(connected.waitCount).toBe(2);
      // The subscription waited until Redis came (at least the restart), then nothing waits.
      expect(connected.waitDurationMs).toBeGreaterThan(0);

      // On a ready connection nothing waits.
      const r = sessionRecord(Date.now());
      await s.put(r);
      expect(await s.get(r.id)).toEqual(r);
      await s.delete(r.id);
      await s.consumeOnce('once', Date.now() + 60_000);
      for await (const _ of s.sessionIds()) void _;
      expect(s.poolFigures()).toMatchObject({ waitCount: connected.waitCount, waitDurationMs: connected.waitDurationMs });

      // An outage: every command issued meanwhile is counted.
      await down.kill();
      await eventually(() => !s.poolFigures().up);
      const during = s.poolFigures().waitCount;
      for (let i = 0; i < 3; i++) await expect(s.get(r.id)).rejects.toMatchObject({ code: 'SVC_ERR_SESSION_STORE_UNAVAILABLE' });
      expect(s.poolFigures().waitCount).toBe(during + 3);
      await down.restart();
      await eventually(() => s.poolFigures().up, 15_000);
      const healed = s.poolFigures();
      expect(healed.waitDurationMs).toBeGreaterThanOrEqual(connected.waitDurationMs);
      expect(await s.get(r.id)).toBeUndefined();
      expect(s.poolFigures().waitCount).toBe(healed.waitCount);
    } finally {
      await down.stop();
    }
  }, 60_000);
});
