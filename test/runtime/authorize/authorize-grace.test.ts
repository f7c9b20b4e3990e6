/**
 * The authorize service and the session-store outage grace (runtime/sessions/outage-grace.ts): in the
 * split roles the proxy's own lookup serves a session from the grace, and the authorize service
 * decides on the identity it verified last, for the same grace; past it, or for a session the store
 * said was gone, or with the grace off, the store's outage is UNAVAILABLE (the proxy answers 503).
 */
import { describe, expect, it } from 'vitest';
import { authorizeGrpcService } from '../../../runtime/authorize/authorize-service.ts';
import type { CheckRequestMessage, CheckResponseMessage } from '../../../runtime/authorize/check-message.ts';
import { routeDigest } from '../../../runtime/authorize/route-digest.ts';
import { MemoryStore } from '../../../runtime/databroker/memory-store.ts';
import { SessionStoreError, type SessionRecord } from '../../../runtime/core/session-store.ts';
import { buildIndex } from '../../../runtime/plan/index.ts';
import { compileBody, configText } from '../../reference/support.ts';
import { sessionRecord } from '../databroker/records.ts';

const T0 = Date.now();
const body = compileBody(configText([{ from: 'https://app.example.com', to: 'http://up', policy: 'allow if domain is "example.com"' }]));
const index = buildIndex(body);
const checksum = 'sha256:plan';

/** A memory store whose reads fail as unreachable while `down`. */
class OutageStore extends MemoryStore {
  down = false;
  override get(id: string): Promise<SessionRecord | undefined> {
    if (this.down) return Promise.reject(new SessionStoreError('SVC_ERR_SESSION_STORE_UNAVAILABLE', 'down'));
    return super.get(id);
  }
}

function setup(graceMs: number) {
  const store = new OutageStore({ sweepIntervalMs: 0 });
  let now = T0;
  let counted = 0;
  const service = authorizeGrpcService({ current: () => ({ index, checksum }), sessions: store, storeOutageGraceMs: graceMs, graceObserver: { servedStale: () => counted++ }, now: () => now });
  const check = (sessionId: string): Promise<CheckResponseMessage> => {
    const request: CheckRequestMessage = { plan_checksum: checksum, route_index: 0, route_digest: routeDigest(index.routes[0]!.route), session_id: sessionId, method: 'GET', path: '/', now_ms: now };
    const handler = service.handlers['Check'] as (call: unknown, callback: (err: unknown, res?: CheckResponseMessage) => void) => void;
    return new Promise((resolve, reject) => handler({ request }, (err, res) => (err ? reject(err) : resolve(res!))));
  };
  return { store, service, check, advance: (ms: number) => void (now += ms), counted: () => counted };
}

describe('the authorize service during a session-store outage', () => {
  it('decides on the identity it verified for the grace past its cache entry, then UNAVAILABLE', async () => {
    const { store, service, check, advance, counted } = setup(20_000);
    const r = sessionRecord(T0, { email: 'alice@example.com', expiresAtMs: T0 + 3_600_000 });
    await store.put(r);
    expect((await check(r.id)).verdict).toBe('ALLOW');
    store.down = true;
    advance(30_000); // the cache entry is no longer fresh
    expect((await check(r.id)).verdict).toBe('ALLOW');
    expect(counted()).toBe(1);
    advance(19_999);
    expect((await check(r.id)).verdict).toBe('ALLOW');
    advance(1);
    await expect(check(r.id)).rejects.toMatchObject({ code: 14 }); // UNAVAILABLE
    expect(counted()).toBe(2);
    service.close();
    await store.close();
  });

  it('grace 0, or a session the store said was gone: UNAVAILABLE at once', async () => {
    const off = setup(0);
    const r = sessionRecord(T0, { email: 'alice@example.com', expiresAtMs: T0 + 3_600_000 });
    await off.store.put(r);
    expect((await off.check(r.id)).verdict).toBe('ALLOW');
    off.store.down = true;
    off.advance(30_000);
    await expect(off.check(r.id)).rejects.toMatchObject({ code: 14 });
    expect(off.counted()).toBe(0);

    const on = setup(60_000);
    const s = sessionRecord(T0, { email: 'alice@example.com', expiresAtMs: T0 + 3_600_000 });
    await on.store.put(s);
    expect((await on.check(s.id)).verdict).toBe('ALLOW');
    await on.store.delete(s.id);
    on.advance(30_000);
    // The store answers "no session" (anonymous: unauthenticated) and then goes away: not served from the grace.
    expect((await on.check(s.id)).verdict).toBe('UNAUTHENTICATED');
    on.store.down = true;
    await expect(on.check(s.id)).rejects.toMatchObject({ code: 14 });
    for (const x of [off, on]) {
      x.service.close();
      await x.store.close();
    }
  });
});
