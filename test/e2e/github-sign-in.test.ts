/**
 * GitHub sign-in end to end (docs/authentication.md "GitHub"): `svc run` with `idp_provider: github`
 * and `idp_provider_url` naming a loopback GitHub Enterprise Server that speaks GitHub's OAuth and
 * REST shapes (test/runtime/sessions/directory/fake-directory.ts), with `idp_service_account` reading
 * its organizations' teams. A policy on a team (`groups has "acme/admins"`) admits a member and
 * refuses a non-member; the user page shows the verified primary e-mail, never the unverified one;
 * a team change at GitHub is seen after the next refresh, not before; a revoked token ends the
 * session. All secrets are TEST ONLY.
 */
import { until } from './support.ts';
import { rootCertificates } from 'node:tls';
import { Agent, getGlobalDispatcher, setGlobalDispatcher, type Dispatcher } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IdentityManagerTuning } from '../../runtime/process/run.ts';
import { HttpBrowser, type Hop } from '../support/http-browser.ts';
import { baseModel, FakeDirectory, SECRETS } from '../runtime/sessions/directory/fake-directory.ts';
import { startAuthWorld, type AuthWorld } from './auth-support.ts';

const last = (hops: Hop[]): Hop => hops[hops.length - 1]!;


const FAST: IdentityManagerTuning = { scanIntervalMs: 100, leaseTtlMs: 1_000, backOff: { baseMs: 500, maxMs: 2_000 } };

let fake: FakeDirectory;
let previous: Dispatcher;
let w: AuthWorld;

beforeAll(async () => {
  fake = await FakeDirectory.start(baseModel());
  // svc's directory requests go through undici's global dispatcher: trust the fake's CA there.
  previous = getGlobalDispatcher();
  setGlobalDispatcher(new Agent({ connect: { ca: [...rootCertificates, fake.ca] } }));
  w = await startAuthWorld({
    routes: [{ name: 'app', from: 'https://app.localhost:PORT', to: 'UPSTREAM', policy: 'allow if groups has "acme/admins"' }],
    identityManager: FAST,
    settings: {
      idp_provider: 'github',
      idp_provider_url: fake.httpUrl,
      idp_client_id: SECRETS.githubClient,
      idp_client_secret: SECRETS.githubSecret,
      idp_service_account: fake.account('github'),
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

/** A browser for svc's hosts and the fake GitHub (plain HTTP, its own port). */
const browser = () => {
  const github = Number(new URL(fake.httpUrl).port);
  return new HttpBrowser((url) => (url.hostname.endsWith('.localhost') && Number(url.port) === w.port ? { port: w.port } : url.hostname === '127.0.0.1' && Number(url.port) === github ? { port: github } : undefined));
};

describe('GitHub sign-in with svc run', () => {
  it('a team member is admitted, a non-member refused; a team removed at GitHub is refused after the next refresh; a revoked token ends the session', async () => {
    fake.githubUser = '1';
    const octo = browser();
    const hops = await octo.navigate(`${w.origin('app')}/`);
    expect(hops.some((h) => h.url.startsWith(`${fake.httpUrl}/login/oauth/authorize`))).toBe(true);
    expect(last(hops).status).toBe(200);
    const me = await octo.request(`${w.origin('app')}/.svc/`);
    expect(me.body).toContain('user1@corp.example');
    expect(me.body).not.toContain('unverified1@elsewhere.example');
    expect(me.body).toContain('acme/admins');

    fake.githubUser = '2';
    const other = browser();
    expect(last(await other.navigate(`${w.origin('app')}/`)).status).toBe(403);

    // User 1 leaves the admins team at GitHub: refused once a refresh has read it.
    fake.model.members['102'] = ['3'];
    await until('user 1 is refused', async () => (await octo.request(`${w.origin('app')}/`)).status === 403);

    // User 2 joins admins: admitted without signing in again.
    fake.model.members['102'] = ['2'];
    await until('user 2 is admitted', async () => (await other.request(`${w.origin('app')}/`)).status === 200);

    // User 2 revokes svc's token at GitHub: the session ends (a browser is sent to sign in again).
    for (const [token, user] of fake.githubTokens) if (user === '2') fake.githubTokens.delete(token);
    await until('user 2 is signed out', async () => (await other.request(`${w.origin('app')}/`)).status === 302);
  }, 60_000);
});
