/**
 * The memory store as a SessionDirectory (the identity manager's view): live session ids, and a
 * lease that one holder at a time holds, renews, gives up, and loses to another after its TTL.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../../runtime/databroker/memory-store.ts';
import { isSessionDirectory, SessionStoreError } from '../../../runtime/core/session-store.ts';
import { sessionRecord } from './records.ts';

const T0 = 1_700_000_000_000;

const stores: MemoryStore[] = [];
function store(now: () => number): MemoryStore {
  const s = new MemoryStore({ sweepIntervalMs: 0, now });
  stores.push(s);
  return s;
}

afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
});

async function ids(s: MemoryStore): Promise<string[]> {
  const out: string[] = [];
  for await (const id of s.sessionIds()) out.push(id);
  return out.sort();
}

describe('MemoryStore as a SessionDirectory', () => {
  it('is a SessionDirectory', () => {
    expect(isSessionDirectory(store(() => T0))).toBe(true);
  });

  it('lists live session ids, not expired or deleted ones', async () => {
    let now = T0;
    const s = store(() => now);
    const a = sessionRecord(T0, { expiresAtMs: T0 + 10_000 });
    const b = sessionRecord(T0, { expiresAtMs: T0 + 60_000 });
    const c = sessionRecord(T0);
    for (const r of [a, b, c]) await s.put(r);
    await s.delete(c.id);
    expect(await ids(s)).toEqual([a.id, b.id].sort());
    now = T0 + 10_000;
    expect(await ids(s)).toEqual([b.id]);
  });

  it('ids put or deleted while iterating do not break the iteration', async () => {
    const s = store(() => T0);
    const records = Array.from({ length: 5 }, () => sessionRecord(T0));
    for (const r of records) await s.put(r);
    const seen: string[] = [];
    for await (const id of s.sessionIds()) {
      seen.push(id);
      await s.delete(id);
      await s.put(sessionRecord(T0));
    }
    expect(seen.sort()).toEqual(records.map((r) => r.id).sort());
  });

  it('a lease has one holder until its TTL lapses; the holder renews it', async () => {
    let now = T0;
    const s = store(() => now);
    expect(await s.acquireLease('idm', 'a', 1_000)).toBe(true);
    expect(await s.acquireLease('idm', 'b', 1_000)).toBe(false);
    now += 900;
    expect(await s.acquireLease('idm', 'a', 1_000)).toBe(true); // renewed until T0 + 1900
    now += 900;
    expect(await s.acquireLease('idm', 'b', 1_000)).toBe(false);
    now += 100; // T0 + 1900: a's lease lapsed
    expect(await s.acquireLease('idm', 'b', 1_000)).toBe(true);
    expect(await s.acquireLease('idm', 'a', 1_000)).toBe(false);
    // Leases of other names are independent.
    expect(await s.acquireLease('other', 'a', 1_000)).toBe(true);
  });

  it('release gives the lease up only for its holder', async () => {
    const s = store(() => T0);
    expect(await s.acquireLease('idm', 'a', 60_000)).toBe(true);
    await s.releaseLease('idm', 'b');
    expect(await s.acquireLease('idm', 'b', 60_000)).toBe(false);
    await s.releaseLease('idm', 'a');
    expect(await s.acquireLease('idm', 'b', 60_000)).toBe(true);
  });

  it('refuses a TTL that is not a positive integer, and every call after close', async () => {
    const s = new MemoryStore({ sweepIntervalMs: 0, now: () => T0 });
    for (const ttl of [0, -1, 1.5, Number.NaN]) await expect(s.acquireLease('idm', 'a', ttl)).rejects.toThrow(RangeError);
    await s.close();
    await expect(s.acquireLease('idm', 'a', 1_000)).rejects.toBeInstanceOf(SessionStoreError);
    await expect(s.releaseLease('idm', 'a')).rejects.toBeInstanceOf(SessionStoreError);
    await expect((async () => { for await (const _ of s.sessionIds()) void _; })()).rejects.toBeInstanceOf(SessionStoreError);
  });
});
