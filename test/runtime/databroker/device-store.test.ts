/**
 * Registered devices in the data broker (docs/authentication.md "Devices"): one contract, run
 * against the memory store, a real redis-server on loopback (two instances sharing it) and the
 * gRPC data broker client (two clients of one broker: split mode), with the counter rule
 * (docs/security.md S59, S63), changes heard by every gRPC client (S64) and what Redis holds at rest.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { counterAdvances, DeviceStoreError, type DeviceRecord, type DeviceStore } from '../../../runtime/core/device-store.ts';
import { MemoryStore } from '../../../runtime/databroker/memory-store.ts';
import { RedisStore } from '../../../runtime/databroker/redis-store.ts';
import { Redis } from 'ioredis';
import { deriveKey } from '../../../runtime/core/keys.ts';
import { KeyLayout } from '../../../runtime/databroker/redis-keys.ts';
import { startRedis, type RedisProcess } from '../../support/redis-server.ts';
import { describeWithCommands } from '../../support/system.ts';
import { eventually } from './store-contract.ts';
import { storage, STORE_SECRET } from './redis-support.ts';
import { grpcStore, startBroker, type Broker } from './grpc-support.ts';
import type { GrpcStore } from '../../../runtime/databroker/grpc-store.ts';

let serial = 0;
function device(over: Partial<DeviceRecord> = {}): DeviceRecord {
  serial++;
  return {
    credentialId: `cred-${String(serial).padStart(4, '0')}-AAAAAAAAAAAA`,
    userId: 'user-1',
    type: 'any',
    publicKey: 'pQECAyYgASFYIFaKe',
    counter: 5,
    approved: false,
    transports: ['usb'],
    createdAtMs: 1_700_000_000_000,
    ...over,
  };
}

describe('the counter rule', () => {
  it('passes authenticators without a counter and refuses a counter that does not grow', () => {
    expect(counterAdvances(0, 0)).toBe(true);
    expect(counterAdvances(0, 1)).toBe(true);
    expect(counterAdvances(5, 6)).toBe(true);
    expect(counterAdvances(5, 5)).toBe(false);
    expect(counterAdvances(5, 4)).toBe(false);
    // A counter that went back to 0 from a kept one is a clone (or a reset authenticator): refused.
    expect(counterAdvances(5, 0)).toBe(false);
  });
});

function deviceContract(open: () => Promise<DeviceStore>, peer?: () => Promise<DeviceStore>): void {
  it('stores, lists per user and refuses a second registration of one credential', async () => {
    const s = await open();
    const a = device();
    const b = device({ userId: 'user-2', type: 'enclave_only' });
    await s.addDevice(a);
    await s.addDevice(b);
    expect(await s.getDevice(a.credentialId)).toEqual(a);
    expect((await s.listDevices('user-1')).map((d) => d.credentialId)).toEqual([a.credentialId]);
    expect((await s.listDevices()).map((d) => d.credentialId).sort()).toEqual([a.credentialId, b.credentialId].sort());
    // The same credential under another user: refused, the first stays.
    await expect(s.addDevice({ ...a, userId: 'user-2' })).rejects.toMatchObject({ code: 'SVC_ERR_DEVICE_EXISTS' });
    expect((await s.getDevice(a.credentialId))?.userId).toBe('user-1');
    expect(await s.getDevice('cred-unknown-AAAAAAAAAAAA')).toBeUndefined();
  });

  it('refuses invalid records', async () => {
    const s = await open();
    await expect(s.addDevice(device({ credentialId: 'short' }))).rejects.toBeInstanceOf(DeviceStoreError);
    await expect(s.addDevice(device({ type: 'laptop' as never }))).rejects.toMatchObject({ code: 'SVC_ERR_DEVICE_RECORD_INVALID' });
    await expect(s.addDevice(device({ counter: -1 }))).rejects.toMatchObject({ code: 'SVC_ERR_DEVICE_RECORD_INVALID' });
  });

  it('approves, advances the counter, refuses a counter going back and keeps the stored one', async () => {
    const s = await open();
    const d = device();
    await s.addDevice(d);
    const heard: string[] = [];
    s.onDeviceChange((id) => heard.push(id));
    expect(await s.approveDevice(d.credentialId)).toBe(true);
    expect((await s.getDevice(d.credentialId))?.approved).toBe(true);
    expect(heard).toEqual([d.credentialId]);
    expect(await s.advanceCounter(d.credentialId, 9)).toBe('advanced');
    expect(await s.advanceCounter(d.credentialId, 9)).toBe('regressed');
    expect(await s.advanceCounter(d.credentialId, 3)).toBe('regressed');
    expect((await s.getDevice(d.credentialId))?.counter).toBe(9);
    expect(await s.advanceCounter('cred-unknown-AAAAAAAAAAAA', 1)).toBe('missing');
    expect(await s.approveDevice('cred-unknown-AAAAAAAAAAAA')).toBe(false);
  });

  it('revokes at once: gone, told, never registered again', async () => {
    const s = await open();
    const d = device({ approved: true });
    await s.addDevice(d);
    const heard: string[] = [];
    s.onDeviceChange((id) => heard.push(id));
    expect(await s.revokeDevice(d.credentialId)).toBe(true);
    expect(heard).toEqual([d.credentialId]);
    expect(await s.getDevice(d.credentialId)).toBeUndefined();
    expect(await s.revokeDevice(d.credentialId)).toBe(false);
    expect(await s.advanceCounter(d.credentialId, 100)).toBe('missing');
    expect(await s.listDevices('user-1')).not.toContainEqual(expect.objectContaining({ credentialId: d.credentialId }));
  });

  if (peer) {
    it('another instance sees registration, approval and revocation, and is told of them', async () => {
      const a = await open();
      const b = await peer();
      const d = device();
      await a.addDevice(d);
      expect((await b.getDevice(d.credentialId))?.approved).toBe(false);
      const heard: string[] = [];
      b.onDeviceChange((id) => heard.push(id));
      await a.approveDevice(d.credentialId);
      await eventually(() => heard.length === 1);
      expect((await b.getDevice(d.credentialId))?.approved).toBe(true);
      await a.revokeDevice(d.credentialId);
      await eventually(() => heard.length === 2);
      expect(heard).toEqual([d.credentialId, d.credentialId]);
      expect(await b.getDevice(d.credentialId)).toBeUndefined();
    });

    it('two instances racing on one counter: exactly one accepts it', async () => {
      const a = await open();
      const b = await peer();
      const d = device();
      await a.addDevice(d);
      const outcomes = await Promise.all([a.advanceCounter(d.credentialId, 10), b.advanceCounter(d.credentialId, 10)]);
      expect(outcomes.sort()).toEqual(['advanced', 'regressed']);
    });
  }
}

describe('MemoryStore devices', () => {
  const stores: MemoryStore[] = [];
  afterAll(async () => {
    for (const s of stores) await s.close();
  });
  deviceContract(async () => {
    const s = new MemoryStore({ sweepIntervalMs: 0 });
    stores.push(s);
    return s;
  });
});

describeWithCommands(['redis-server', 'redis-cli'], 'RedisStore devices', () => {
  let redis: RedisProcess;
  const stores: RedisStore[] = [];
  const make = async () => {
    const s = new RedisStore({ storage: storage(`redis://127.0.0.1:${redis.port}/2`), secret: STORE_SECRET });
    stores.push(s);
    await s.ready();
    return s;
  };
  beforeAll(async () => {
    redis = await startRedis({});
  }, 30_000);
  afterAll(async () => {
    for (const s of stores) await s.close();
    await redis?.stop();
  });

  deviceContract(make, make);

  it('holds devices sealed: no credential id, user or key in clear, and a value moved to another device does not open', async () => {
    const s = await make();
    const a = device({ userId: 'alice@example.com' });
    const b = device();
    await s.addDevice(a);
    await s.addDevice(b);
    const raw = new Redis({ port: redis.port, host: '127.0.0.1', db: 2, lazyConnect: true });
    try {
      await raw.connect();
      const keys = await raw.keys('*:d');
      expect(keys.length).toBeGreaterThanOrEqual(2);
      for (const k of keys) expect(k).not.toContain('cred-');
      const values = await Promise.all(keys.map((k) => raw.getBuffer(k)));
      for (const v of values) for (const plain of ['alice@example.com', a.credentialId, a.publicKey]) expect(v!.toString('latin1')).not.toContain(plain);
      // A Redis writer copies a's value over b's key: b no longer opens (the seal names its key).
      const layout = new KeyLayout(deriveKey(STORE_SECRET, 'session store names'));
      const ka = layout.device(a.credentialId);
      const kb = layout.device(b.credentialId);
      expect(keys).toEqual(expect.arrayContaining([ka, kb]));
      await raw.set(kb, (await raw.getBuffer(ka))!);
      const opened = [await s.getDevice(a.credentialId), await s.getDevice(b.credentialId)].filter((d) => d !== undefined);
      expect(opened.map((d) => d.credentialId)).toEqual([a.credentialId]);
      expect(opened).toHaveLength(1);
    } finally {
      raw.disconnect();
    }
  });
});

describe('GrpcStore devices (split mode: clients of one data broker over gRPC)', () => {
  let backing: MemoryStore;
  let broker: Broker;
  const clients: GrpcStore[] = [];
  const make = async () => {
    const s = await grpcStore([broker.url]);
    clients.push(s);
    return s;
  };
  beforeAll(async () => {
    backing = new MemoryStore({ sweepIntervalMs: 0 });
    broker = await startBroker(backing);
  });
  afterAll(async () => {
    for (const s of clients) await s.close();
    await broker.stop();
    await backing.close();
  });

  deviceContract(make, make);

  it('S63: the counter rule is the broker’s: a client’s regressed counter leaves the stored one, and a counter out of range is refused', async () => {
    const s = await make();
    const d = device({ counter: 7 });
    await s.addDevice(d);
    expect(await s.advanceCounter(d.credentialId, 6)).toBe('regressed');
    expect((await backing.getDevice(d.credentialId))?.counter).toBe(7);
    await expect(s.advanceCounter(d.credentialId, 2 ** 33)).rejects.toMatchObject({ code: 'SVC_ERR_DEVICE_RECORD_INVALID' });
    expect((await backing.getDevice(d.credentialId))?.counter).toBe(7);
  });

  it('S64: hears an approval or revocation made in the broker’s own store (svc devices, another proxy) on its Watch stream', async () => {
    const s = await make();
    const d = device();
    await backing.addDevice(d);
    const heard: string[] = [];
    s.onDeviceChange((id) => heard.push(id));
    await backing.approveDevice(d.credentialId);
    await eventually(() => heard.length === 1);
    await backing.revokeDevice(d.credentialId);
    await eventually(() => heard.length === 2);
    expect(heard).toEqual([d.credentialId, d.credentialId]);
  });

  it('carries public keys to the device page but keeps the broker’s refusals', async () => {
    const s = await make();
    const d = device({ userId: 'user-keys' });
    await s.addDevice(d);
    expect(await s.listDevices('user-keys')).toEqual([d]);
    await expect(s.addDevice({ ...d, publicKey: 'not base64url!' })).rejects.toMatchObject({ code: 'SVC_ERR_DEVICE_RECORD_INVALID' });
  });
});

describe('GrpcStore against a data broker whose store keeps no devices', () => {
  it('fails closed: every device call rejects as unavailable, never "no device" or "advanced"', async () => {
    const backing = new MemoryStore({ sweepIntervalMs: 0 });
    const hidden = new Set(['getDevice', 'addDevice', 'listDevices', 'approveDevice', 'revokeDevice', 'advanceCounter', 'onDeviceChange']);
    // The memory store with its device calls hidden: a data broker without devices (UNIMPLEMENTED).
    const sessionsOnly = new Proxy(backing, {
      get(target, key) {
        if (typeof key === 'string' && hidden.has(key)) return undefined;
        const v = Reflect.get(target, key, target) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const broker = await startBroker(sessionsOnly);
    const s = await grpcStore([broker.url]);
    try {
      const d = device();
      for (const call of [() => s.getDevice(d.credentialId), () => s.addDevice(d), () => s.listDevices('user-1'), () => s.approveDevice(d.credentialId), () => s.advanceCounter(d.credentialId, 9)]) {
        await expect(call()).rejects.toMatchObject({ code: 'SVC_ERR_SESSION_STORE_UNAVAILABLE' });
      }
    } finally {
      await s.close();
      await broker.stop();
      await backing.close();
    }
  });
});
