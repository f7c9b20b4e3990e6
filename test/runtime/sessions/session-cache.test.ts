/**
 * The per-process session cache: a change in the store drops the session's entries; a flush (a
 * shared store's channel came back after a loss) drops every entry; no entry outlives its TTL.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { resolvedSession, SessionCache } from '../../../runtime/sessions/session-cache.ts';
import { MemoryStore } from '../../../runtime/databroker/memory-store.ts';
import { sessionRecord } from '../databroker/records.ts';

class FlushingStore extends MemoryStore {
  readonly #flush = new Set<() => void>();
  onFlush(listener: () => void): () => void {
    this.#flush.add(listener);
    return () => this.#flush.delete(listener);
  }
  flush(): void {
    for (const l of this.#flush) l();
  }
  get flushListeners(): number {
    return this.#flush.size;
  }
}

const T0 = 1_700_000_000_000;
const owner = {};
const stores: MemoryStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
});

describe('SessionCache', () => {
  it('drops a changed session, drops everything on a flush, and stops listening on close', async () => {
    const now = Date.now();
    const store = new FlushingStore({ sweepIntervalMs: 0 });
    stores.push(store);
    const cache = new SessionCache(store, { ttlMs: 30_000 });
    const a = sessionRecord(now);
    const b = sessionRecord(now);
    await store.put(a);
    await store.put(b);
    cache.set('cookie-a', owner, resolvedSession(a), now, a.expiresAtMs);
    cache.set('cookie-b', owner, resolvedSession(b), now, b.expiresAtMs);
    await store.put({ ...a, groups: ['changed'] });
    expect(cache.get('cookie-a', owner, now)).toBeUndefined();
    expect(cache.get('cookie-b', owner, now)).toBeDefined();
    store.flush();
    expect(cache.get('cookie-b', owner, now)).toBeUndefined();
    expect(store.flushListeners).toBe(1);
    cache.close();
    expect(store.flushListeners).toBe(0);
  });

  it('never answers past its TTL, even without a change from the store', () => {
    const store = new MemoryStore({ sweepIntervalMs: 0 });
    stores.push(store);
    const cache = new SessionCache(store, { ttlMs: 30_000 });
    const r = sessionRecord(T0);
    cache.set('cookie', owner, resolvedSession(r), T0, r.expiresAtMs);
    expect(cache.get('cookie', owner, T0 + 29_999)).toBeDefined();
    expect(cache.get('cookie', owner, T0 + 30_000)).toBeUndefined();
  });
});
