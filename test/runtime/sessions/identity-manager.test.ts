/**
 * The identity manager against the real OpenID provider (demo/dev-idp.ts on oidc-provider), with an
 * injected clock for svc's side (the store, the lease, token expiry as svc sees it) and the manager
 * driven tick by tick: tokens refreshed before expiry and not earlier, a refused refresh ends the
 * session, users and groups refreshed from userinfo only when changed, back-off while the provider
 * is down (counted at the provider), one lease holder among managers sharing a store.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevIdp, type DevIdp, type DevUser } from '../../../demo/dev-idp.ts';
import { IdentityProvider, type SignedInUser } from '../../../runtime/sessions/idp.ts';
import { MemoryStore } from '../../../runtime/databroker/memory-store.ts';
import { newSessionId, type SessionRecord } from '../../../runtime/core/session-store.ts';
import { IdentityManager, type IdentityManagerOptions } from '../../../runtime/sessions/identity-manager.ts';
import { SessionRefresher } from '../../../runtime/sessions/session-refresher.ts';
import { HttpBrowser } from '../../support/http-browser.ts';

const CLIENT_ID = 'svc-idm-test';
const CLIENT_SECRET = 'svc-idm-test-secret'; // TEST SECRET ONLY
const CALLBACK = 'http://rp.test/oauth2/callback';
const HOUR = 3_600_000;
/** Longer than the directory interval, so a directory run finds tokens not yet due. */
const TOKEN_TTL_S = 3_600;
const DIRECTORY_MS = 600_000;

const USERS: DevUser[] = ['ann', 'ben', 'cat', 'dan', 'eve', 'fay', 'gus'].map((id) => ({ id, email: `${id}@example.com`, name: id, groups: ['staff'] }));

let dev: DevIdp;
let provider: IdentityProvider;

beforeAll(async () => {
  dev = await startDevIdp({ clients: [{ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUris: [CALLBACK], postLogoutRedirectUris: [] }], users: USERS, accessTokenTtlSeconds: TOKEN_TTL_S });
  provider = new IdentityProvider(
    { provider: 'oidc', providerUrl: dev.issuer, clientId: CLIENT_ID, clientSecret: null, scopes: [], serviceAccount: null, requestParams: {}, trustUnverifiedEmail: false, refreshDirectoryIntervalMs: DIRECTORY_MS, refreshDirectoryTimeoutMs: 60_000 },
    CLIENT_SECRET,
    CALLBACK,
  );
});
afterAll(async () => {
  await dev?.close();
});

/** Signs `login` in at the real provider through svc's own client; the user as svc stores it. */
async function signIn(login: string, nowMs: number): Promise<SignedInUser> {
  const checks = provider.newChecks();
  const browser = new HttpBrowser((u) => (u.hostname === '127.0.0.1' && Number(u.port) === dev.port ? { port: dev.port } : undefined));
  const hops = await browser.signIn(await provider.authorizationUrl(checks), login);
  const location = new URL(String(hops[hops.length - 1]!.headers['location']));
  expect(`${location.origin}${location.pathname}`).toBe(CALLBACK);
  return provider.callback(location.search, checks, nowMs);
}

interface World {
  readonly store: MemoryStore;
  readonly clock: { now: number };
  readonly changed: string[];
  manager(over?: Partial<IdentityManagerOptions>): IdentityManager;
  session(login: string): Promise<SessionRecord>;
  close(): Promise<void>;
}

function world(): World {
  const clock = { now: Date.now() };
  const now = () => clock.now;
  const store = new MemoryStore({ sweepIntervalMs: 0, now });
  const changed: string[] = [];
  store.onChange((id) => changed.push(id));
  const managers: IdentityManager[] = [];
  const refresher = new SessionRefresher(store, { now, backOff: { baseMs: 1_000, maxMs: 8_000, random: () => 0 } });
  return {
    store,
    clock,
    changed,
    manager: (over = {}) => {
      const m = new IdentityManager({ store, refresher: over.refresher ?? refresher, settings: () => ({ idp: provider, directoryIntervalMs: DIRECTORY_MS, directoryTimeoutMs: 60_000 }), now, leaseTtlMs: 30_000, ...over });
      managers.push(m);
      return m;
    },
    session: async (login) => {
      const user = await signIn(login, clock.now);
      const record: SessionRecord = { ...user, id: newSessionId(), createdAtMs: clock.now, expiresAtMs: clock.now + 10 * HOUR };
      await store.put(record);
      return record;
    },
    close: async () => {
      for (const m of managers) await m.close();
      await store.close();
    },
  };
}

/** Waits until `check` holds (polling), or fails after `timeoutMs`. */
async function until(what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const refreshCalls = () => dev.tokenCalls['refresh_token'] ?? 0;
const userinfoCalls = () => dev.requests['/me'] ?? 0;

describe('IdentityManager with the real provider', () => {
  it('refreshes a token within the margin before its expiry, and not earlier', async () => {
    const w = world();
    try {
      const m = w.manager({ refreshMarginMs: 60_000 });
      const s = await w.session('ann');
      expect(s.refreshToken).toBeDefined();
      const before = refreshCalls();
      await m.tick();
      expect(m.holdsLease).toBe(true);
      expect(refreshCalls()).toBe(before);
      w.clock.now = s.accessTokenExpiresAtMs! - 59_000;
      await m.tick();
      expect(refreshCalls()).toBe(before + 1);
      const after = await w.store.get(s.id);
      expect(after?.accessToken).toBeDefined();
      expect(after?.accessToken).not.toBe(s.accessToken);
      expect(after!.accessTokenExpiresAtMs!).toBeGreaterThan(w.clock.now + 60_000);
      expect(m.figures()).toMatchObject({ sessionRefreshSuccess: 1, sessionRefreshError: 0, sessionRefreshSuccessMs: w.clock.now });
      // Fresh again: the next scan leaves it alone.
      await m.tick();
      expect(refreshCalls()).toBe(before + 1);
    } finally {
      await w.close();
    }
  });

  it('a refresh the provider refuses ends the session (deleted, so every cache drops it)', async () => {
    const w = world();
    try {
      const m = w.manager();
      const s = await w.session('ben');
      const kept = await w.session('cat');
      await dev.revokeUser('ben');
      w.clock.now = s.accessTokenExpiresAtMs! - 1_000;
      await m.tick();
      expect(await w.store.get(s.id)).toBeUndefined();
      expect(await w.store.isRevoked(s.id)).toBe(true);
      expect(w.changed).toContain(s.id);
      expect(await w.store.get(kept.id)).toBeDefined();
      expect(m.figures()).toMatchObject({ sessionRefreshError: 1, sessionRefreshSuccess: 1 });
    } finally {
      await w.close();
    }
  });

  it('refreshes users and groups from userinfo every directory interval, writing only changes', async () => {
    const w = world();
    try {
      const m = w.manager({ refreshMarginMs: 1_000 });
      const s = await w.session('dan');
      expect(s.groups).toEqual(['staff']);
      await m.tick(); // takes the lease; the first directory run is one interval later
      const calls = userinfoCalls();
      await m.tick();
      expect(userinfoCalls()).toBe(calls);
      w.clock.now += DIRECTORY_MS;
      await m.tick();
      expect(userinfoCalls()).toBe(calls + 1);
      expect(w.changed).not.toContain(s.id); // unchanged: no write
      expect(m.figures()).toMatchObject({ userRefreshSuccess: 1, userGroupRefreshSuccess: 1, lastRefreshMs: w.clock.now });
      dev.updateUser('dan', { groups: ['contractors'], email: 'dan@new.example' });
      w.clock.now += DIRECTORY_MS;
      await m.tick();
      const after = await w.store.get(s.id);
      expect(after).toMatchObject({ groups: ['contractors'], email: 'dan@new.example', refreshToken: s.refreshToken, accessToken: s.accessToken });
      expect(w.changed).toContain(s.id);
    } finally {
      dev.updateUser('dan', { groups: ['staff'], email: 'dan@example.com' });
      await w.close();
    }
  });

  it('provider down: sessions are kept, the provider is asked with exponential back-off, not at every scan', async () => {
    const w = world();
    try {
      const m = w.manager();
      const s = await w.session('eve');
      await m.tick();
      w.clock.now = s.accessTokenExpiresAtMs! - 1_000;
      dev.setOutage(503);
      const before = dev.requests['/token'] ?? 0;
      // 50 scans over 5 s of svc's clock.
      for (let i = 0; i < 50; i++) {
        await m.tick();
        w.clock.now += 100;
      }
      const asked = (dev.requests['/token'] ?? 0) - before;
      // Back-off 0.5 s, 1 s, 2 s, 4 s (jitter fixed low): four tries in 5 s, not fifty.
      expect(asked).toBeGreaterThanOrEqual(3);
      expect(asked).toBeLessThanOrEqual(5);
      expect(await w.store.get(s.id)).toMatchObject({ id: s.id, refreshToken: s.refreshToken });
      expect(m.figures().sessionRefreshError).toBe(asked);
      // The provider is back: the next try after the back-off refreshes.
      dev.setOutage(null);
      w.clock.now += 10_000;
      await m.tick();
      expect((await w.store.get(s.id))?.accessToken).not.toBe(s.accessToken);
      expect(m.figures().sessionRefreshSuccess).toBe(1);
    } finally {
      dev.setOutage(null);
      await w.close();
    }
  });

  it('lease: of two managers sharing a store only one refreshes; the other takes over after the TTL when the holder dies', async () => {
    const w = world();
    try {
      const a = w.manager({ holder: 'a' });
      const b = w.manager({ holder: 'b', refresher: new SessionRefresher(w.store, { now: () => w.clock.now }) });
      const s1 = await w.session('fay');
      await a.tick();
      await b.tick();
      expect([a.holdsLease, b.holdsLease]).toEqual([true, false]);
      // svc's clock jumps past the lease's TTL: the holder renews first, as its timer would have all along.
      w.clock.now = s1.accessTokenExpiresAtMs! - 1_000;
      await a.tick();
      await b.tick();
      expect([a.holdsLease, b.holdsLease]).toEqual([true, false]);
      expect(a.figures().sessionRefreshSuccess).toBe(1);
      expect(b.figures().sessionRefreshSuccess).toBe(0);
      // `a` dies (no more ticks, no release): `b` waits out the TTL, then takes over.
      const s2 = await w.session('gus');
      w.clock.now += 20_000;
      await b.tick();
      expect(b.holdsLease).toBe(false);
      w.clock.now = Math.max(w.clock.now + 10_001, s2.accessTokenExpiresAtMs! - 1_000);
      await b.tick();
      expect(b.holdsLease).toBe(true);
      expect(b.figures().sessionRefreshSuccess).toBeGreaterThanOrEqual(1);
      // The old holder, back, finds the lease taken and stops working.
      await a.renewLease();
      expect(a.holdsLease).toBe(false);
    } finally {
      await w.close();
    }
  });

  it('close gives the lease up at once, and a closed manager does nothing', async () => {
    const w = world();
    try {
      const a = w.manager({ holder: 'a' });
      const b = w.manager({ holder: 'b' });
      await a.tick();
      await b.tick();
      expect(b.holdsLease).toBe(false);
      await a.close();
      expect(await a.renewLease()).toBe(false);
      await b.tick();
      expect(b.holdsLease).toBe(true);
    } finally {
      await w.close();
    }
  });

  it('close aborts a provider request in flight instead of waiting for it, and keeps the session', async () => {
    const w = world();
    try {
      const m = w.manager();
      const s = await w.session('ann');
      await m.tick();
      w.clock.now = s.accessTokenExpiresAtMs! - 1_000;
      dev.setOutage('hang');
      const before = dev.requests['/token'] ?? 0;
      const abandoned = dev.abandoned;
      const ticking = m.tick();
      await until('the provider holds the refresh request', () => (dev.requests['/token'] ?? 0) > before);
      let closed = false;
      const closing = m.close().then(() => (closed = true));
      // Well before openid-client's own 10 s timeout would end the request: close aborted it.
      await until('close resolves', () => closed, 5_000);
      await until('the provider saw the request abandoned', () => dev.abandoned > abandoned, 5_000);
      await closing;
      await ticking;
      expect(await w.store.get(s.id)).toMatchObject({ accessToken: s.accessToken });
      expect(m.figures().sessionRefreshError).toBe(0); // an aborted refresh is not the provider's error
    } finally {
      dev.setOutage(null);
      await w.close();
    }
  });

  it('follows the settings of the current generation: no provider, nothing is asked', async () => {
    const w = world();
    try {
      let idp: IdentityProvider | null = provider;
      const m = w.manager({ settings: () => ({ idp, directoryIntervalMs: DIRECTORY_MS, directoryTimeoutMs: 60_000 }) });
      const s = await w.session('ann');
      idp = null;
      w.clock.now = s.accessTokenExpiresAtMs! + DIRECTORY_MS;
      const before = { refresh: refreshCalls(), userinfo: userinfoCalls() };
      await m.tick();
      await m.tick();
      expect({ refresh: refreshCalls(), userinfo: userinfoCalls() }).toEqual(before);
      idp = provider;
      await m.tick();
      expect(refreshCalls()).toBe(before.refresh + 1);
    } finally {
      await w.close();
    }
  });
});
