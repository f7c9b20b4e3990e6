/**
 * Sign-in with GitHub (runtime/sessions/github.ts; docs/authentication.md "GitHub") against a
 * loopback GitHub Enterprise Server speaking GitHub's documented OAuth and REST shapes
 * (./directory/fake-directory.ts): the authorization URL with `state` and PKCE, the code exchange
 * (an OAuth error answered 200 with `error`), the user from `/user`, only a verified primary e-mail,
 * every page of `/user/teams` as `org/slug` groups, the subject the account's numeric id; a revoked
 * token ends the session; the user read again sees a team change. All secrets are TEST ONLY.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { PlanSettings } from '../../../compiler/plan/types.ts';
import { GitHubProvider } from '../../../runtime/sessions/github.ts';
import { IdentityProviderError } from '../../../runtime/sessions/idp.ts';
import { baseModel, FakeDirectory, SECRETS } from './directory/fake-directory.ts';

let fake: FakeDirectory;
beforeAll(async () => {
  fake = await FakeDirectory.start(baseModel());
});
afterAll(async () => {
  await fake.close();
});
beforeEach(() => {
  fake.model = baseModel();
  fake.githubUser = '1';
  fake.githubOtherOrgAdmins = [];
  fake.requests.length = 0;
});

const CALLBACK = 'https://auth.example.com/oauth2/callback';
const settings = (providerUrl: string | null): PlanSettings['idp'] => ({
  provider: 'github',
  providerUrl,
  clientId: SECRETS.githubClient,
  clientSecret: null,
  scopes: [],
  serviceAccount: null,
  requestParams: {},
  trustUnverifiedEmail: false,
  refreshDirectoryIntervalMs: 600_000,
  refreshDirectoryTimeoutMs: 60_000,
});
const provider = (secret = SECRETS.githubSecret) => new GitHubProvider(settings(fake.httpUrl), secret, CALLBACK);

/** Runs the browser's part: the authorization URL at the fake, whose answer redirects to the callback. */
async function authorize(p: GitHubProvider, checks = p.newChecks()): Promise<{ query: string; checks: ReturnType<GitHubProvider['newChecks']> }> {
  const res = await fetch(await p.authorizationUrl(checks), { redirect: 'manual' });
  const location = new URL(res.headers.get('location') ?? '');
  expect(`${location.origin}${location.pathname}`).toBe(CALLBACK);
  return { query: location.search.slice(1), checks };
}

describe('GitHub sign-in', () => {
  it('asks for read:user user:email read:org with state and PKCE S256, at the server idp_provider_url names', async () => {
    const p = provider();
    const checks = p.newChecks();
    const url = new URL(await p.authorizationUrl(checks));
    expect(`${url.origin}${url.pathname}`).toBe(`${fake.httpUrl}/login/oauth/authorize`);
    expect(url.searchParams.get('scope')).toBe('read:user user:email read:org');
    expect(url.searchParams.get('state')).toBe(checks.state);
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url.searchParams.get('redirect_uri')).toBe(CALLBACK);
    expect(new URL(await new GitHubProvider(settings(null), 's', CALLBACK).authorizationUrl(checks)).origin).toBe('https://github.com');
  });

  it('signs the user in: numeric id as subject, the verified primary e-mail only, teams as org/slug from every page', async () => {
    const p = provider();
    const { query, checks } = await authorize(p);
    const user = await p.callback(query, checks, 1_000);
    expect(user.userId).toBe('1');
    expect(user.email).toBe('user1@corp.example');
    expect(user.groups).toEqual(['acme/admins', 'acme/engineering']);
    expect(user.claims).toMatchObject({ sub: '1', login: 'user1', name: 'User 1', email: 'user1@corp.example', email_verified: true });
    expect(user.accessToken).toMatch(/^gho_test_/);
    // Two teams, one a page: both pages read.
    expect(fake.requests.filter((r) => r.path === '/api/v3/user/teams')).toHaveLength(2);
  });

  it('a team of another organization with the same slug is its own group, never the one a policy names (S62)', async () => {
    fake.githubUser = '2';
    fake.githubOtherOrgAdmins = ['2'];
    const p = provider();
    const { query, checks } = await authorize(p);
    const user = await p.callback(query, checks, 0);
    expect(user.groups).toEqual(['acme/engineering', 'other-org/admins']);
    expect(user.groups).not.toContain('acme/admins');
    expect(user.groups).not.toContain('admins');
  });

  it('refuses a callback whose state does not match, a code used twice, a wrong PKCE verifier and a wrong client secret', async () => {
    const p = provider();
    const first = await authorize(p);
    await expect(p.callback(first.query, { ...first.checks, state: 'other' }, 0)).rejects.toMatchObject({ code: 'SVC_ERR_IDP_CALLBACK' });
    await p.callback(first.query, first.checks, 0);
    await expect(p.callback(first.query, first.checks, 0)).rejects.toThrow(/bad_verification_code/);
    const second = await authorize(p);
    await expect(p.callback(second.query, { ...second.checks, verifier: 'wrong-verifier-wrong-verifier-wrong-verifier' }, 0)).rejects.toThrow(/bad_verification_code/);
    const third = await authorize(provider('wrong-secret'));
    await expect(provider('wrong-secret').callback(third.query, third.checks, 0)).rejects.toThrow(/incorrect_client_credentials/);
  });

  it('reads the user again with the session token: a team removed at GitHub is gone; a revoked token ends the session', async () => {
    const p = provider();
    const { query, checks } = await authorize(p);
    const user = await p.callback(query, checks, 0);
    expect(await p.hasUserInfo()).toBe(true);
    fake.model.members['102'] = ['3'];
    const again = await p.userInfo(user.accessToken!, user);
    expect(again.groups).toEqual(['acme/engineering']);
    expect(again.userId).toBe('1');
    fake.githubTokens.delete(user.accessToken!);
    const refused = await p.userInfo(user.accessToken!, user).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(IdentityProviderError);
    expect((refused as IdentityProviderError).code).toBe('SVC_ERR_IDP_USERINFO');
  });

  it('an unreachable GitHub is an outage, never a sign-out', async () => {
    const p = new GitHubProvider(settings('http://127.0.0.1:1'), 's', CALLBACK);
    await expect(p.userInfo('t', { userId: '1', groups: [], claims: {} })).rejects.toMatchObject({ code: 'SVC_ERR_IDP_UNAVAILABLE' });
  });
});
