/**
 * What a store knows of its own reachability, at once (SessionStore.unreachable / onReachability:
 * the outage grace's "no sign-in into a dead store", runtime/sessions/outage-grace.ts), and a sign-out the
 * store could not record still reaching the caches (onChange):
 * - the Redis store against a real redis-server: down when its connection goes, back when it returns;
 * - a cluster worker's store follows the primary's broadcasts, and a closed channel reads as down;
 * - a gRPC data broker client is down from the loss of its Watch stream until the broker answers again;
 * - a failed delete tells the listeners of the process (and, through the primary, of every worker).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveStoreToWorkers, WorkerStore, type FromPrimaryStore, type StoreClusterPort, type StoreRequest, type StoreWorkerPort, type WorkerChannel } from '../../../runtime/databroker/ipc-store.ts';
import { MemoryStore } from '../../../runtime/databroker/memory-store.ts';
import { RedisStore } from '../../../runtime/databroker/redis-store.ts';
import { SessionStoreError } from '../../../runtime/core/session-store.ts';
import { startRedis, type RedisProcess } from '../../support/redis-server.ts';
import { describeWithCommands } from '../../support/system.ts';
import { grpcStore, startBroker } from './grpc-support.ts';
import { sessionRecord } from './records.ts';
import { eventually } from './store-contract.ts';
import { storage, STORE_SECRET } from './redis-support.ts';

/** A memory store that can be told it lost its backend, and whose deletes then fail as unreachable. */
class SwitchableStore extends MemoryStore {
  #down = false;
  readonly #reach = new Set<(unreachable: boolean) => void>();
  readonly #change = new Set<(id: string) => void>();
  set(down: boolean): void {
    this.#down = down;
    for (const l of this.#reach) l(down);
  }
  unreachable(): boolean {
    return this.#down;
  }
  onReachability(listener: (unreachable: boolean) => void): () => void {
    this.#reach.add(listener);
    return () => this.#reach.delete(listener);
  }
  override onChange(listener: (id: string) => void): () => void {
    this.#change.add(listener);
    const off = super.onChange(listener);
    return () => {
      this.#change.delete(listener);
      off();
    };
  }
  override async delete(id: string): Promise<void> {
    if (!this.#down) return super.delete(id);
    // What the Redis store does (redis-store.ts): its own listeners hear the attempt.
    for (const l of this.#change) l(id);
    throw new SessionStoreError('SVC_ERR_SESSION_STORE_UNAVAILABLE', 'down');
  }
}

/** One primary and one worker joined by an in-memory IPC channel (JSON on the wire, as node:cluster's). */
function joined(store: SwitchableStore) {
  const toWorker = new Set<(m: unknown) => void>();
  const closers = new Set<() => void>();
  const onPrimary = new Set<(w: StoreWorkerPort, m: unknown) => void>();
  const port: StoreWorkerPort = {
    isConnected: () => true,
    send: (m: FromPrimaryStore, cb: (e: Error | null) => void) => {
      const wire = JSON.parse(JSON.stringify(m)) as unknown;
      setImmediate(() => toWorker.forEach((l) => l(wire)));
      cb(null);
    },
  };
  const cluster: StoreClusterPort = { workers: { '1': port }, on: (_e, l) => onPrimary.add(l), off: (_e, l) => onPrimary.delete(l) };
  const served = serveStoreToWorkers(store, cluster);
  const channel: WorkerChannel = {
    send: (m: StoreRequest) => {
      const wire = JSON.parse(JSON.stringify(m)) as unknown;
      setImmediate(() => onPrimary.forEach((l) => l(port, wire)));
    },
    onMessage: (l) => {
      toWorker.add(l);
      return () => void toWorker.delete(l);
    },
    onClose: (l) => {
      closers.add(l);
      return () => void closers.delete(l);
    },
  };
  const worker = new WorkerStore({ channel, timeoutMs: 1_000 });
  return { worker, served, close: () => closers.forEach((l) => l()) };
}

describe('a cluster worker’s store', () => {
  it('follows the primary’s reachability broadcasts, and reads as down once the channel to the primary is closed', async () => {
    const store = new SwitchableStore({ sweepIntervalMs: 0 });
    const { worker, served, close } = joined(store);
    const heard: boolean[] = [];
    worker.onReachability((u) => heard.push(u));
    expect(worker.unreachable()).toBe(false);
    store.set(true);
    await eventually(() => worker.unreachable() === true);
    store.set(false);
    await eventually(() => worker.unreachable() === false);
    expect(heard).toEqual([true, false]);
    close();
    expect(worker.unreachable()).toBe(true);
    served.close();
    await worker.close();
    await store.close();
  });

  it('a sign-out the primary’s store could not record still reaches the worker’s caches', async () => {
    const store = new SwitchableStore({ sweepIntervalMs: 0 });
    const { worker, served } = joined(store);
    const r = sessionRecord(Date.now());
    await worker.put(r);
    const dropped: string[] = [];
    worker.onChange((id) => dropped.push(id));
    store.set(true);
    await expect(worker.delete(r.id)).rejects.toMatchObject({ code: 'SVC_ERR_SESSION_STORE_UNAVAILABLE' });
    await eventually(() => dropped.includes(r.id));
    served.close();
    await worker.close();
    await store.close();
  });

  it('a worker that cannot reach the primary tells its own listeners of a failed delete', async () => {
    const channel: WorkerChannel = {
      send: () => {
        throw new Error('no channel');
      },
      onMessage: () => () => undefined,
    };
    const worker = new WorkerStore({ channel, timeoutMs: 1_000 });
    const dropped: string[] = [];
    worker.onChange((id) => dropped.push(id));
    await expect(worker.delete('some-session')).rejects.toMatchObject({ code: 'SVC_ERR_SESSION_STORE_UNAVAILABLE' });
    expect(dropped).toEqual(['some-session']);
    await worker.close();
  });
});

describe('a gRPC data broker client', () => {
  it('is down once its Watch stream is lost, and up again as soon as the broker answers a call', async () => {
    const backing = new MemoryStore({ sweepIntervalMs: 0 });
    let broker = await startBroker(backing);
    const port = broker.port;
    const client = await grpcStore([broker.url]);
    try {
      expect(client.unreachable()).toBe(false);
      await broker.stop();
      await eventually(() => client.unreachable(), 10_000);
      broker = await startBroker(backing, { address: `127.0.0.1:${port}` });
      // A call answered: up, whether or not the Watch stream (which waits its back-off) is back yet.
      await eventually(async () => (await client.get('nobody').then(() => true, () => false)) && !client.unreachable(), 10_000);
    } finally {
      await client.close();
      await broker.stop();
      await backing.close();
    }
  }, 30_000);
});

describeWithCommands(['redis-server'], 'the Redis store’s reachability', () => {
  const PASSWORD = 'test-only-reachability-password';
  let redis: RedisProcess;
  beforeAll(async () => {
    redis = await startRedis({ password: PASSWORD });
  }, 30_000);
  afterAll(async () => {
    await redis?.stop();
  });

  it('knows at once that its connection went and came back, and a failed sign-out still reaches its listeners', async () => {
    const s = new RedisStore({ storage: storage(`redis://:${PASSWORD}@127.0.0.1:${redis.port}/7`), secret: STORE_SECRET });
    try {
      await s.ready();
      const heard: boolean[] = [];
      s.onReachability((u) => heard.push(u));
      expect(s.unreachable()).toBe(false);
      const r = sessionRecord(Date.now());
      await s.put(r);
      const dropped: string[] = [];
      s.onChange((id) => dropped.push(id));

      await redis.kill();
      await eventually(() => s.unreachable() === true, 10_000);
      expect(heard).toEqual([true]);
      await expect(s.delete(r.id)).rejects.toMatchObject({ code: 'SVC_ERR_SESSION_STORE_UNAVAILABLE' });
      expect(dropped).toEqual([r.id]);

      await redis.restart();
      await eventually(() => s.unreachable() === false, 20_000);
      expect(heard).toEqual([true, false]);
    } finally {
      await s.close();
    }
  }, 60_000);
});
