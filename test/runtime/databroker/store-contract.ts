/**
 * The behaviour every SessionStore shares (memory, Redis): one suite, run by each store's test
 * file, on the real clock with short lifetimes (a Redis TTL runs on the server's clock).
 * `open()` returns a fresh, empty store; `peer()`, when the store can be shared, another instance
 * on the same backend (another svc process).
 */
import { afterEach, expect, it } from 'vitest';
import { isSessionDirectory, type SessionRecord, type SessionStore } from '../../../runtime/core/session-store.ts';
import { sessionRecord } from './records.ts';

export interface ContractTarget {
  readonly open: () => Promise<SessionStore>;
  readonly peer?: () => Promise<SessionStore>;
}

/** Waits until `check` holds (a loaded machine may be slow; never a fixed sleep as the assertion). */
export async function eventually(check: () => Promise<boolean> | boolean, timeoutMs = 5_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

function record(over: Partial<SessionRecord> = {}): SessionRecord {
  return sessionRecord(Date.now(), over);
}

/** Registers the contract tests (call inside a describe). */
export function storeContract(target: ContractTarget): void {
  const opened: SessionStore[] = [];
  const open = async () => {
    const s = await target.open();
    opened.push(s);
    return s;
  };
  const peer = async () => {
    const s = await target.peer!();
    opened.push(s);
    return s;
  };
  afterEach(async () => {
    for (const s of opened.splice(0)) await s.close();
  });

  it('contract: put / get / replace / delete', async () => {
    const s = await open();
    const r = record();
    expect(await s.get(r.id)).toBeUndefined();
    await s.put(r);
    expect(await s.get(r.id)).toEqual(r);
    const replaced = { ...r, groups: ['ops'] };
    await s.put(replaced);
    expect(await s.get(r.id)).toEqual(replaced);
    await s.delete(r.id);
    expect(await s.get(r.id)).toBeUndefined();
    await expect(s.delete('never-stored')).resolves.toBeUndefined();
  });

  it('contract: a record is gone at its expiry; an expired record is not stored', async () => {
    const s = await open();
    const r = record({ expiresAtMs: Date.now() + 300 });
    await s.put(r);
    expect(await s.get(r.id)).toEqual(r);
    await eventually(async () => (await s.get(r.id)) === undefined);
    const live = record();
    await s.put(live);
    await s.put({ ...live, expiresAtMs: Date.now() - 1 });
    expect(await s.get(live.id)).toBeUndefined();
  });

  it('contract S30: a deleted id is refused (get, put, isRevoked) until the record would have expired', async () => {
    const s = await open();
    const r = record({ expiresAtMs: Date.now() + 1_500 });
    await s.put(r);
    expect(await s.isRevoked?.(r.id)).toBe(false);
    await s.delete(r.id);
    expect(await s.get(r.id)).toBeUndefined();
    expect(await s.isRevoked?.(r.id)).toBe(true);
    await expect(s.put(r)).rejects.toMatchObject({ code: 'SVC_ERR_SESSION_REVOKED' });
    await expect(s.put({ ...r, expiresAtMs: Date.now() + 99_000 })).rejects.toMatchObject({ code: 'SVC_ERR_SESSION_REVOKED' });
    expect(await s.get(r.id)).toBeUndefined();
    await eventually(async () => (await s.isRevoked?.(r.id)) === false);
    await s.put({ ...r, expiresAtMs: Date.now() + 60_000 });
    expect(await s.get(r.id)).toBeDefined();
  });

  it('contract: deleting an unknown id leaves no revocation mark', async () => {
    const s = await open();
    await s.delete('unknown');
    expect(await s.isRevoked?.('unknown')).toBe(false);
  });

  it('contract: consumeOnce is true once per key until the mark expires', async () => {
    const s = await open();
    const k = `handoff-${Math.random()}`;
    expect(await s.consumeOnce(k, Date.now() + 300)).toBe(true);
    expect(await s.consumeOnce(k, Date.now() + 300)).toBe(false);
    expect(await s.consumeOnce(`${k}-2`, Date.now() + 300)).toBe(true);
    await eventually(async () => s.consumeOnce(k, Date.now() + 60_000));
    expect(await s.consumeOnce(k, Date.now() + 60_000)).toBe(false);
  });

  it('contract: listeners hear replaced and deleted records, not new ones', async () => {
    const s = await open();
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
    await s.put({ ...r2, groups: ['y'] });
    await s.delete(r2.id);
    expect(seen).toHaveLength(2);
  });

  it('contract: invalid records are refused with SVC_ERR_SESSION_RECORD_INVALID', async () => {
    const s = await open();
    const bad = [
      { ...record(), id: '' },
      { ...record(), expiresAtMs: Number.NaN },
      { ...record(), createdAtMs: 1.5 },
      { ...record(), groups: [1] as unknown as string[] },
      { ...record(), claims: { f: () => 1 } },
    ];
    for (const r of bad) await expect(s.put(r)).rejects.toMatchObject({ name: 'SessionStoreError', code: 'SVC_ERR_SESSION_RECORD_INVALID' });
  });

  it('contract: records come back frozen', async () => {
    const s = await open();
    const r = record();
    await s.put(r);
    const got = (await s.get(r.id))!;
    expect(Object.isFrozen(got)).toBe(true);
    expect(Object.isFrozen(got.groups)).toBe(true);
  });

  it('contract: after close() every call rejects with SVC_ERR_SESSION_STORE_CLOSED', async () => {
    const s = await target.open();
    const r = record();
    await s.put(r);
    await s.close();
    for (const call of [() => s.get(r.id), () => s.put(r), () => s.delete(r.id), () => s.consumeOnce('k', Date.now() + 1000)]) {
      await expect(call()).rejects.toMatchObject({ code: 'SVC_ERR_SESSION_STORE_CLOSED' });
    }
    await expect(s.close()).resolves.toBeUndefined();
  });

  it('contract (directory): sessionIds lists the live sessions; a lease has one holder until it lapses', async () => {
    const s = await open();
    // Every store svc opens serves the identity manager (runtime/sessions/).
    if (!isSessionDirectory(s)) throw new Error('the store does not implement SessionDirectory');
    const live = [record(), record()];
    const gone = record();
    for (const r of [...live, gone]) await s.put(r);
    await s.delete(gone.id);
    const ids: string[] = [];
    for await (const id of s.sessionIds()) ids.push(id);
    // A shared backend may hold other tests' sessions too: these two are listed, the deleted one is not.
    for (const r of live) expect(ids).toContain(r.id);
    expect(ids).not.toContain(gone.id);
    expect(new Set(ids).size).toBe(ids.length);
    const lease = `lease-${Math.random()}`;
    expect(await s.acquireLease(lease, 'a', 400)).toBe(true);
    expect(await s.acquireLease(lease, 'b', 400)).toBe(false);
    expect(await s.acquireLease(lease, 'a', 400)).toBe(true);
    await s.releaseLease(lease, 'b');
    expect(await s.acquireLease(lease, 'b', 400)).toBe(false);
    await s.releaseLease(lease, 'a');
    expect(await s.acquireLease(lease, 'b', 60_000)).toBe(true);
    const lapsing = `lease-${Math.random()}`;
    expect(await s.acquireLease(lapsing, 'a', 200)).toBe(true);
    await eventually(() => s.acquireLease(lapsing, 'b', 60_000));
  });

  if (target.peer) {
    it('contract (shared): two instances racing on one hand-off: exactly one wins', async () => {
      const a = await open();
      const b = await peer();
      for (let round = 0; round < 5; round++) {
        const k = `handoff-${round}-${Math.random()}`;
        const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? a : b).consumeOnce(k, Date.now() + 60_000)));
        expect(answers.filter((x) => x)).toHaveLength(1);
      }
    });

    it('contract (shared): a change on one instance reaches the other instance’s listeners; a session put on one is read on the other', async () => {
      const a = await open();
      const b = await peer();
      const seen: string[] = [];
      b.onChange((id) => seen.push(id));
      const r = record();
      await a.put(r);
      expect(await b.get(r.id)).toEqual(r);
      await a.put({ ...r, groups: ['z'] });
      await eventually(() => seen.length === 1, 1_000 + 4_000);
      await b.delete(r.id);
      expect(await a.get(r.id)).toBeUndefined();
      await expect(a.put(r)).rejects.toMatchObject({ code: 'SVC_ERR_SESSION_REVOKED' });
      // b hears its own delete at once, as one notification (not again through the channel).
      expect(seen).toEqual([r.id, r.id]);
    });

    it('contract (shared): a lease taken on one instance is refused on the other', async () => {
      const a = await open();
      const b = await peer();
      if (!isSessionDirectory(a) || !isSessionDirectory(b)) throw new Error('the store does not implement SessionDirectory');
      const lease = `lease-${Math.random()}`;
      const answers = await Promise.all([a.acquireLease(lease, 'a', 60_000), b.acquireLease(lease, 'b', 60_000)]);
      expect(answers.filter((x) => x)).toHaveLength(1);
    });
  }
}
