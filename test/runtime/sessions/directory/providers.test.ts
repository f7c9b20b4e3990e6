/**
 * Each directory client (runtime/sessions/directory/) against a loopback HTTPS server speaking its
 * vendor's documented shapes (./fake-directory.ts): paths, credentials, pagination (one item a
 * page), error bodies, and rate limits waited out within the sync's deadline
 * (docs/authentication.md "Groups from the directory").
 */
import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { PlanSettings } from '../../../../compiler/plan/types.ts';
import { directoryClient, userKeyOf } from '../../../../runtime/sessions/directory/index.ts';
import { DirectoryError, nextLink, rateLimitWaitMs, type DirectoryCall } from '../../../../runtime/sessions/directory/http.ts';
import { groupsOf } from '../../../../runtime/sessions/directory/types.ts';
import { baseModel, FakeDirectory } from './fake-directory.ts';

/** A key the fake directory does not know: its signature is refused. */
const OTHER_KEY = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

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
  fake.requests.length = 0;
});

type Provider = 'gitlab' | 'okta' | 'azure' | 'google' | 'github';
const idp = (provider: string, account: string, providerUrl: string | null = null): PlanSettings['idp'] => ({
  provider,
  providerUrl,
  clientId: 'c',
  clientSecret: null,
  scopes: [],
  serviceAccount: { value: account, fingerprint: 'sha256:test' },
  requestParams: {},
  trustUnverifiedEmail: false,
  refreshDirectoryIntervalMs: 600_000,
  refreshDirectoryTimeoutMs: 60_000,
});
const client = (p: Provider) => directoryClient(idp(p, fake.account(p)), (s) => ('value' in s ? s.value : ''))!;
const call = (timeoutMs = 10_000, log?: DirectoryCall['log']): DirectoryCall => ({ signal: AbortSignal.timeout(timeoutMs), deadlineMs: Date.now() + timeoutMs, dispatcher: fake.dispatcher, ...(log ? { log } : {}) });

describe('directory clients read their vendor API, every page', () => {
  it('gitlab: groups by id and full path, inherited members, blocked members left out, no user list', async () => {
    const d = await client('gitlab').read(call());
    expect(d.groups).toEqual({ '101': ['engineering'], '102': ['admins'] });
    expect(d.members).toEqual({ '1': ['101', '102'], '2': ['101'] });
    expect(d.users).toBeNull();
    expect(groupsOf(d, '1')).toEqual(['101', 'engineering', '102', 'admins']);
    // x-next-page for groups (2 pages), Link for members (2 + 1 pages: user 3 is blocked)
    expect(fake.requests.filter((r) => r.path === '/api/v4/groups')).toHaveLength(2);
    expect(fake.requests.filter((r) => r.path === '/api/v4/groups/101/members/all')).toHaveLength(2);
  });

  it('okta: SSWS, Link rel="next" with after cursors, suspended and deprovisioned users left out', async () => {
    const d = await client('okta').read(call());
    expect(d.groups).toEqual({ '101': ['engineering'], '102': ['admins'] });
    expect(d.members).toEqual({ '1': ['101', '102'], '2': ['101'] });
    expect(d.users).toEqual(['1', '2']);
    expect(fake.requests.filter((r) => r.path === '/api/v1/users')).toHaveLength(3);
  });

  it('azure: client-credentials token, Graph transitive members (users only), @odata.nextLink, disabled accounts not known', async () => {
    const d = await client('azure').read(call());
    expect(d.groups).toEqual({ '101': ['engineering'], '102': ['admins'] });
    expect(d.members).toEqual({ '1': ['101', '102'], '2': ['101'], '3': ['102'] });
    expect(d.users).toEqual(['1', '2']);
    expect(fake.requests[0]).toMatchObject({ method: 'POST', path: '/tenant-1/oauth2/v2.0/token' });
    expect(userKeyOf('azure', { userId: 'pairwise-sub', claims: { oid: '1' } })).toBe('1');
    expect(userKeyOf('okta', { userId: 'sub', claims: { oid: '1' } })).toBe('sub');
  });

  it('google: a JWT bearer grant signed with the key, at the key file token_uri; groups by id and email; nested groups are not users', async () => {
    const d = await client('google').read(call());
    expect(d.groups).toEqual({ '101': ['engineering@corp.example'], '102': ['admins@corp.example'] });
    expect(d.members).toEqual({ '1': ['101', '102'], '2': ['101'], '3': ['102'] });
    expect(d.users).toEqual(['1', '2']);
    expect(fake.requests[0]).toMatchObject({ method: 'POST', path: '/token' });
  });

  it.each(['gitlab', 'okta', 'azure', 'google'] as const)('%s: a refused credential fails the read with the API message', async (p) => {
    const bad = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(fake.account(p), 'base64').toString()), private_token: 'x', api_key: 'x', client_secret: 'x', private_key: OTHER_KEY })).toString('base64');
    const c = directoryClient(idp(p, bad), (s) => ('value' in s ? s.value : ''))!;
    const err = await c.read(call()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DirectoryError);
    expect((err as DirectoryError).code).toBe('SVC_ERR_DIRECTORY');
    expect(String((err as Error).message)).toMatch(/HTTP (400|401): (401 Unauthorized|Invalid token provided|AADSTS7000215: Invalid client secret provided\.|Invalid JWT Signature\.)/);
  });

  it('github: the organizations\' teams as org/slug, members by account id (child teams included by GitHub), Link pages, no user list', async () => {
    const d = await client('github').read(call());
    expect(d.groups).toEqual({ 'acme/engineering': [], 'acme/admins': [] });
    expect(d.members).toEqual({ '1': ['acme/engineering', 'acme/admins'], '2': ['acme/engineering'] });
    expect(d.users).toBeNull();
    expect(groupsOf(d, '1')).toEqual(['acme/engineering', 'acme/admins']);
    // One team a page: 2 pages of teams, 2 pages of engineering's members.
    expect(fake.requests.filter((r) => r.path === '/api/v3/orgs/acme/teams')).toHaveLength(2);
    expect(fake.requests.filter((r) => r.path === '/api/v3/orgs/acme/teams/engineering/members')).toHaveLength(2);
  });

  it('a 5xx fails the read, naming the path and the API message', async () => {
    fake.down = true;
    await expect(client('okta').read(call())).rejects.toThrow(/\/api\/v1\/groups: HTTP 500: backend error/);
  });
});

describe('rate limits', () => {
  it('a 429 with Retry-After is waited out and the same request made again', async () => {
    fake.inject({ status: 429, path: '/api/v1/groups/102/users', headers: { 'retry-after': '1' }, body: { errorCode: 'E0000047', errorSummary: 'API call exceeded rate limit due to too many requests.' } });
    const logs: Record<string, unknown>[] = [];
    const d = await client('okta').read(call(10_000, (e) => logs.push(e)));
    expect(d.members['1']).toEqual(['101', '102']);
    const hits = fake.requests.filter((r) => r.path === '/api/v1/groups/102/users');
    expect(hits.length).toBeGreaterThanOrEqual(2);
    expect(hits[1]!.at - hits[0]!.at).toBeGreaterThanOrEqual(950);
    expect(logs).toContainEqual(expect.objectContaining({ msg: 'directory: rate limited; waiting before asking again', status: 429, waitMs: 1000 }));
  });

  it('a 403 with x-ratelimit-remaining 0 waits until x-ratelimit-reset (GitLab, GitHub)', async () => {
    const reset = Math.ceil(Date.now() / 1000) + 1;
    fake.inject({ status: 403, path: '/api/v4/groups', headers: { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(reset) }, body: { message: 'rate limit' } });
    const d = await client('gitlab').read(call());
    expect(Object.keys(d.groups)).toEqual(['101', '102']);
    expect(Date.now()).toBeGreaterThanOrEqual(reset * 1000 - 50);
  });

  it("Google's 403 rateLimitExceeded (no header) is backed off and retried", async () => {
    fake.inject({ status: 403, path: '/admin/directory/v1/users', body: { error: { code: 403, message: 'Quota exceeded', errors: [{ reason: 'rateLimitExceeded' }] } } });
    const d = await client('google').read(call());
    expect(d.users).toEqual(['1', '2']);
  });

  it('a wait past the deadline fails the read at once, without asking again', async () => {
    fake.inject({ status: 429, path: '/v1.0/groups', headers: { 'retry-after': '120' } });
    const started = Date.now();
    await expect(client('azure').read(call(5_000))).rejects.toThrow(/rate limited \(HTTP 429\) beyond idp_refresh_directory_timeout/);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(fake.requests.filter((r) => r.path === '/v1.0/groups')).toHaveLength(1);
  });

  it('a 403 without rate-limit signs is a refusal, not a wait', async () => {
    fake.inject({ status: 403, path: '/api/v4/groups', body: { message: '403 Forbidden' } });
    await expect(client('gitlab').read(call())).rejects.toThrow(/HTTP 403: 403 Forbidden/);
  });

  it('reads the headers as documented', () => {
    const h = (o: Record<string, string>) => new Headers(o);
    expect(rateLimitWaitMs({ status: 429, headers: h({ 'retry-after': '3' }) }, 0)).toBe(3000);
    expect(rateLimitWaitMs({ status: 429, headers: h({ 'x-rate-limit-reset': '10' }) }, 4000)).toBe(6000);
    expect(rateLimitWaitMs({ status: 429, headers: h({}) }, 0)).toBeNull();
    expect(rateLimitWaitMs({ status: 403, headers: h({}) }, 0)).toBeUndefined();
    expect(rateLimitWaitMs({ status: 403, headers: h({ 'x-ratelimit-remaining': '5', 'x-ratelimit-reset': '10' }) }, 0)).toBeUndefined();
    expect(rateLimitWaitMs({ status: 500, headers: h({ 'retry-after': '3' }) }, 0)).toBeUndefined();
    expect(nextLink('<https://x/a?page=1>; rel="prev", <https://x/a?page=3>; rel="next"', 'https://x/')).toBe('https://x/a?page=3');
    expect(nextLink('<https://x/a?after=1>; rel="self"', 'https://x/')).toBeUndefined();
  });
});

describe('which providers have a directory client', () => {
  it('oidc is refused with a reason; a malformed account is refused naming the field', () => {
    expect(directoryClient(idp('github', Buffer.from('{"username":"u","personal_access_token":"p"}').toString('base64')), (s) => ('value' in s ? s.value : ''))?.provider).toBe('github');
    expect(() => directoryClient(idp('oidc', 'e30='), (s) => ('value' in s ? s.value : ''))).toThrow(/no directory for idp_provider `oidc`/);
    expect(() => directoryClient(idp('okta', 'e30='), (s) => ('value' in s ? s.value : ''))).toThrow(/has no `api_key`/);
    expect(directoryClient({ ...idp('okta', ''), serviceAccount: null })).toBeNull();
  });
});
