/**
 * The identity manager's directory sync (docs/authentication.md "Groups from the directory")
 * against the loopback Okta fake of ./directory/fake-directory.ts, driven tick by tick with an
 * injected clock: directory groups join the claim's at each sync and not before; a change at the
 * directory is seen at the next sync; a failing sync keeps the last good directory and counts
 * `user_group_refresh_errors`; a user the directory no longer has loses the session; the
 * directory is kept in the store for every process (sign-in reads it there); a token refresh
 * keeps directory groups.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { PlanSettings } from '../../../compiler/plan/types.ts';
import { newSessionId, type SessionRecord } from '../../../runtime/core/session-store.ts';
import { MemoryStore } from '../../../runtime/databroker/memory-store.ts';
import { directoryClient } from '../../../runtime/sessions/directory/index.ts';
import { DIRECTORY_RECORD_ID, readDirectory } from '../../../runtime/sessions/directory/record.ts';
import { IdentityManager, type DirectorySource } from '../../../runtime/sessions/identity-manager.ts';
import type { IdentityProvider, SignedInUser } from '../../../runtime/sessions/idp.ts';
import { SessionRefresher } from '../../../runtime/sessions/session-refresher.ts';
import { baseModel, FakeDirectory } from './directory/fake-directory.ts';

const DIRECTORY_MS = 600_000;
const HOUR = 3_600_000;

let fake: FakeDirectory;
beforeAll(async () => {
  fake = await FakeDirectory.start(baseModel());
});
afterAll(async () => {
  await fake.close();
});
beforeEach(() => {
  fake.model = baseModel();
  fake.down = false;
});

/** A provider without userinfo (as Google and Azure are for groups): only the directory changes groups. */
function stubIdp(refreshed?: (refreshToken: string, previous: SignedInUser) => SignedInUser): IdentityProvider {
  return {
    hasUserInfo: async () => false,
    userInfo: async () => {
      throw new Error('not asked');
    },
    refresh: async (token: string, previous: SignedInUser) => refreshed!(token, previous),
  } as unknown as IdentityProvider;
}

function source(provider: 'okta' | 'gitlab' | 'azure' = 'okta'): DirectorySource {
  const account = { value: fake.account(provider), fingerprint: 'sha256:directory-test' };
  const idp = { provider, providerUrl: null, serviceAccount: account } as unknown as PlanSettings['idp'];
  return { provider, account, client: directoryClient(idp, (s) => ('value' in s ? s.value : ''))! };
}

function world(dir: DirectorySource = source(), idp = stubIdp()) {
  const clock = { now: Date.now() };
  const now = () => clock.now;
  const store = new MemoryStore({ sweepIntervalMs: 0, now });
  const refresher = new SessionRefresher(store, { now });
  const logs: Record<string, unknown>[] = [];
  const settings = { idp, directoryIntervalMs: DIRECTORY_MS, directoryTimeoutMs: 10_000, directory: dir };
  const manager = new IdentityManager({ store, refresher, settings: () => settings, now, directoryDispatcher: fake.dispatcher, log: (e) => logs.push(e) });
  const session = async (userId: string, claimGroups: string[] = ['from-claim']): Promise<SessionRecord> => {
    const record: SessionRecord = { id: newSessionId(), userId, groups: claimGroups, claims: { sub: userId, groups: claimGroups }, createdAtMs: clock.now, expiresAtMs: clock.now + 10 * HOUR };
    await store.put(record);
    return record;
  };
  /** One directory run: the interval passes, then a scan. */
  const sync = async () => {
    clock.now += DIRECTORY_MS;
    await manager.tick();
  };
  const groups = async (id: string) => (await store.get(id))?.groups;
  return { clock, store, manager, session, sync, groups, logs, refresher, close: async () => (await manager.close(), await store.close()) };
}

describe('directory sync in the identity manager', () => {
  it('merges directory groups (ids and names) with the claim at each sync, and sees a change at the next one, not before', async () => {
    const w = world();
    try {
      const s = await w.session('2');
      // Takes the lease; with no directory in the store yet, reads it at once.
      await w.manager.tick();
      expect(await w.groups(s.id)).toEqual(['from-claim', '101', 'engineering']);
      expect(w.manager.figures()).toMatchObject({ userGroupRefreshSuccess: 1, userGroupRefreshError: 0, userGroupRefreshSuccessMs: w.clock.now });
      // Added to admins at the directory: not before the next sync.
      fake.model.members['102']!.push('2');
      w.clock.now += 60_000;
      await w.manager.tick();
      expect(await w.groups(s.id)).toEqual(['from-claim', '101', 'engineering']);
      await w.sync();
      expect(await w.groups(s.id)).toEqual(['from-claim', '101', 'engineering', '102', 'admins']);
      // Removed from engineering: gone at the next sync.
      fake.model.members['101'] = ['1'];
      await w.sync();
      expect(await w.groups(s.id)).toEqual(['from-claim', '102', 'admins']);
      expect(w.manager.figures().userGroupRefreshSuccess).toBe(3);
    } finally {
      await w.close();
    }
  });

  it('a manager taking over a store that holds a directory read with its account waits one interval', async () => {
    const w = world();
    try {
      await w.session('1');
      await w.manager.tick();
      expect(w.manager.figures().userGroupRefreshSuccess).toBe(1);
      await w.manager.close();
      const next = new IdentityManager({ store: w.store, refresher: w.refresher, settings: () => ({ idp: stubIdp(), directoryIntervalMs: DIRECTORY_MS, directoryTimeoutMs: 10_000, directory: source() }), now: () => w.clock.now, directoryDispatcher: fake.dispatcher });
      try {
        const before = fake.requests.length;
        await next.tick();
        expect(next.holdsLease).toBe(true);
        expect(next.figures().userGroupRefreshSuccess).toBe(0);
        expect(fake.requests.length).toBe(before);
        w.clock.now += DIRECTORY_MS;
        await next.tick();
        expect(next.figures().userGroupRefreshSuccess).toBe(1);
      } finally {
        await next.close();
      }
    } finally {
      await w.close();
    }
  });

  it('a reload to another service account reads the directory with it at once', async () => {
    const current = { value: source() };
    const w = world(current.value);
    const next = new IdentityManager({ store: w.store, refresher: w.refresher, settings: () => ({ idp: stubIdp(), directoryIntervalMs: DIRECTORY_MS, directoryTimeoutMs: 10_000, directory: current.value }), now: () => w.clock.now, directoryDispatcher: fake.dispatcher });
    try {
      await next.tick();
      expect(next.figures().userGroupRefreshSuccess).toBe(1);
      await next.tick();
      expect(next.figures().userGroupRefreshSuccess).toBe(1);
      const other = source();
      current.value = { ...other, account: { value: 'other', fingerprint: 'sha256:another-account' } };
      await next.tick();
      expect(next.figures().userGroupRefreshSuccess).toBe(2);
      expect(await readDirectory(w.store, 'okta', { value: 'other', fingerprint: 'sha256:another-account' })).toBeDefined();
    } finally {
      await next.close();
      await w.close();
    }
  });

  it('a failing sync keeps the last good directory and counts user_group_refresh_errors with a timestamp', async () => {
    const w = world();
    try {
      const s = await w.session('1');
      await w.manager.tick();
      expect(await w.groups(s.id)).toEqual(['from-claim', '101', 'engineering', '102', 'admins']);
      fake.down = true;
      fake.model.members['102'] = [];
      await w.sync();
      expect(await w.groups(s.id)).toEqual(['from-claim', '101', 'engineering', '102', 'admins']);
      expect(w.manager.figures()).toMatchObject({ userGroupRefreshSuccess: 1, userGroupRefreshError: 1, userGroupRefreshErrorMs: w.clock.now });
      expect(w.logs).toContainEqual(expect.objectContaining({ level: 'warn', msg: 'identity manager: directory read failed; keeping the last good directory', provider: 'okta' }));
      // A session signed in meanwhile gets the last good directory's groups from the store.
      const stored = await readDirectory(w.store, 'okta', source().account);
      expect(stored?.snapshot.members['1']).toEqual(['101', '102']);
      fake.down = false;
      await w.sync();
      expect(await w.groups(s.id)).toEqual(['from-claim', '101', 'engineering']);
    } finally {
      await w.close();
    }
  });

  it('a user the directory no longer has loses the session; the others keep theirs', async () => {
    const w = world();
    try {
      const gone = await w.session('2');
      const kept = await w.session('1');
      await w.manager.tick();
      await w.sync();
      expect(await w.store.get(gone.id)).toBeDefined();
      delete fake.model.users['2'];
      await w.sync();
      expect(await w.store.get(gone.id)).toBeUndefined();
      expect(await w.store.isRevoked(gone.id)).toBe(true);
      expect(await w.store.get(kept.id)).toBeDefined();
      expect(w.logs).toContainEqual(expect.objectContaining({ msg: 'identity manager: user no longer in the directory; session ended', user: '2' }));
      // The directory's own record is never taken for a session.
      expect(await w.store.get(DIRECTORY_RECORD_ID)).toBeDefined();
    } finally {
      await w.close();
    }
  });

  it('a directory that cannot list users (gitlab) ends no session', async () => {
    const w = world(source('gitlab'));
    try {
      const s = await w.session('9');
      await w.manager.tick();
      expect(await w.groups(s.id)).toEqual(['from-claim']);
      expect(w.manager.figures().userGroupRefreshSuccess).toBe(1);
    } finally {
      await w.close();
    }
  });

  it('azure: users are found by their oid; a session without oid keeps its groups and is never ended', async () => {
    const w = world(source('azure'));
    try {
      const withOid = await w.session('pairwise-a');
      await w.store.put({ ...(await w.store.get(withOid.id))!, claims: { sub: 'pairwise-a', oid: '2' } });
      const without = await w.session('pairwise-b');
      await w.manager.tick();
      await w.sync();
      expect(await w.groups(withOid.id)).toEqual(['101', 'engineering']);
      expect(await w.groups(without.id)).toEqual(['from-claim']);
      expect(w.logs).toContainEqual(expect.objectContaining({ level: 'warn', msg: expect.stringContaining('names no directory user'), user: 'pairwise-b' }));
    } finally {
      await w.close();
    }
  });

  it('a directory read with another service account is not used', async () => {
    const w = world();
    try {
      await w.session('1');
      await w.manager.tick();
      await w.sync();
      expect(await readDirectory(w.store, 'okta', source().account)).toBeDefined();
      expect(await readDirectory(w.store, 'okta', { value: 'x', fingerprint: 'sha256:other' })).toBeUndefined();
      expect(await readDirectory(w.store, 'azure', source().account)).toBeUndefined();
    } finally {
      await w.close();
    }
  });

  it('an unusable service account counts an error at each directory run, and changes no session', async () => {
    const w = world({ provider: 'github', account: { value: 'x', fingerprint: 'sha256:x' }, error: 'idp_service_account: svc reads no directory for idp_provider `github`', cause: undefined });
    try {
      const s = await w.session('1');
      await w.manager.tick();
      expect(await w.groups(s.id)).toEqual(['from-claim']);
      expect(w.manager.figures().userGroupRefreshError).toBe(1);
      await w.sync();
      expect(w.manager.figures().userGroupRefreshError).toBe(2);
      expect(w.logs).toContainEqual(expect.objectContaining({ level: 'error', msg: 'identity manager: idp_service_account cannot be used; directory not read' }));
    } finally {
      await w.close();
    }
  });

  it('backing off from the sign-in provider does not stop the directory: groups are applied, the provider is not asked', async () => {
    let asked = 0;
    const idp = stubIdp((_t, previous) => (asked++, previous));
    const w = world(source(), idp);
    try {
      const s = await w.session('2');
      // Due for a token refresh, while the provider is backed off from.
      await w.store.put({ ...(await w.store.get(s.id))!, refreshToken: 'r', accessToken: 'a', accessTokenExpiresAtMs: w.clock.now });
      w.refresher.backOff(idp).failed(3_600_000);
      await w.manager.tick();
      await w.sync();
      expect(w.refresher.backOff(idp).blocked()).toBe(true);
      expect(await w.groups(s.id)).toEqual(['from-claim', '101', 'engineering']);
      expect(asked).toBe(0);
    } finally {
      await w.close();
    }
  });

  it('a token refresh keeps the directory groups until the next sync decides', async () => {
    const idp = stubIdp((_t, previous) => ({ ...previous, groups: ['claim-now'], claims: { ...previous.claims, groups: ['claim-now'] }, accessToken: 'new' }));
    const w = world(source(), idp);
    try {
      const s = await w.session('1');
      await w.store.put({ ...(await w.store.get(s.id))!, refreshToken: 'r', accessToken: 'a', accessTokenExpiresAtMs: w.clock.now + HOUR });
      await w.manager.tick();
      await w.sync();
      expect(await w.groups(s.id)).toEqual(['from-claim', '101', 'engineering', '102', 'admins']);
      const outcome = await w.refresher.refresh(idp, (await w.store.get(s.id))!);
      expect(outcome.kind).toBe('refreshed');
      expect(await w.groups(s.id)).toEqual(['claim-now', '101', 'engineering', '102', 'admins']);
    } finally {
      await w.close();
    }
  });
});
