/** The in-memory data broker: expiry, revocation (docs/security.md S30), bounded memory, immutable records. */
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MemoryStore, type MemoryStoreOptions } from '../../../runtime/databroker/memory-store.ts';
import { SessionStoreError, newSessionId, type SessionRecord } from '../../../runtime/core/session-store.ts';
import { sessionRecord } from './records.ts';
import { storeContract } from './store-contract.ts';

const T0 = 1_700_000_000_000;

function clock(start = T0) {
  let now = start;
  return { now: () => now, advance: (ms: number) => void (now += ms), set: (ms: number) => void (now = ms) };
}

function record(over: Partial<SessionRecord> = {}): SessionRecord {
  return sessionRecord(T0, over);
}

const stores: MemoryStore[] = [];
function store(options: MemoryStoreOptions = {}): MemoryStore {
  const s = new MemoryStore({ sweepIntervalMs: 0, ...options });
  stores.push(s);
  return s;
}

afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  vi.useRealTimers();
});

describe('newSessionId', () => {
  it('is 32 random bytes in base64url, unique', () => {
    const ids = new Set(Array.from({ length: 1000 }, newSessionId));
    expect(ids.size).toBe(1000);
    for (const id of ids) {
      expect(id).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(Buffer.from(id, 'base64url').length).toBe(32);
    }
  });
});

describe('MemoryStore', () => {
  it('put / get / delete', async () => {
    const c = clock();
    const s = store({ now: c.now });
    const r = record();
    expect(await s.get(r.id)).toBeUndefined();
    await s.put(r);
    expect(await s.get(r.id)).toEqual(r);
    const replaced = { ...r, groups: ['ops'] };
    await s.put(replaced);
    expect(await s.get(r.id)).toEqual(replaced);
    expect(s.size).toBe(1);
    await s.delete(r.id);
    expect(await s.get(r.id)).toBeUndefined();
    expect(s.size).toBe(0);
    await expect(s.delete('never-stored')).resolves.toBeUndefined();
  });

  it('a record is gone at its expiry (injected clock) and dropped on access', async () => {
    const c = clock();
    const s = store({ now: c.now });
    const r = record({ expiresAtMs: T0 + 1000 });
    await s.put(r);
    c.set(T0 + 999);
    expect(await s.get(r.id)).toEqual(r);
    c.set(T0 + 1000);
    expect(await s.get(r.id)).toBeUndefined();
    expect(s.size).toBe(0);
  });

  it('does not store an already-expired record', async () => {
    const c = clock();
    const s = store({ now: c.now });
    const live = record();
    await s.put(live);
    await s.put({ ...live, expiresAtMs: T0 });
    expect(await s.get(live.id)).toBeUndefined();
    expect(s.size).toBe(0);
  });

  it('S30: a deleted id is never found again, cannot be put back, and stays revoked until its expiry', async () => {
    const c = clock();
    const s = store({ now: c.now });
    const r = record({ expiresAtMs: T0 + 10_000 });
    await s.put(r);
    expect(await s.isRevoked(r.id)).toBe(false);
    await s.delete(r.id);
    expect(await s.get(r.id)).toBeUndefined();
    expect(await s.isRevoked(r.id)).toBe(true);
    // A refresh racing the sign-out must not resurrect the session.
    await expect(s.put(r)).rejects.toThrow(SessionStoreError);
    await expect(s.put({ ...r, expiresAtMs: T0 + 99_000 })).rejects.toMatchObject({ code: 'SVC_ERR_SESSION_REVOKED' });
    expect(await s.get(r.id)).toBeUndefined();
    c.set(T0 + 9_999);
    expect(await s.isRevoked(r.id)).toBe(true);
    c.set(T0 + 10_000);
    expect(await s.isRevoked(r.id)).toBe(false);
    expect(s.revokedSize).toBe(0);
  });

  it('deleting an unknown or expired id leaves no revocation mark', async () => {
    const c = clock();
    const s = store({ now: c.now });
    const r = record({ expiresAtMs: T0 + 10 });
    await s.put(r);
    c.advance(10);
    await s.delete(r.id);
    await s.delete('unknown');
    expect(s.revokedSize).toBe(0);
    expect(await s.isRevoked('unknown')).toBe(false);
  });

  it('sweep drops expired records and expired revocation marks', async () => {
    const c = clock();
    const s = store({ now: c.now });
    const short = record({ expiresAtMs: T0 + 100 });
    const long = record({ expiresAtMs: T0 + 10_000 });
    const revoked = record({ expiresAtMs: T0 + 200 });
    for (const r of [short, long, revoked]) await s.put(r);
    await s.delete(revoked.id);
    expect(s.sweep()).toBe(0);
    c.set(T0 + 500);
    expect(s.sweep()).toBe(2);
    expect(s.size).toBe(1);
    expect(s.revokedSize).toBe(0);
    expect(await s.get(long.id)).toEqual(long);
  });

  it('the background sweep runs on its interval, is unref’d, and close() stops it', async () => {
    vi.useFakeTimers();
    const c = clock();
    const spy = vi.spyOn(globalThis, 'setInterval');
    const s = store({ now: c.now, sweepIntervalMs: 1000 });
    const timer = spy.mock.results[0]?.value as NodeJS.Timeout;
    spy.mockRestore();
    expect(timer.hasRef()).toBe(false);
    await s.put(record({ expiresAtMs: T0 + 500 }));
    c.advance(600);
    expect(s.size).toBe(1);
    vi.advanceTimersByTime(1000);
    expect(s.size).toBe(0);
    expect(vi.getTimerCount()).toBe(1);
    await s.close();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('never holds more than maxRecords: evicts the record closest to expiry, expired ones first', async () => {
    const c = clock();
    const s = store({ now: c.now, maxRecords: 3 });
    const a = record({ expiresAtMs: T0 + 3000 });
    const b = record({ expiresAtMs: T0 + 1000 });
    const d = record({ expiresAtMs: T0 + 2000 });
    for (const r of [a, b, d]) await s.put(r);
    // Replacing an existing id evicts nothing.
    await s.put({ ...a, userId: 'user-2' });
    expect(s.size).toBe(3);
    const e = record({ expiresAtMs: T0 + 5000 });
    await s.put(e);
    expect(s.size).toBe(3);
    expect(await s.get(b.id)).toBeUndefined();
    for (const r of [a, d, e]) expect(await s.get(r.id)).toBeDefined();
    // An expired record goes before a live one.
    c.set(T0 + 2500);
    const f = record({ expiresAtMs: T0 + 4000 });
    await s.put(f);
    expect(s.size).toBe(3);
    expect(await s.get(a.id)).toBeDefined();
    expect(await s.get(e.id)).toBeDefined();
    expect(await s.get(f.id)).toBeDefined();
  });

  it('property: size never exceeds maxRecords, and get never returns an expired record', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 5 }),
        fc.array(fc.record({ op: fc.constantFrom('put', 'delete', 'tick'), who: fc.nat({ max: 7 }), ttl: fc.integer({ min: -10, max: 100 }) }), { maxLength: 60 }),
        async (max, ops) => {
          const c = clock();
          const s = new MemoryStore({ now: c.now, maxRecords: max, sweepIntervalMs: 0 });
          const ids = Array.from({ length: 8 }, (_, i) => `id-${i}`);
          for (const { op, who, ttl } of ops) {
            const id = ids[who]!;
            if (op === 'tick') c.advance(ttl < 0 ? 0 : ttl);
            else if (op === 'delete') await s.delete(id);
            else await s.put(record({ id, expiresAtMs: c.now() + ttl })).catch((err: unknown) => expect(err).toMatchObject({ code: 'SVC_ERR_SESSION_REVOKED' }));
            expect(s.size).toBeLessThanOrEqual(max);
            expect(s.revokedSize).toBeLessThanOrEqual(max);
            for (const x of ids) {
              const got = await s.get(x);
              if (got !== undefined) expect(got.expiresAtMs).toBeGreaterThan(c.now());
            }
          }
          await s.close();
        },
      ),
      { numRuns: 200 },
    );
  });

  it('stores a deep-frozen copy: the caller mutating its object changes nothing', async () => {
    const s = store({ now: clock().now });
    const groups = ['admins'];
    const nested = { roles: ['a'] };
    const mine = { ...record(), groups, claims: { nested } };
    await s.put(mine);
    groups.push('root');
    nested.roles.push('root');
    (mine as { userId: string }).userId = 'attacker';
    const got = (await s.get(mine.id))!;
    expect(got.groups).toEqual(['admins']);
    expect(got.claims).toEqual({ nested: { roles: ['a'] } });
    expect(got.userId).toBe('user-1');
    expect(Object.isFrozen(got)).toBe(true);
    expect(Object.isFrozen(got.groups)).toBe(true);
    expect(Object.isFrozen((got.claims['nested'] as { roles: string[] }).roles)).toBe(true);
    expect(() => (got.groups as string[]).push('x')).toThrow(TypeError);
    expect((await s.get(mine.id))!.groups).toEqual(['admins']);
  });

  it('rejects invalid records with SVC_ERR_SESSION_RECORD_INVALID', async () => {
    const s = store({ now: clock().now });
    const bad = [
      { ...record(), id: '' },
      { ...record(), expiresAtMs: Number.NaN },
      { ...record(), createdAtMs: 1.5 },
      { ...record(), groups: [1] as unknown as string[] },
      { ...record(), claims: { f: () => 1 } },
    ];
    for (const r of bad) await expect(s.put(r)).rejects.toMatchObject({ name: 'SessionStoreError', code: 'SVC_ERR_SESSION_RECORD_INVALID' });
    expect(s.size).toBe(0);
  });

  it('after close() every call rejects with SVC_ERR_SESSION_STORE_CLOSED', async () => {
    const s = store({ now: clock().now });
    const r = record();
    await s.put(r);
    await s.close();
    expect(s.size).toBe(0);
    for (const call of [() => s.get(r.id), () => s.put(r), () => s.delete(r.id), () => s.isRevoked(r.id)]) {
      await expect(call()).rejects.toMatchObject({ code: 'SVC_ERR_SESSION_STORE_CLOSED' });
    }
    await expect(s.close()).resolves.toBeUndefined();
  });

  it('rejects nonsensical options', () => {
    expect(() => new MemoryStore({ maxRecords: 0 })).toThrow(RangeError);
    expect(() => new MemoryStore({ maxRecords: 1.5 })).toThrow(RangeError);
    expect(() => new MemoryStore({ sweepIntervalMs: -1 })).toThrow(RangeError);
  });
});

describe('MemoryStore one-time keys and change notifications', () => {
  it('consumeOnce answers true once per key until the mark expires', async () => {
    const c = clock();
    const s = store({ now: c.now });
    expect(await s.consumeOnce('handoff-1', T0 + 1_000)).toBe(true);
    expect(await s.consumeOnce('handoff-1', T0 + 1_000)).toBe(false);
    expect(await s.consumeOnce('handoff-2', T0 + 1_000)).toBe(true);
    c.advance(1_000);
    expect(await s.consumeOnce('handoff-1', T0 + 2_000)).toBe(true);
  });

  it('keeps at most maxRecords one-time marks', async () => {
    const s = store({ maxRecords: 2, now: () => T0 });
    for (let i = 0; i < 5; i++) expect(await s.consumeOnce(`k${i}`, T0 + 1_000 + i)).toBe(true);
    // The newest marks survive; the oldest were dropped to stay bounded.
    expect(await s.consumeOnce('k4', T0 + 9_000)).toBe(false);
  });

  it('tells listeners about replaced and deleted records, not new ones', async () => {
    const s = store({ now: () => T0 });
    const seen: string[] = [];
    const off = s.onChange((id) => seen.push(id));
    const r = record();
    await s.put(r);
    expect(seen).toEqual([]);
    await s.put({ ...r, groups: ['x'] });
    await s.delete(r.id);
    expect(seen).toEqual([r.id, r.id]);
    off();
    const r2 = record();
    await s.put(r2);
    await s.delete(r2.id);
    expect(seen).toHaveLength(2);
  });
});

describe('MemoryStore: the store contract', () => {
  storeContract({ open: async () => new MemoryStore({ sweepIntervalMs: 0 }) });
});
