/**
 * The session-store outage grace's bookkeeping (runtime/sessions/outage-grace.ts, session-cache.ts): a
 * cache entry stands in for an unreachable store for at most the grace past its freshness, never
 * past its session's expiry, never after a change, a flush or a forget; the grace 0 is today's
 * cache; the outage is logged once; what is known of the store's reachability expires.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { OBSERVED_OUTAGE_MS, OutageGrace } from '../../../runtime/sessions/outage-grace.ts';
import { resolvedSession, SessionCache } from '../../../runtime/sessions/session-cache.ts';
import { MemoryStore } from '../../../runtime/databroker/memory-store.ts';
import { sessionRecord } from '../databroker/records.ts';

const T0 = 1_700_000_000_000;
const owner = {};
const stores: MemoryStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
});

class FlushingStore extends MemoryStore {
  readonly #flush = new Set<() => void>();
  readonly #change = new Set<(id: string) => void>();
  onFlush(listener: () => void): () => void {
    this.#flush.add(listener);
    return () => this.#flush.delete(listener);
  }
  override onChange(listener: (id: string) => void): () => void {
    this.#change.add(listener);
    return () => this.#change.delete(listener);
  }
  flush(): void {
    for (const l of this.#flush) l();
  }
  changed(id: string): void {
    for (const l of this.#change) l(id);
  }
}

function store(): FlushingStore {
  const s = new FlushingStore({ sweepIntervalMs: 0 });
  stores.push(s);
  return s;
}

describe('SessionCache with an outage grace', () => {
  it('answers fresh for the TTL, stale for the grace after it, then nothing', () => {
    const cache = new SessionCache(store(), { ttlMs: 30_000, graceMs: 20_000 });
    const r = sessionRecord(T0, { expiresAtMs: T0 + 3_600_000 });
    cache.set('cookie', owner, resolvedSession(r), T0, r.expiresAtMs);
    expect(cache.get('cookie', owner, T0 + 29_999)).toBeDefined();
    expect(cache.get('cookie', owner, T0 + 30_000)).toBeUndefined();
    // Not fresh any more, but kept: stale() hands it out until the grace after its freshness ends.
    expect(cache.stale('cookie', owner, T0 + 30_000)?.record.id).toBe(r.id);
    expect(cache.stale('cookie', owner, T0 + 49_999)?.record.id).toBe(r.id);
    expect(cache.stale('cookie', owner, T0 + 50_000)).toBeUndefined();
    // Dropped once past the grace, whatever comes later.
    expect(cache.stale('cookie', owner, T0 + 40_000)).toBeUndefined();
  });

  it('never past the session’s own expiry', () => {
    const cache = new SessionCache(store(), { ttlMs: 30_000, graceMs: 60_000 });
    const r = sessionRecord(T0, { expiresAtMs: T0 + 40_000 });
    cache.set('cookie', owner, resolvedSession(r), T0, r.expiresAtMs, r.expiresAtMs);
    expect(cache.stale('cookie', owner, T0 + 39_999)).toBeDefined();
    expect(cache.stale('cookie', owner, T0 + 40_000)).toBeUndefined();
    // Freshness cut short (an access token expiring sooner): the grace runs from there, still capped by the expiry.
    const s = sessionRecord(T0, { expiresAtMs: T0 + 3_600_000 });
    cache.set('other', owner, resolvedSession(s), T0, T0 + 1_000, T0 + 10_000);
    expect(cache.get('other', owner, T0 + 1_000)).toBeUndefined();
    expect(cache.stale('other', owner, T0 + 9_999)).toBeDefined();
    expect(cache.stale('other', owner, T0 + 10_000)).toBeUndefined();
  });

  it('a change, a flush, a forget or another generation drops the stale entry too', () => {
    const s = store();
    const cache = new SessionCache(s, { ttlMs: 1_000, graceMs: 30_000 });
    const [a, b, c, d] = [0, 1, 2, 3].map(() => sessionRecord(T0, { expiresAtMs: T0 + 3_600_000 }));
    for (const [k, r] of [['a', a], ['b', b], ['c', c], ['d', d]] as const) cache.set(k, owner, resolvedSession(r!), T0, r!.expiresAtMs);
    const later = T0 + 5_000;
    for (const k of ['a', 'b', 'c', 'd']) expect(cache.stale(k, owner, later)).toBeDefined();
    s.changed(a!.id);
    expect(cache.stale('a', owner, later)).toBeUndefined();
    cache.forget(b!.id);
    expect(cache.stale('b', owner, later)).toBeUndefined();
    expect(cache.stale('c', {}, later)).toBeUndefined();
    expect(cache.stale('c', owner, later)).toBeUndefined();
    s.flush();
    expect(cache.stale('d', owner, later)).toBeUndefined();
  });

  it('grace 0 keeps nothing past freshness (the cache without a grace)', () => {
    const cache = new SessionCache(store(), { ttlMs: 30_000, graceMs: 0 });
    const r = sessionRecord(T0, { expiresAtMs: T0 + 3_600_000 });
    cache.set('cookie', owner, resolvedSession(r), T0, r.expiresAtMs);
    expect(cache.stale('cookie', owner, T0 + 29_999)).toBeDefined();
    expect(cache.stale('cookie', owner, T0 + 30_000)).toBeUndefined();
    expect(() => new SessionCache(store(), { graceMs: -1 })).toThrow(RangeError);
  });

  // The model: the last set of a credential, unless a forget or a flush came after it, answers
  // fresh before min(until, expires, set + TTL) and stale before min(fresh + grace, expires).
  it('property: fresh and stale answers follow the model', () => {
    type Op = { kind: 'set'; key: number; until: number; expires: number } | { kind: 'get' | 'stale'; key: number } | { kind: 'forget'; key: number } | { kind: 'flush' };
    // Short and long spans alike, so boundaries (a grace ending at the expiry, at the TTL) are hit.
    const span = (max: number) => fc.oneof(fc.integer({ min: 1, max: 20 }), fc.integer({ min: 1, max }));
    const op = fc.oneof(
      fc.record({ kind: fc.constant('set' as const), key: fc.nat(3), until: span(80_000), expires: span(120_000) }),
      fc.record({ kind: fc.constantFrom('get' as const, 'stale' as const), key: fc.nat(3) }),
      fc.record({ kind: fc.constant('forget' as const), key: fc.nat(3) }),
      fc.record({ kind: fc.constant('flush' as const) }),
    );
    fc.assert(
      fc.property(fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 60_000 })), fc.array(fc.tuple(fc.oneof(fc.integer({ min: 0, max: 20 }), fc.integer({ min: 0, max: 40_000 })), op), { maxLength: 60 }), (graceMs, steps) => {
        const s = store();
        const ttlMs = 30_000;
        const cache = new SessionCache(s, { ttlMs, graceMs });
        const records = [0, 1, 2, 3].map(() => sessionRecord(T0, { expiresAtMs: T0 + 10_000_000 }));
        const model = new Map<number, { fresh: number; stale: number }>();
        let now = T0;
        for (const [dt, o] of steps as [number, Op][]) {
          now += dt;
          if (o.kind === 'set') {
            const until = now + o.until;
            const expires = now + o.expires;
            cache.set(`k${o.key}`, owner, resolvedSession(records[o.key]!), now, until, expires);
            const fresh = Math.min(until, expires, now + ttlMs);
            model.set(o.key, { fresh, stale: Math.max(fresh, Math.min(fresh + graceMs, expires)) });
          } else if (o.kind === 'forget') {
            cache.forget(records[o.key]!.id);
            model.delete(o.key);
          } else if (o.kind === 'flush') {
            s.flush();
            model.clear();
          } else {
            const m = model.get(o.key);
            const got = o.kind === 'get' ? cache.get(`k${o.key}`, owner, now) : cache.stale(`k${o.key}`, owner, now);
            const want = m !== undefined && now < (o.kind === 'get' ? m.fresh : m.stale);
            if (got !== undefined !== want) return false;
            if (got !== undefined && got.record.id !== records[o.key]!.id) return false;
            // Past its grace an entry is gone for good (the cache dropped it).
            if (m !== undefined && now >= m.stale) model.delete(o.key);
          }
        }
        cache.close();
        return true;
      }),
      { numRuns: 500 },
    );
  });
});

describe('OutageGrace', () => {
  it('logs the first request served from the grace once per outage (warn), and the end when the store answers', () => {
    const lines: Record<string, unknown>[] = [];
    let counted = 0;
    const g = new OutageGrace({ graceMs: 30_000, log: (e) => lines.push(e), observer: { servedStale: () => counted++ } });
    g.failed(T0);
    g.served();
    g.served();
    g.served();
    expect(counted).toBe(3);
    expect(g.servedTotal).toBe(3);
    expect(lines.filter((l) => l['level'] === 'warn')).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 'warn', graceMs: 30_000 });
    expect(String(lines[0]!['msg'])).toMatch(/outage grace/);
    g.answered(T0 + 1_000);
    expect(lines[1]).toMatchObject({ servedFromGrace: 3 });
    // The next outage logs again.
    g.failed(T0 + 2_000);
    g.served();
    expect(lines.filter((l) => l['level'] === 'warn')).toHaveLength(2);
    // An answer with no grace in use says nothing.
    g.answered(T0 + 3_000);
    g.answered(T0 + 4_000);
    expect(lines).toHaveLength(4);
  });

  it('a metric that throws never fails a request', () => {
    const g = new OutageGrace({
      graceMs: 1_000,
      observer: {
        servedStale: () => {
          throw new Error('boom');
        },
      },
    });
    expect(() => g.served()).not.toThrow();
  });

  it('knows the store unreachable from its own state at once, or from a failed lookup for a while', () => {
    let down = false;
    const g = new OutageGrace({ graceMs: 0, storeUnreachable: () => down });
    expect(g.unreachable(T0)).toBe(false);
    down = true;
    expect(g.unreachable(T0)).toBe(true);
    down = false;
    g.failed(T0);
    expect(g.unreachable(T0 + OBSERVED_OUTAGE_MS - 1)).toBe(true);
    // What a failed lookup says expires, so a store that came back is asked again.
    expect(g.unreachable(T0 + OBSERVED_OUTAGE_MS)).toBe(false);
    g.failed(T0 + 10_000);
    g.answered(T0 + 10_001);
    expect(g.unreachable(T0 + 10_002)).toBe(false);
  });

  it('refuses a grace out of range', () => {
    expect(() => new OutageGrace({ graceMs: -1 })).toThrow(RangeError);
    expect(() => new OutageGrace({ graceMs: 600_001 })).toThrow(RangeError);
    expect(() => new OutageGrace({ graceMs: Number.NaN })).toThrow(RangeError);
    expect(new OutageGrace({ graceMs: 0 }).graceMs).toBe(0);
  });
});
