import * as http from 'node:http';
import type { AddressInfo } from 'node:net';

import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { DEMO_USERS, DEV_PASSWORD, startDevIdp, type DevIdp } from '../../demo/dev-idp.ts';
import { HttpBrowser, type Hop } from '../support/http-browser.ts';

const CLIENT_ID = 'svc-test';
const CLIENT_SECRET = 'svc-test-secret-0123456789';
const REDIRECT_URI = 'http://rp.test/callback';
const POST_LOGOUT_URI = 'http://rp.test/signed-out';
const TOKEN_TTL = 5;

function last(hops: readonly Hop[]): Hop {
  const hop = hops[hops.length - 1];
  if (hop === undefined) throw new Error('no hops');
  return hop;
}

function locationOf(hop: Hop): URL {
  const location = hop.headers['location'];
  if (typeof location !== 'string') throw new Error(`hop ${hop.status} ${hop.url} has no Location`);
  return new URL(location, hop.url);
}

describe('dev IdP (oidc-provider 9) driven by openid-client 6', () => {
  let idp: DevIdp;
  let postConfig: client.Configuration;
  let basicConfig: client.Configuration;
  const logLines: string[] = [];
  const consoleLines: string[] = [];

  const newBrowser = (): HttpBrowser =>
    new HttpBrowser((url) => (url.hostname === '127.0.0.1' && url.port === String(idp.port) ? { port: idp.port } : undefined));

  interface Flow {
    readonly url: URL;
    readonly verifier: string;
    readonly state: string;
    readonly nonce: string;
  }

  async function startFlow(config: client.Configuration, extra: Record<string, string> = {}): Promise<Flow> {
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT_URI,
      scope: 'openid profile email offline_access',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
      ...extra,
    });
    return { url, verifier, state, nonce };
  }

  async function signInAndExchange(
    config: client.Configuration,
    login: string,
    browser: HttpBrowser = newBrowser(),
  ): Promise<{ readonly tokens: client.TokenEndpointResponse & client.TokenEndpointResponseHelpers; readonly hops: Hop[] }> {
    const flow = await startFlow(config);
    const hops = await browser.signIn(flow.url.href, login);
    const callback = locationOf(last(hops));
    expect(`${callback.origin}${callback.pathname}`).toBe(REDIRECT_URI);
    const tokens = await client.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: flow.verifier,
      expectedState: flow.state,
      expectedNonce: flow.nonce,
    });
    return { tokens, hops };
  }

  beforeAll(async () => {
    for (const method of ['warn', 'info', 'log'] as const) {
      const original = console[method].bind(console);
      vi.spyOn(console, method).mockImplementation((...args: unknown[]) => {
        consoleLines.push(args.map(String).join(' '));
        original(...args);
      });
    }
    idp = await startDevIdp({
      clients: [{
        clientId: CLIENT_ID,
        clientSecret: CLIENT_SECRET,
        redirectUris: [REDIRECT_URI],
        postLogoutRedirectUris: [POST_LOGOUT_URI],
      }],
      accessTokenTtlSeconds: TOKEN_TTL,
      log: (line) => logLines.push(line),
    });
    const options = { execute: [client.allowInsecureRequests] };
    postConfig = await client.discovery(new URL(idp.issuer), CLIENT_ID, CLIENT_SECRET, undefined, options);
    basicConfig = await client.discovery(new URL(idp.issuer), CLIENT_ID, CLIENT_SECRET, client.ClientSecretBasic(CLIENT_SECRET), options);
  });

  afterAll(async () => {
    vi.restoreAllMocks();
    await idp?.close();
  });

  it('publishes discovery for a loopback issuer with PKCE S256, both secret auth methods, groups and logout', () => {
    expect(idp.issuer).toBe(`http://127.0.0.1:${idp.port}`);
    const metadata = postConfig.serverMetadata();
    expect(metadata.issuer).toBe(idp.issuer);
    expect(metadata.code_challenge_methods_supported).toEqual(['S256']);
    expect(metadata.token_endpoint_auth_methods_supported).toEqual(
      expect.arrayContaining(['client_secret_basic', 'client_secret_post']),
    );
    expect(metadata.scopes_supported).toEqual(
      expect.arrayContaining(['openid', 'profile', 'email', 'offline_access', 'groups']),
    );
    expect(metadata.grant_types_supported).toEqual(expect.arrayContaining(['authorization_code', 'refresh_token']));
    expect(metadata.end_session_endpoint).toBe(`${idp.issuer}/session/end`);
    expect(metadata.response_types_supported).toEqual(['code']);
  });

  it('signs alice in through the login page and puts email, name and groups in the ID token', async () => {
    const before = idp.tokenCalls['authorization_code'] ?? 0;
    const browser = newBrowser();
    const { tokens, hops } = await signInAndExchange(postConfig, 'alice@example.com', browser);

    const loginPage = hops.find((hop) => hop.body.includes('action="/interaction/'));
    expect(loginPage?.status).toBe(200);
    expect(loginPage?.body).toContain('<title>svc dev identity provider — local use only</title>');
    expect(loginPage?.body).toContain('<button type="submit">Sign in</button>');
    // Provider cookies work over plain http: none of them is Secure.
    const setCookies = hops.flatMap((hop) => hop.headers['set-cookie'] ?? []);
    expect(setCookies.length).toBeGreaterThan(0);
    expect(setCookies.filter((line) => /;\s*secure/i.test(line))).toEqual([]);
    expect(Object.keys(browser.cookies('127.0.0.1'))).toContain('_session');

    const claims = tokens.claims();
    expect(claims).toMatchObject({
      iss: idp.issuer,
      sub: 'alice',
      aud: CLIENT_ID,
      email: 'alice@example.com',
      email_verified: true,
      name: 'Alice Example',
      groups: ['admins', 'staff'],
    });
    expect(typeof tokens.refresh_token).toBe('string');
    expect(tokens.expires_in).toBeGreaterThan(0);
    expect(tokens.expires_in).toBeLessThanOrEqual(TOKEN_TTL);
    expect((claims?.exp ?? 0) - (claims?.iat ?? 0)).toBe(TOKEN_TTL);
    expect(idp.tokenCalls['authorization_code']).toBe(before + 1);

    const userinfo = await client.fetchUserInfo(postConfig, tokens.access_token, 'alice');
    expect(userinfo).toMatchObject({ sub: 'alice', email: 'alice@example.com', name: 'Alice Example', groups: ['admins', 'staff'] });
  });

  it('refreshes with client_secret_basic and client_secret_post, then refuses refreshes after revokeUser', async () => {
    const alice = await signInAndExchange(basicConfig, 'alice');
    const bob = await signInAndExchange(postConfig, 'bob@other.example');
    const aliceRefresh = alice.tokens.refresh_token ?? '';
    const bobRefresh = bob.tokens.refresh_token ?? '';
    expect(bob.tokens.claims()).toMatchObject({ sub: 'bob', email: 'bob@other.example', groups: ['guests'] });

    const before = idp.tokenCalls['refresh_token'] ?? 0;
    const refreshed = await client.refreshTokenGrant(basicConfig, aliceRefresh);
    expect(refreshed.access_token).not.toBe(alice.tokens.access_token);
    expect(refreshed.claims()).toMatchObject({ sub: 'alice', groups: ['admins', 'staff'] });
    const refreshedPost = await client.refreshTokenGrant(postConfig, bobRefresh);
    expect(refreshedPost.claims()).toMatchObject({ sub: 'bob', groups: ['guests'] });
    expect(idp.tokenCalls['refresh_token']).toBe(before + 2);

    await idp.revokeUser('alice');
    const latestAliceRefresh = refreshed.refresh_token ?? aliceRefresh;
    await expect(client.refreshTokenGrant(basicConfig, latestAliceRefresh)).rejects.toMatchObject({ error: 'invalid_grant' });
    await expect(client.fetchUserInfo(basicConfig, refreshed.access_token, 'alice')).rejects.toBeDefined();
    // Other users are unaffected.
    const bobAgain = await client.refreshTokenGrant(postConfig, refreshedPost.refresh_token ?? bobRefresh);
    expect(bobAgain.claims()?.sub).toBe('bob');
    expect(idp.tokenCalls['refresh_token']).toBe(before + 3);
  });

  it('answers a wrong password or an unknown user with the form again and status 401', async () => {
    const browser = newBrowser();
    const flow = await startFlow(postConfig);
    const wrong = await browser.signIn(flow.url.href, 'alice', `${DEV_PASSWORD}-wrong`);
    expect(last(wrong).status).toBe(401);
    expect(last(wrong).body).toContain('action="/interaction/');
    expect(last(wrong).body).toContain('Unknown user or wrong password.');

    const unknown = await browser.signIn(flow.url.href, 'mallory@example.com');
    expect(last(unknown).status).toBe(401);

    // The same browser can still sign in properly afterwards.
    const ok = await browser.signIn(flow.url.href, 'alice');
    const callback = locationOf(last(ok));
    expect(callback.searchParams.get('state')).toBe(flow.state);
    expect(callback.searchParams.get('code')).toBeTruthy();
  });

  it('requires PKCE with S256', async () => {
    const browser = newBrowser();
    const missing = new URL(`${idp.issuer}/auth`);
    missing.search = new URLSearchParams({
      client_id: CLIENT_ID,
      redirect_uri: REDIRECT_URI,
      response_type: 'code',
      scope: 'openid',
      state: 'no-pkce',
    }).toString();
    const refused = locationOf(last(await browser.navigate(missing.href)));
    expect(refused.searchParams.get('error')).toBe('invalid_request');
    expect(refused.searchParams.get('state')).toBe('no-pkce');

    const plain = await startFlow(postConfig, { code_challenge: 'a'.repeat(43), code_challenge_method: 'plain' });
    const plainRefused = locationOf(last(await browser.navigate(plain.url.href)));
    expect(plainRefused.searchParams.get('error')).toBe('invalid_request');
  });

  it('ends the session via RP-initiated logout and lands on the post-logout redirect URI', async () => {
    const browser = newBrowser();
    const { tokens } = await signInAndExchange(postConfig, 'bob', browser);
    const endSession = client.buildEndSessionUrl(postConfig, {
      id_token_hint: tokens.id_token ?? '',
      post_logout_redirect_uri: POST_LOGOUT_URI,
      state: 'bye',
    });
    const confirm = last(await browser.navigate(endSession.href));
    expect(confirm.status).toBe(200);
    expect(confirm.body).toContain('<button type="submit">Sign out</button>');
    expect(confirm.body).toMatch(/<script>[^<]*\.submit\(\)/);

    // What the page's inline script does: submit the form.
    const out = last(await browser.submitForm(confirm));
    expect(out.status).toBe(303);
    const target = locationOf(out);
    expect(`${target.origin}${target.pathname}`).toBe(POST_LOGOUT_URI);
    expect(target.searchParams.get('state')).toBe('bye');

    // The provider session is gone (sign-in is asked for again) and so is the grant behind the refresh token.
    const again = await startFlow(postConfig);
    expect(last(await browser.navigate(again.url.href)).body).toContain('action="/interaction/');
    await expect(client.refreshTokenGrant(postConfig, tokens.refresh_token ?? '')).rejects.toMatchObject({ error: 'invalid_grant' });
  });

  it('routes oidc-provider notices to options.log and keeps them off the console', () => {
    // Runs last in this block: every flow above (login, consent, refresh, userinfo, logout, errors) has run.
    expect(consoleLines.filter((line) => line.includes('oidc-provider'))).toEqual([]);
    expect(logLines.filter((line) => /server error|interaction error/.test(line))).toEqual([]);
    expect(DEMO_USERS).toEqual([
      { id: 'alice', email: 'alice@example.com', name: 'Alice Example', groups: ['admins', 'staff'] },
      { id: 'bob', email: 'bob@other.example', name: 'Bob Other', groups: ['guests'] },
    ]);
  });
});

describe('HttpBrowser cookies', () => {
  let server: http.Server;
  let port = 0;

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      res.setHeader('x-cookie', req.headers.cookie ?? '');
      res.setHeader('x-host', req.headers.host ?? '');
      switch (url.pathname) {
        case '/set':
          res.setHeader('set-cookie', [
            'host_only=1; Path=/; Secure; HttpOnly',
            'shared=2; Domain=example.com; Path=/',
            'scoped=3; Path=/app',
            'foreign=4; Domain=other.test',
          ]);
          break;
        case '/clear':
          res.setHeader('set-cookie', ['host_only=; Max-Age=0; Path=/', 'scoped=; Path=/app; Expires=Thu, 01 Jan 1970 00:00:00 GMT']);
          break;
        case '/hop':
          res.statusCode = 302;
          res.setHeader('location', '/set');
          break;
        case '/away':
          res.statusCode = 302;
          res.setHeader('location', 'http://refused.test/callback?x=1');
          break;
        default:
      }
      res.end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('keeps cookies per host, honours Domain, Path and deletion, and stops at refused redirects', async () => {
    const browser = new HttpBrowser((url) => (url.hostname.endsWith('example.com') ? { port } : undefined));
    const hops = await browser.navigate('http://app.example.com/hop');
    expect(hops.map((hop) => hop.status)).toEqual([302, 200]);
    expect(last(hops).headers['x-host']).toBe('app.example.com');
    expect(browser.cookies('app.example.com')).toEqual({ host_only: '1', shared: '2', scoped: '3' });
    expect(browser.cookies('api.example.com')).toEqual({ shared: '2' });

    const root = await browser.request('http://app.example.com/');
    expect(root.headers['x-cookie']).toBe('host_only=1; shared=2');
    const app = await browser.request('http://app.example.com/app/page');
    expect(app.headers['x-cookie']).toBe('scoped=3; host_only=1; shared=2');
    expect((await browser.request('http://app.example.com/apple')).headers['x-cookie']).toBe('host_only=1; shared=2');

    await browser.request('http://app.example.com/clear');
    expect(browser.cookies('app.example.com')).toEqual({ shared: '2' });

    browser.setCookie('api.example.com', 'manual', 'v');
    expect((await browser.request('http://api.example.com/')).headers['x-cookie']).toBe('shared=2; manual=v');

    const away = await browser.navigate('http://app.example.com/away');
    expect(away).toHaveLength(1);
    expect(locationOf(last(away)).href).toBe('http://refused.test/callback?x=1');
    await expect(browser.request('http://refused.test/')).rejects.toThrow(/no route/);

    browser.clearCookies();
    expect(browser.cookies('app.example.com')).toEqual({});
  });
});
