/**
 * Groups from the directory end to end (docs/authentication.md "Groups from the directory"):
 * `svc run` with `idp_provider: okta` signing in at the real OpenID provider (demo/dev-idp.ts,
 * whose ID tokens carry no `staff` group) and `idp_service_account` reading a loopback HTTPS fake of
 * Okta's Groups API (test/runtime/sessions/directory/fake-directory.ts). A policy on a directory
 * group sees it at sign-in; a change at the directory is seen after the next sync and not before;
 * a failing sync keeps the old groups; a user the directory no longer has must sign in again.
 */
import { until } from './support.ts';
import { rootCertificates } from 'node:tls';
import { Agent, getGlobalDispatcher, setGlobalDispatcher, type Dispatcher } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DevUser } from '../../demo/dev-idp.ts';
import type { IdentityManagerTuning } from '../../runtime/process/run.ts';
import type { Hop } from '../support/http-browser.ts';
import { FakeDirectory } from '../runtime/sessions/directory/fake-directory.ts';
import { startAuthWorld, type AuthWorld } from './auth-support.ts';

const last = (hops: Hop[]): Hop => hops[hops.length - 1]!;


const FAST: IdentityManagerTuning = { scanIntervalMs: 100, leaseTtlMs: 1_000, backOff: { baseMs: 500, maxMs: 2_000 } };
/** Nobody's ID token says `staff`: only the directory can. */
const USERS: DevUser[] = [
  { id: 'alice', email: 'alice@example.com', name: 'Alice', groups: ['admins'] },
  { id: 'bob', email: 'bob@example.com', name: 'Bob', groups: [] },
];

let fake: FakeDirectory;
let previous: Dispatcher;
let w: AuthWorld;

beforeAll(async () => {
  fake = await FakeDirectory.start({ groups: [{ id: '00g-staff', name: 'staff' }], members: { '00g-staff': ['alice'] }, users: { alice: {}, bob: {} } });
  // svc's directory requests go through undici's global dispatcher: trust the fake's CA there.
  previous = getGlobalDispatcher();
  setGlobalDispatcher(new Agent({ connect: { ca: [...rootCertificates, fake.ca] } }));
  w = await startAuthWorld({
    routes: [{ name: 'app', from: 'https://app.localhost:PORT', to: 'UPSTREAM', policy: 'allow if groups has "staff"' }],
    users: USERS,
    identityManager: FAST,
    settings: {
      idp_provider: 'okta',
      idp_scopes: ['openid', 'profile', 'email', 'offline_access'],
      idp_service_account: fake.account('okta'),
      idp_refresh_directory_interval: '1s',
      idp_refresh_directory_timeout: '5s',
    },
  });
}, 60_000);
afterAll(async () => {
  await w?.close();
  const mine = getGlobalDispatcher();
  setGlobalDispatcher(previous);
  await mine.close();
  await fake?.close();
});

const figures = () => w.svc.identityManager!.figures();

describe('groups from the directory, with svc run', () => {
  it('policy sees directory groups at sign-in, changes after the next sync (not before), keeps them through a failing sync, and ends a removed user', async () => {
    await until('the first directory sync', () => figures().userGroupRefreshSuccess >= 1);
    const alice = w.browser();
    expect(last(await alice.signIn(`${w.origin('app')}/`, 'alice@example.com')).status).toBe(200);
    // The user page says where each group came from: the ID token's claim, or the directory.
    const page = (await alice.request(`${w.origin('app')}/.svc/`)).body;
    expect(page).toContain('<code id="groups-claim">admins</code>');
    expect(page).toContain('<code id="groups-directory">00g-staff, staff</code>');
    const bob = w.browser();
    expect(last(await bob.signIn(`${w.origin('app')}/`, 'bob@example.com')).status).toBe(403);

    // Alice leaves staff at the directory: allowed while no sync has ended since, refused after one.
    fake.model.members['00g-staff'] = [];
    const syncs = figures().userGroupRefreshSuccess;
    const early = (await alice.request(`${w.origin('app')}/early`)).status;
    if (figures().userGroupRefreshSuccess === syncs) expect(early).toBe(200);
    let status = 0;
    await until('alice is refused', async () => (status = (await alice.request(`${w.origin('app')}/`)).status) !== 200);
    expect(status).toBe(403);
    expect(figures().userGroupRefreshSuccess).toBeGreaterThan(syncs);
    const me = await alice.request(`${w.origin('app')}/.svc/`);
    expect(me.body).toContain('admins');
    expect(me.body).not.toContain('staff');

    // Bob joins staff: allowed after the next sync, without signing in again.
    fake.model.members['00g-staff'] = ['bob'];
    await until('bob is allowed', async () => (await bob.request(`${w.origin('app')}/`)).status === 200);

    // The directory fails: bob keeps his groups, and the failures are counted.
    const errors = figures().userGroupRefreshError;
    fake.down = true;
    fake.model.members['00g-staff'] = [];
    await until('a failed sync is counted', () => figures().userGroupRefreshError > errors);
    expect(figures().userGroupRefreshErrorMs).toBeGreaterThan(0);
    expect((await bob.request(`${w.origin('app')}/during-outage`)).status).toBe(200);
    fake.down = false;
    await until('bob is refused once the directory answers', async () => (await bob.request(`${w.origin('app')}/`)).status === 403);

    // Bob is deleted at the directory: his session ends (a browser is sent to sign in).
    delete fake.model.users['bob'];
    await until('bob is signed out', async () => (await bob.request(`${w.origin('app')}/`)).status === 302);
    expect((await alice.request(`${w.origin('app')}/`)).status).toBe(403);
  }, 60_000);
});
