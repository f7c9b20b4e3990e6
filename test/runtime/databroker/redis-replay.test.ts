/**
 * A Redis writer replaying old sealed values (docs/security.md S39; docs/scale-out.md "What a Redis
 * writer can and cannot do"), against a real redis-server: a session value saved before a sign-out
 * or a group change and written back is refused by every process that saw the newer value, and
 * revoked again for all; the revocation outlives a shortened TTL; the version cannot be edited; a
 * lease held by a forged or replayed value is taken over; honest concurrent writers never trip the
 * replay check; values written by an svc without versions are still read.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { deriveKey } from '../../../runtime/core/keys.ts';
import { KeyLayout } from '../../../runtime/databroker/redis-keys.ts';
import { ValueSeal } from '../../../runtime/databroker/redis-seal.ts';
import { RedisStore } from '../../../runtime/databroker/redis-store.ts';
import { startRedis, type RedisProcess } from '../../support/redis-server.ts';
import { describeWithCommands } from '../../support/system.ts';
import { sessionRecord } from './records.ts';
import { eventually } from './store-contract.ts';
import { storage, STORE_SECRET } from './redis-support.ts';

const PASSWORD = 'test-only-replay-password';
const keys = new KeyLayout(deriveKey(STORE_SECRET, 'session store names'));

describeWithCommands(['redis-server'], 'RedisStore against a Redis writer replaying old values', () => {
  let redis: RedisProcess;
  let raw: Redis;
  const stores: RedisStore[] = [];
  const logs: string[] = [];
  const make = async () => {
    const s = new RedisStore({ storage: storage(`redis://:${PASSWORD}@127.0.0.1:${redis.port}/0`), secret: STORE_SECRET, log: (e) => logs.push(JSON.stringify(e)) });
    stores.push(s);
    await s.ready();
    return s;
  };
  /** The writer: saves a key's value with its TTL, and writes it back later. */
  const save = async (key: string) => ({ value: (await raw.getBuffer(key))!, ttl: await raw.pttl(key) });
  const writeBack = async (key: string, saved: { value: Buffer; ttl: number }) => void (await raw.set(key, saved.value, 'PX', saved.ttl));
  /** Resolves once `store` heard a change of `id` from another process. */
  const hears = (store: RedisStore, id: string) => new Promise<void>((resolve) => store.onChange((changed) => changed === id && resolve()));

  beforeAll(async () => {
    redis = await startRedis({ password: PASSWORD });
    raw = new Redis({ port: redis.port, host: '127.0.0.1', password: PASSWORD });
  }, 30_000);
  afterAll(async () => {
    for (const s of stores) await s.close();
    raw?.disconnect();
    await redis?.stop();
  });

  it('a session value saved before sign-out and written back is refused on every process that saw the sign-out, and revoked again for all', async () => {
    const [a, b] = [await make(), await make()];
    const r = sessionRecord(Date.now());
    const key = keys.session(r.id);
    await a.put(r);
    expect(await b.get(r.id)).toEqual(r);
    const old = await save(key);
    const heard = hears(b, r.id);
    await a.delete(r.id);
    await heard;
    // The writer deletes the revocation and writes the old session back.
    await raw.del(key);
    await writeBack(key, old);
    expect(await a.get(r.id)).toBeUndefined();
    expect(await b.get(r.id)).toBeUndefined();
    expect(a.replaysRefused + b.replaysRefused).toBeGreaterThanOrEqual(1);
    expect(logs.some((l) => l.includes('older than one this process has seen'))).toBe(true);
    // The process that refused it wrote the revocation back: a fresh process refuses it too.
    const fresh = await make();
    expect(await fresh.get(r.id)).toBeUndefined();
    expect(await fresh.isRevoked(r.id)).toBe(true);
    await expect(fresh.put(r)).rejects.toMatchObject({ code: 'SVC_ERR_SESSION_REVOKED' });
  });

  it('an older record written back after a directory refresh removed a group does not give the group back', async () => {
    const [a, b] = [await make(), await make()];
    const r = sessionRecord(Date.now(), { groups: ['admins', 'ops'] });
    const key = keys.session(r.id);
    await a.put(r);
    expect(await b.get(r.id)).toEqual(r);
    const old = await save(key);
    const heard = hears(b, r.id);
    await a.put({ ...r, groups: ['ops'] });
    await heard;
    await writeBack(key, old);
    // Never the old groups: the session is revoked instead (fail-closed), on both processes.
    expect(await b.get(r.id)).toBeUndefined();
    expect(await a.get(r.id)).toBeUndefined();
    expect(await (await make()).get(r.id)).toBeUndefined();
  });

  it('a process that heard no change refuses a value older than the one it read itself', async () => {
    const a = await make();
    const r = sessionRecord(Date.now(), { groups: ['admins'] });
    const key = keys.session(r.id);
    await a.put(r);
    const old = await save(key);
    // Another process writes the newer value; this one reads it (no reliance on the channel).
    await (await make()).put({ ...r, groups: [] });
    expect((await a.get(r.id))?.groups).toEqual([]);
    await writeBack(key, old);
    expect(await a.get(r.id)).toBeUndefined();
  });

  it('the revocation cannot be shortened by shortening the key’s TTL, nor undone by deleting it before a sign-out', async () => {
    const a = await make();
    const r = sessionRecord(Date.now(), { expiresAtMs: Date.now() + 60_000 });
    const key = keys.session(r.id);
    await a.put(r);
    const old = await save(key);
    await raw.pexpire(key, 1);
    await eventually(async () => (await raw.exists(key)) === 0);
    await a.delete(r.id);
    // Written anyway, for the record's lifetime as this process knew it.
    expect(await raw.pttl(key)).toBeGreaterThan(50_000);
    await writeBack(key, old);
    expect(await a.get(r.id)).toBeUndefined();
    expect(await (await make()).get(r.id)).toBeUndefined();
  });

  it('the limit: a process that never saw the newer value serves the old one until a process that did reads the key and revokes it again', async () => {
    const a = await make();
    const r = sessionRecord(Date.now());
    const key = keys.session(r.id);
    await a.put(r);
    const old = await save(key);
    await a.delete(r.id);
    await writeBack(key, old);
    // A fresh process has nothing to compare with: Redis alone cannot prove the value is old.
    const fresh = await make();
    expect(await fresh.get(r.id)).toEqual(r);
    // Any process that saw the sign-out (the identity manager reads every session at each scan) revokes it again.
    const heard = hears(fresh, r.id);
    expect(await a.get(r.id)).toBeUndefined();
    await heard;
    expect(await fresh.get(r.id)).toBeUndefined();
    expect(await (await make()).get(r.id)).toBeUndefined();
  });

  it('a value whose clear version was edited, or a forged revocation, does not open (no version can be claimed without the secret)', async () => {
    const a = await make();
    const r = sessionRecord(Date.now());
    const key = keys.session(r.id);
    await a.put(r);
    const value = (await raw.getBuffer(key))!;
    const dot = value.indexOf('.');
    const header = value.subarray(0, dot).toString();
    expect(header).toMatch(/^s[1-9][0-9]*$/);
    await raw.set(key, Buffer.concat([Buffer.from(`s${Number(header.slice(1)) + 1_000_000}`), value.subarray(dot)]), 'PX', 60_000);
    expect(await (await make()).get(r.id)).toBeUndefined();
    await raw.set(key, Buffer.concat([Buffer.from(`r${Number(header.slice(1)) + 1}`), value.subarray(dot)]), 'PX', 60_000);
    expect(await (await make()).isRevoked(r.id)).toBe(false);
  });

  it('honest writers racing on one session never look like a replay', async () => {
    const [a, b] = [await make(), await make()];
    const r = sessionRecord(Date.now());
    await a.put(r);
    for (let i = 0; i < 30; i++) {
      await Promise.all([a.put({ ...r, groups: [`a${i}`] }), b.put({ ...r, groups: [`b${i}`] }), a.get(r.id), b.get(r.id)]);
      expect(await a.get(r.id)).toBeDefined();
      expect(await b.get(r.id)).toBeDefined();
    }
    expect(a.replaysRefused + b.replaysRefused).toBe(0);
  });

  it('a writer ahead in time (clock skew) is overtaken, not refused: versions keep increasing', async () => {
    const [a, b] = [await make(), await make()];
    const r = sessionRecord(Date.now());
    const now = Date.now();
    const spy = vi.spyOn(Date, 'now').mockReturnValue(now + 30_000);
    try {
      await a.put(r);
    } finally {
      spy.mockRestore();
    }
    await b.put({ ...r, groups: ['later'] });
    const header = (await raw.getBuffer(keys.session(r.id)))!.toString('latin1').split('.')[0]!;
    expect(Number(header.slice(1))).toBeGreaterThan(now + 30_000);
    expect((await a.get(r.id))?.groups).toEqual(['later']);
  });

  it('still reads the values of an svc without versions: a sealed record, and the mark `r`', async () => {
    const a = await make();
    const seal = new ValueSeal(deriveKey(STORE_SECRET, 'session store seal'));
    const r = sessionRecord(Date.now());
    await raw.set(keys.session(r.id), seal.seal(keys.session(r.id), Buffer.from(JSON.stringify(r))), 'PX', 60_000);
    expect(await a.get(r.id)).toEqual(r);
    await a.put({ ...r, groups: ['new'] });
    expect((await a.get(r.id))?.groups).toEqual(['new']);
    const gone = sessionRecord(Date.now());
    await raw.set(keys.session(gone.id), 'r', 'PX', 60_000);
    expect(await a.get(gone.id)).toBeUndefined();
    expect(await a.isRevoked(gone.id)).toBe(true);
    await expect(a.put(gone)).rejects.toMatchObject({ code: 'SVC_ERR_SESSION_REVOKED' });
  });

  describe('the lease', () => {
    it('a value svc did not write, held forever, is taken over and logged', async () => {
      const a = await make();
      const name = `lease-${Math.random()}`;
      await raw.set(keys.lease(name), 'someone-else');
      expect(await a.acquireLease(name, 'a', 60_000)).toBe(true);
      expect(a.leasesTakenOver).toBe(1);
      expect(logs.some((l) => l.includes('a lease was held by a value svc did not write'))).toBe(true);
      // Held by a now, sealed: another holder is refused while it lasts.
      expect(await (await make()).acquireLease(name, 'b', 60_000)).toBe(false);
    });

    it('a real holder’s value written back without a TTL blocks the others for at most about two TTLs', async () => {
      const [a, b] = [await make(), await make()];
      const name = `lease-${Math.random()}`;
      expect(await a.acquireLease(name, 'a', 300)).toBe(true);
      const value = (await raw.getBuffer(keys.lease(name)))!;
      await a.releaseLease(name, 'a');
      await raw.set(keys.lease(name), value);
      expect(await raw.pttl(keys.lease(name))).toBe(-1);
      expect(await b.acquireLease(name, 'b', 300)).toBe(false);
      await eventually(() => b.acquireLease(name, 'b', 300), 3_000);
      expect(b.leasesTakenOver).toBe(1);
    });

    it('a holder keeps renewing its own lease; a release by another holder does nothing', async () => {
      const [a, b] = [await make(), await make()];
      const name = `lease-${Math.random()}`;
      expect(await a.acquireLease(name, 'a', 60_000)).toBe(true);
      expect(await a.acquireLease(name, 'a', 60_000)).toBe(true);
      await b.releaseLease(name, 'b');
      expect(await b.acquireLease(name, 'b', 60_000)).toBe(false);
      await a.releaseLease(name, 'a');
      expect(await b.acquireLease(name, 'b', 60_000)).toBe(true);
      expect(a.leasesTakenOver + b.leasesTakenOver).toBe(0);
    });
  });
});
