/**
 * The device a session authenticated with, as requests see it (docs/authentication.md "Devices"):
 * read from the device store on every resolution, never trusted from the session alone, and dropped
 * from the per-process cache the moment it is approved or revoked (docs/security.md S60).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { DeviceRecord } from '../../../runtime/core/device-store.ts';
import { MemoryStore } from '../../../runtime/databroker/memory-store.ts';
import { resolveSession, SessionCache } from '../../../runtime/sessions/session-cache.ts';
import { sessionRecord } from '../databroker/records.ts';

const CRED = 'cred-0001-AAAAAAAAAAAAAAAA';
const device = (over: Partial<DeviceRecord> = {}): DeviceRecord => ({ credentialId: CRED, userId: 'user-1', type: 'enclave_only', publicKey: 'pQECAyYg', counter: 0, approved: true, transports: ['internal'], createdAtMs: 0, ...over });

describe('the session device', () => {
  const stores: MemoryStore[] = [];
  const open = () => {
    const s = new MemoryStore({ sweepIntervalMs: 0 });
    stores.push(s);
    return s;
  };
  afterEach(async () => {
    for (const s of stores.splice(0)) await s.close();
  });

  it('carries the stored device state into the identity', async () => {
    const store = open();
    await store.addDevice(device({ approved: false }));
    const r = sessionRecord(Date.now(), { userId: 'user-1', deviceCredentialId: CRED });
    expect((await resolveSession(store, r)).identity.device).toEqual({ id: CRED, type: 'enclave_only', approved: false });
    await store.approveDevice(CRED);
    expect((await resolveSession(store, r)).identity.device).toEqual({ id: CRED, type: 'enclave_only', approved: true });
  });

  it('gives no device for a revoked device, another user\'s device, or a session without one', async () => {
    const store = open();
    await store.addDevice(device({ userId: 'user-2' }));
    expect((await resolveSession(store, sessionRecord(Date.now(), { userId: 'user-1', deviceCredentialId: CRED }))).identity.device).toBeUndefined();
    expect((await resolveSession(store, sessionRecord(Date.now(), { userId: 'user-2' }))).identity.device).toBeUndefined();
    const mine = sessionRecord(Date.now(), { userId: 'user-2', deviceCredentialId: CRED });
    expect((await resolveSession(store, mine)).identity.device?.id).toBe(CRED);
    await store.revokeDevice(CRED);
    expect((await resolveSession(store, mine)).identity.device).toBeUndefined();
  });

  it('drops every cached session of a device approved or revoked, and keeps the others', async () => {
    const store = open();
    await store.addDevice(device({ approved: false }));
    const cache = new SessionCache(store);
    const owner = {};
    const now = Date.now();
    const withDevice = sessionRecord(now, { userId: 'user-1', deviceCredentialId: CRED });
    const without = sessionRecord(now, { userId: 'user-1' });
    cache.set('cookie-a', owner, await resolveSession(store, withDevice), now, now + 30_000);
    cache.set('cookie-b', owner, await resolveSession(store, without), now, now + 30_000);
    await store.approveDevice(CRED);
    expect(cache.get('cookie-a', owner, now)).toBeUndefined();
    expect(cache.get('cookie-b', owner, now)).toBeDefined();
    cache.set('cookie-a', owner, await resolveSession(store, withDevice), now, now + 30_000);
    expect(cache.get('cookie-a', owner, now)?.identity.device?.approved).toBe(true);
    await store.revokeDevice(CRED);
    expect(cache.get('cookie-a', owner, now)).toBeUndefined();
    cache.close();
  });
});
