/**
 * GrpcStore, a client of the data broker served over gRPC, against a real server on loopback: the
 * store contract (as the memory and Redis stores), backed by a memory store and by a real
 * redis-server; changes between clients; fail closed while the broker is down; recovery.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../../runtime/databroker/memory-store.ts';
import { RedisStore } from '../../../runtime/databroker/redis-store.ts';
import type { GrpcStore } from '../../../runtime/databroker/grpc-store.ts';
import { startRedis, type RedisProcess } from '../../support/redis-server.ts';
import { describeWithCommands } from '../../support/system.ts';
import { grpcStore, startBroker, type Broker } from './grpc-support.ts';
import { sessionRecord } from './records.ts';
import { eventually, storeContract } from './store-contract.ts';
import { storage, STORE_SECRET } from './redis-support.ts';

describe('GrpcStore over a memory store', () => {
  let backing: MemoryStore;
  let broker: Broker;
  beforeAll(async () => {
    backing = new MemoryStore();
    broker = await startBroker(backing);
  });
  afterAll(async () => {
    await broker.stop();
    await backing.close();
  });
  storeContract({ open: () => grpcStore([broker.url]), peer: () => grpcStore([broker.url]) });
});

describeWithCommands(['redis-server'], 'GrpcStore over a Redis store', () => {
  let redis: RedisProcess;
  const backings: RedisStore[] = [];
  const brokers: Broker[] = [];
  beforeAll(async () => {
    redis = await startRedis();
    // Two brokers on one Redis: a client of each sees the other's changes through Redis.
    for (let i = 0; i < 2; i++) {
      const s = new RedisStore({ storage: storage(`redis://127.0.0.1:${redis.port}/3`), secret: STORE_SECRET });
      await s.ready();
      backings.push(s);
      brokers.push(await startBroker(s));
    }
  }, 30_000);
  afterAll(async () => {
    for (const b of brokers) await b.stop();
    for (const s of backings) await s.close();
    await redis?.stop();
  });
  storeContract({ open: () => grpcStore([brokers[0]!.url]), peer: () => grpcStore([brokers[1]!.url]) });
});

describe('GrpcStore failure and recovery', () => {
  const cleanup: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c();
  });

  it('fails closed (SVC_ERR_SESSION_STORE_UNAVAILABLE) after grpc_client_timeout while no broker answers, and recovers when one is back on the same port', async () => {
    const backing = new MemoryStore();
    cleanup.push(() => backing.close());
    let broker = await startBroker(backing);
    const port = broker.port;
    const flushes: number[] = [];
    const client = await grpcStore([broker.url], { timeoutMs: 400 });
    cleanup.push(() => client.close());
    client.onFlush(() => flushes.push(Date.now()));
    const r = sessionRecord(Date.now());
    await client.put(r);
    await broker.stop();
    await expect(client.get(r.id)).rejects.toMatchObject({ code: 'SVC_ERR_SESSION_STORE_UNAVAILABLE' });
    await expect(client.consumeOnce('k', Date.now() + 1000)).rejects.toMatchObject({ code: 'SVC_ERR_SESSION_STORE_UNAVAILABLE' });
    // The change stream's loss told the flush listeners (caches cannot be trusted any more).
    await eventually(() => flushes.length >= 1);
    broker = await startBroker(backing, { address: `127.0.0.1:${port}` });
    cleanup.push(() => broker.stop());
    await eventually(async () => (await client.get(r.id).catch(() => undefined))?.id === r.id, 10_000);
    expect(await client.ready()).toBe(true);
  });

  it('a call made while the broker is briefly down waits for it within grpc_client_timeout', async () => {
    const backing = new MemoryStore();
    cleanup.push(() => backing.close());
    let broker = await startBroker(backing);
    const port = broker.port;
    const client = await grpcStore([broker.url], { timeoutMs: 8_000 });
    cleanup.push(() => client.close());
    const r = sessionRecord(Date.now());
    await client.put(r);
    await broker.stop();
    const pending = client.get(r.id);
    await new Promise((res) => setTimeout(res, 300));
    broker = await startBroker(backing, { address: `127.0.0.1:${port}` });
    cleanup.push(() => broker.stop());
    expect((await pending)?.id).toBe(r.id);
  });

  it('fails over between several data broker URLs', async () => {
    const backing = new MemoryStore();
    cleanup.push(() => backing.close());
    const a = await startBroker(backing);
    const b = await startBroker(backing);
    cleanup.push(() => b.stop());
    const client = await grpcStore([a.url, b.url], { timeoutMs: 2_000 });
    cleanup.push(() => client.close());
    const r = sessionRecord(Date.now());
    await client.put(r);
    await a.stop();
    for (let i = 0; i < 4; i++) expect((await client.get(r.id))?.id).toBe(r.id);
  });

  it('a client of a broker that is down at its start opens its watch once the broker is up', async () => {
    const backing = new MemoryStore();
    cleanup.push(() => backing.close());
    const probe = await startBroker(backing);
    const port = probe.port;
    await probe.stop();
    const client = await grpcStore([`127.0.0.1:${port}`], { timeoutMs: 500 }, false);
    cleanup.push(() => client.close());
    await expect(client.get('x')).rejects.toMatchObject({ code: 'SVC_ERR_SESSION_STORE_UNAVAILABLE' });
    const broker = await startBroker(backing, { address: `127.0.0.1:${port}` });
    cleanup.push(() => broker.stop());
    expect(await client.ready()).toBe(true);
    expect(await client.get('x')).toBeUndefined();
  });
});
