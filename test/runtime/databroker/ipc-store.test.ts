/**
 * The cluster session store (docs/scale-out.md: one data broker, in the primary): WorkerStores wired to
 * serveStoreToWorkers through an in-memory channel that delivers asynchronously, in order, and as
 * JSON, like node:cluster IPC. No processes.
 */
import { EventEmitter } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import {
  WorkerStore,
  serveStoreToWorkers,
  type FromPrimaryStore,
  type StoreClusterPort,
  type StoreRequest,
  type StoreWorkerPort,
  type WorkerChannel,
  type WorkerStoreOptions,
} from '../../../runtime/databroker/ipc-store.ts';
import { MemoryStore } from '../../../runtime/databroker/memory-store.ts';
import { SessionStoreError, type SessionRecord, type SessionStoreErrorCode } from '../../../runtime/core/session-store.ts';
import { sessionRecord } from './records.ts';

function record(over: Partial<SessionRecord> = {}): SessionRecord {
  return sessionRecord(Date.now(), over);
}

/** What crosses node:cluster's default ('json') IPC serialization. */
const wire = <T,>(m: T): T => JSON.parse(JSON.stringify(m)) as T;

/** The primary's node:cluster, reduced to what serveStoreToWorkers uses. */
class FakeCluster extends EventEmitter implements StoreClusterPort {
  readonly workers: Record<string, StoreWorkerPort> = {};
  #next = 1;

  /** Forks a fake worker: returns its end of the channel and a switch to cut it. */
  fork(): { channel: WorkerChannel & { readonly sent: StoreRequest[] }; disconnect(): void; readonly port: StoreWorkerPort } {
    const key = String(this.#next++);
    const toWorker = new Set<(m: unknown) => void>();
    const onClose = new Set<() => void>();
    let connected = true;
    const port: StoreWorkerPort = {
      isConnected: () => connected,
      send: (message: FromPrimaryStore, callback: (error: Error | null) => void) => {
        if (!connected) return callback(new Error('channel closed'));
        const m = wire(message);
        setImmediate(() => {
          for (const l of toWorker) l(m);
        });
        callback(null);
      },
    };
    this.workers[key] = port;
    const sent: StoreRequest[] = [];
    const channel = {
      sent,
      send: (message: StoreRequest, onError: (error: Error) => void) => {
        if (!connected) return onError(new Error('channel closed'));
        sent.push(message);
        const m = wire(message);
        setImmediate(() => this.emit('message', port, m));
      },
      onMessage: (listener: (m: unknown) => void) => {
        toWorker.add(listener);
        return () => void toWorker.delete(listener);
      },
      onClose: (listener: () => void) => {
        onClose.add(listener);
        return () => void onClose.delete(listener);
      },
    };
    return {
      channel,
      port,
      disconnect: () => {
        connected = false;
        delete this.workers[key];
        for (const l of onClose) l();
      },
    };
  }
}

/** A channel to a primary that never answers; `deliver` plays a message from the primary. */
function silentChannel() {
  const listeners = new Set<(m: unknown) => void>();
  const closers = new Set<() => void>();
  const sent: StoreRequest[] = [];
  const channel: WorkerChannel = {
    send: (m) => void sent.push(m),
    onMessage: (l) => {
      listeners.add(l);
      return () => void listeners.delete(l);
    },
    onClose: (l) => {
      closers.add(l);
      return () => void closers.delete(l);
    },
  };
  return {
    channel,
    sent,
    listeners,
    deliver: (m: unknown) => {
      for (const l of listeners) l(m);
    },
    close: () => {
      for (const l of closers) l();
    },
  };
}

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function primary() {
  const cluster = new FakeCluster();
  const store = new MemoryStore({ sweepIntervalMs: 0 });
  const service = serveStoreToWorkers(store, cluster);
  cleanups.push(() => store.close(), () => service.close());
  const worker = (options: WorkerStoreOptions = {}) => {
    const link = cluster.fork();
    const ws = new WorkerStore({ timeoutMs: 1_000, ...options, channel: link.channel });
    cleanups.push(() => ws.close());
    return { ws, ...link };
  };
  return { cluster, store, service, worker };
}

async function rejectsWith(p: Promise<unknown>, code: SessionStoreErrorCode): Promise<SessionStoreError> {
  const err = await p.then(
    () => {
      throw new Error(`resolved; expected a rejection with ${code}`);
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SessionStoreError);
  expect((err as SessionStoreError).code).toBe(code);
  return err as SessionStoreError;
}

describe('WorkerStore ↔ serveStoreToWorkers', () => {
  it('round-trips get, put, delete, isRevoked and consumeOnce with the primary’s MemoryStore', async () => {
    const { store, worker } = primary();
    const { ws } = worker();
    const r = record();

    expect(await ws.get(r.id)).toBeUndefined();
    await ws.put(r);
    expect(await store.get(r.id)).toEqual(r);
    const got = await ws.get(r.id);
    expect(got).toEqual(r);
    expect(Object.isFrozen(got)).toBe(true);
    expect(Object.isFrozen(got!.claims['nested'])).toBe(true);
    expect(await ws.isRevoked(r.id)).toBe(false);

    await ws.delete(r.id);
    expect(await ws.get(r.id)).toBeUndefined();
    expect(await store.get(r.id)).toBeUndefined();
    expect(await ws.isRevoked(r.id)).toBe(true);

    const until = Date.now() + 60_000;
    expect(await ws.consumeOnce('handoff-1', until)).toBe(true);
    expect(await ws.consumeOnce('handoff-1', until)).toBe(false);
    expect(ws.pendingCount).toBe(0);
  });

  it('round-trips devices with the primary’s store, tells every worker of an approval or revocation, and keeps the store’s refusals', async () => {
    const { store, worker } = primary();
    const a = worker();
    const b = worker();
    const d = { credentialId: 'cred-ipc-AAAAAAAAAAAAAAAA', userId: 'u1', type: 'any' as const, publicKey: 'pQECAyYg', counter: 3, approved: false, transports: ['usb'], createdAtMs: 1 };
    await a.ws.addDevice(d);
    expect(await store.getDevice(d.credentialId)).toEqual(d);
    expect(await b.ws.getDevice(d.credentialId)).toEqual(d);
    expect((await b.ws.listDevices('u1')).map((x) => x.credentialId)).toEqual([d.credentialId]);
    expect(await b.ws.listDevices('u2')).toEqual([]);
    await expect(b.ws.addDevice({ ...d, userId: 'u2' })).rejects.toMatchObject({ code: 'SVC_ERR_DEVICE_EXISTS' });
    const heard: string[] = [];
    b.ws.onDeviceChange((id) => heard.push(id));
    expect(await a.ws.approveDevice(d.credentialId)).toBe(true);
    await expect.poll(() => heard).toEqual([d.credentialId]);
    expect(await a.ws.advanceCounter(d.credentialId, 4)).toBe('advanced');
    expect(await b.ws.advanceCounter(d.credentialId, 4)).toBe('regressed');
    expect(await a.ws.revokeDevice(d.credentialId)).toBe(true);
    await expect.poll(() => heard).toEqual([d.credentialId, d.credentialId]);
    expect(await b.ws.getDevice(d.credentialId)).toBeUndefined();
    expect(await b.ws.revokeDevice(d.credentialId)).toBe(false);
  });

  it('sees what the primary’s store holds, whoever wrote it', async () => {
    const { store, worker } = primary();
    const { ws } = worker();
    const { email: _drop, ...withoutEmail } = record();
    await store.put(withoutEmail);
    expect(await ws.get(withoutEmail.id)).toEqual(withoutEmail);
  });

  it('keeps a revoked id refused through the channel (put after delete: SVC_ERR_SESSION_REVOKED)', async () => {
    const { worker } = primary();
    const a = worker().ws;
    const b = worker().ws;
    const r = record();
    await a.put(r);
    await a.delete(r.id);
    const err = await rejectsWith(b.put(r), 'SVC_ERR_SESSION_REVOKED');
    expect(err.message).toBe('session was revoked');
    await rejectsWith(a.put({ ...r, userId: 'someone-else' }), 'SVC_ERR_SESSION_REVOKED');
    expect(await b.get(r.id)).toBeUndefined();
  });

  it('keeps the primary’s other error codes (invalid record, closed store)', async () => {
    const { store, worker } = primary();
    const { ws } = worker();
    await rejectsWith(ws.put(record({ id: '' })), 'SVC_ERR_SESSION_RECORD_INVALID');
    await rejectsWith(ws.put(record({ expiresAtMs: Number.NaN })), 'SVC_ERR_SESSION_RECORD_INVALID');
    await store.close();
    await rejectsWith(ws.get('x'), 'SVC_ERR_SESSION_STORE_CLOSED');
  });

  it('makes consumeOnce single-use across two workers sharing the primary', async () => {
    const { worker } = primary();
    const a = worker().ws;
    const b = worker().ws;
    const until = Date.now() + 60_000;
    const answers = await Promise.all([a.consumeOnce('k', until), b.consumeOnce('k', until), a.consumeOnce('k', until), b.consumeOnce('k', until)]);
    expect(answers.filter(Boolean)).toHaveLength(1);
    expect(await b.consumeOnce('k', until)).toBe(false);
    expect(await b.consumeOnce('other', until)).toBe(true);
  });

  it('tells every worker (one forked later too) about a delete made by one, before the deleter’s reply', async () => {
    const { worker } = primary();
    const a = worker().ws;
    const b = worker().ws;
    const r = record();
    await a.put(r);
    const c = worker().ws; // forked after the service started
    const heard: string[] = [];
    a.onChange((id) => heard.push(`a:${id}`));
    b.onChange((id) => heard.push(`b:${id}`));
    c.onChange((id) => heard.push(`c:${id}`));
    c.onChange(() => {
      throw new Error('a failing listener does not stop the others');
    });

    let heardBeforeReply = false;
    await a.delete(r.id).then(() => (heardBeforeReply = heard.includes(`a:${r.id}`)));
    expect(heardBeforeReply).toBe(true);
    await new Promise((resolve) => setImmediate(resolve));
    expect(heard.sort()).toEqual([`a:${r.id}`, `b:${r.id}`, `c:${r.id}`]);
  });

  it('announces a replaced record too, and stops calling a removed listener', async () => {
    const { worker } = primary();
    const { ws } = worker();
    const r = record();
    const heard: string[] = [];
    const off = ws.onChange((id) => heard.push(id));
    await ws.put(r);
    await ws.put({ ...r, groups: ['changed'] });
    await new Promise((resolve) => setImmediate(resolve));
    expect(heard).toEqual([r.id]);
    off();
    await ws.put({ ...r, groups: ['again'] });
    await new Promise((resolve) => setImmediate(resolve));
    expect(heard).toEqual([r.id]);
  });

  it('skips dead workers when broadcasting', async () => {
    const { worker } = primary();
    const a = worker();
    const b = worker();
    const r = record();
    await a.ws.put(r);
    b.disconnect();
    const heard: string[] = [];
    a.ws.onChange((id) => heard.push(id));
    await a.ws.delete(r.id);
    expect(heard).toEqual([r.id]);
  });

  it('stops answering and broadcasting after close(), leaving the store open', async () => {
    const { store, service, worker } = primary();
    const { ws } = worker({ timeoutMs: 50 });
    const r = record();
    await store.put(r);
    const heard: string[] = [];
    ws.onChange((id) => heard.push(id));
    service.close();
    service.close(); // idempotent
    await rejectsWith(ws.get(r.id), 'SVC_ERR_SESSION_STORE_UNAVAILABLE');
    await store.delete(r.id);
    await new Promise((resolve) => setImmediate(resolve));
    expect(heard).toEqual([]);
    expect(await store.isRevoked(r.id)).toBe(true);
  });
});

describe('WorkerStore failures (fail closed)', () => {
  it('rejects with SVC_ERR_SESSION_STORE_UNAVAILABLE when the primary never answers', async () => {
    const s = silentChannel();
    const ws = new WorkerStore({ channel: s.channel, timeoutMs: 30 });
    cleanups.push(() => ws.close());
    const started = Date.now();
    const err = await rejectsWith(ws.get('id'), 'SVC_ERR_SESSION_STORE_UNAVAILABLE');
    expect(err.message).toMatch(/did not answer get within 30 ms/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(25);
    expect(ws.pendingCount).toBe(0);
    // A reply that comes after the timeout is ignored.
    s.deliver({ type: 'store-reply', id: s.sent[0]!.id, ok: true, value: null });
  });

  it('close() rejects pending calls with SVC_ERR_SESSION_STORE_CLOSED, and every later call', async () => {
    const s = silentChannel();
    const ws = new WorkerStore({ channel: s.channel });
    const pending = [ws.get('a'), ws.put(record()), ws.consumeOnce('k', Date.now() + 1000)];
    expect(ws.pendingCount).toBe(3);
    await ws.close();
    for (const p of pending) await rejectsWith(p, 'SVC_ERR_SESSION_STORE_CLOSED');
    expect(ws.pendingCount).toBe(0);
    expect(s.listeners.size).toBe(0);
    await rejectsWith(ws.delete('a'), 'SVC_ERR_SESSION_STORE_CLOSED');
    await ws.close(); // idempotent
  });

  it('rejects pending and later calls when the channel closes', async () => {
    const { worker } = primary();
    const w = worker();
    const r = record();
    await w.ws.put(r);
    w.disconnect();
    await rejectsWith(w.ws.get(r.id), 'SVC_ERR_SESSION_STORE_UNAVAILABLE');

    const s = silentChannel();
    const ws = new WorkerStore({ channel: s.channel });
    cleanups.push(() => ws.close());
    const p = ws.get('a');
    s.close();
    await rejectsWith(p, 'SVC_ERR_SESSION_STORE_UNAVAILABLE');
    await rejectsWith(ws.isRevoked('a'), 'SVC_ERR_SESSION_STORE_UNAVAILABLE');
  });

  it('rejects at once when the send throws or reports an error', async () => {
    const base = silentChannel().channel;
    const throwing = new WorkerStore({ channel: { ...base, send: () => { throw new Error('EPIPE'); } } });
    const failing = new WorkerStore({ channel: { ...base, send: (_m, onError) => setImmediate(() => onError(new Error('ERR_IPC_CHANNEL_CLOSED'))) } });
    cleanups.push(() => throwing.close(), () => failing.close());
    await rejectsWith(throwing.get('a'), 'SVC_ERR_SESSION_STORE_UNAVAILABLE');
    const err = await rejectsWith(failing.get('a'), 'SVC_ERR_SESSION_STORE_UNAVAILABLE');
    expect(err.message).toMatch(/ERR_IPC_CHANNEL_CLOSED/);
    expect(throwing.pendingCount + failing.pendingCount).toBe(0);
  });

  it('refuses replies it does not understand', async () => {
    const s = silentChannel();
    const ws = new WorkerStore({ channel: s.channel });
    cleanups.push(() => ws.close());
    const last = () => s.sent.at(-1)!.id;

    const wrongRecord = ws.get('mine');
    s.deliver({ type: 'store-reply', id: last(), ok: true, value: { ...record(), id: 'someone-else' } });
    await rejectsWith(wrongRecord, 'SVC_ERR_SESSION_STORE_UNAVAILABLE');

    const notBoolean = ws.consumeOnce('k', Date.now() + 1000);
    s.deliver({ type: 'store-reply', id: last(), ok: true, value: 'yes' });
    await rejectsWith(notBoolean, 'SVC_ERR_SESSION_STORE_UNAVAILABLE');

    const unknownCode = ws.delete('a');
    s.deliver({ type: 'store-reply', id: last(), ok: false, code: 'SVC_ERR_SOMETHING_ELSE', message: 'x' });
    await rejectsWith(unknownCode, 'SVC_ERR_SESSION_STORE_UNAVAILABLE');

    const missing = ws.get('a');
    s.deliver({ type: 'store-reply', id: last(), ok: true });
    expect(await missing).toBeUndefined();
  });

  it('ignores other message types and replies to other ids', async () => {
    const s = silentChannel();
    const ws = new WorkerStore({ channel: s.channel, timeoutMs: 1_000 });
    cleanups.push(() => ws.close());
    const heard: string[] = [];
    ws.onChange((id) => heard.push(id));
    const p = ws.isRevoked('a');
    const id = s.sent[0]!.id;
    for (const m of [null, 'plan', { type: 'plan', text: '{}' }, { type: 'store-reply', id: id + 1000, ok: true, value: true }, { type: 'store-changed', sessionId: 7 }]) s.deliver(m);
    expect(ws.pendingCount).toBe(1);
    expect(heard).toEqual([]);
    s.deliver({ type: 'store-reply', id, ok: true, value: true });
    expect(await p).toBe(true);
  });

  it('bounds the requests pending at once', async () => {
    const s = silentChannel();
    const ws = new WorkerStore({ channel: s.channel, maxPending: 2 });
    const held = [ws.get('a'), ws.get('b')];
    await rejectsWith(ws.get('c'), 'SVC_ERR_SESSION_STORE_UNAVAILABLE');
    await ws.close();
    for (const p of held) await rejectsWith(p, 'SVC_ERR_SESSION_STORE_CLOSED');
  });

  it('validates its options', () => {
    const { channel } = silentChannel();
    expect(() => new WorkerStore({ channel, timeoutMs: 0 })).toThrow(RangeError);
    expect(() => new WorkerStore({ channel, maxPending: 1.5 })).toThrow(RangeError);
  });
});

describe('serveStoreToWorkers request handling', () => {
  function raw() {
    const { cluster, store } = primary();
    const link = cluster.fork();
    const replies: unknown[] = [];
    link.channel.onMessage((m) => replies.push(m));
    const ask = async (message: unknown) => {
      cluster.emit('message', link.port, wire(message));
      await new Promise((resolve) => setTimeout(resolve, 5));
      return replies.splice(0);
    };
    return { store, ask };
  }

  it('answers malformed requests with an error and makes no store call', async () => {
    const { store, ask } = raw();
    expect(await ask({ type: 'store', id: 1, op: 'drop', args: [] })).toEqual([{ type: 'store-reply', id: 1, ok: false, code: 'SVC_ERR_SESSION_STORE_UNAVAILABLE', message: 'malformed store request: unknown op "drop"' }]);
    expect(await ask({ type: 'store', id: 2, op: 'get', args: 'x' })).toMatchObject([{ id: 2, ok: false, code: 'SVC_ERR_SESSION_STORE_UNAVAILABLE' }]);
    expect(await ask({ type: 'store', id: 3, op: 'delete', args: [42] })).toMatchObject([{ id: 3, ok: false, code: 'SVC_ERR_SESSION_STORE_UNAVAILABLE' }]);
    expect(await ask({ type: 'store', id: 4, op: 'put', args: ['not a record'] })).toMatchObject([{ id: 4, ok: false, code: 'SVC_ERR_SESSION_STORE_UNAVAILABLE' }]);
    expect(await ask({ type: 'store', id: 5, op: 'consumeOnce', args: ['k'] })).toMatchObject([{ id: 5, ok: false, code: 'SVC_ERR_SESSION_STORE_UNAVAILABLE' }]);
    expect(store.size).toBe(0);
    expect(await store.consumeOnce('k', Date.now() + 1000)).toBe(true);
  });

  it('ignores plan messages and requests without a usable id', async () => {
    const { ask } = raw();
    expect(await ask({ type: 'ready' })).toEqual([]);
    expect(await ask({ type: 'listening', port: 1 })).toEqual([]);
    expect(await ask({ type: 'store', id: 'x', op: 'get', args: ['a'] })).toEqual([]);
    expect(await ask({ type: 'store', op: 'get', args: ['a'] })).toEqual([]);
  });

  it('answers isRevoked with false for a store without it', async () => {
    const cluster = new FakeCluster();
    const inner = new MemoryStore({ sweepIntervalMs: 0 });
    const { isRevoked: _no, ...rest } = {
      get: inner.get.bind(inner),
      put: inner.put.bind(inner),
      delete: inner.delete.bind(inner),
      isRevoked: inner.isRevoked.bind(inner),
      consumeOnce: inner.consumeOnce.bind(inner),
      onChange: inner.onChange.bind(inner),
      close: inner.close.bind(inner),
    };
    const service = serveStoreToWorkers(rest, cluster);
    const ws = new WorkerStore({ channel: cluster.fork().channel });
    cleanups.push(() => inner.close(), () => service.close(), () => ws.close());
    expect(await ws.isRevoked('a')).toBe(false);
  });
});

describe('store flushes across the cluster channel', () => {
  /** The primary's store, telling `onFlush` listeners when told to (a Redis store does after its channel came back). */
  class FlushingStore extends MemoryStore {
    readonly #flush = new Set<() => void>();
    onFlush(listener: () => void): () => void {
      this.#flush.add(listener);
      return () => this.#flush.delete(listener);
    }
    flush(): void {
      for (const l of this.#flush) l();
    }
  }

  it('every worker hears a flush of the primary’s store, until the service or the worker closes', async () => {
    const cluster = new FakeCluster();
    const store = new FlushingStore({ sweepIntervalMs: 0 });
    const service = serveStoreToWorkers(store, cluster);
    const a = new WorkerStore({ channel: cluster.fork().channel });
    const b = new WorkerStore({ channel: cluster.fork().channel });
    cleanups.push(() => store.close(), () => service.close(), () => a.close(), () => b.close());
    let heardA = 0;
    let heardB = 0;
    const offA = a.onFlush(() => heardA++);
    b.onFlush(() => heardB++);
    store.flush();
    await new Promise((resolve) => setImmediate(resolve));
    expect([heardA, heardB]).toEqual([1, 1]);
    offA();
    store.flush();
    await new Promise((resolve) => setImmediate(resolve));
    expect([heardA, heardB]).toEqual([1, 2]);
    service.close();
    store.flush();
    await new Promise((resolve) => setImmediate(resolve));
    expect([heardA, heardB]).toEqual([1, 2]);
  });
});
