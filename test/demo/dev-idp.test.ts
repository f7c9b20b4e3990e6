import { spawn, type ChildProcess } from 'node:child_process';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { DEMO_USERS, DEV_IDP_USAGE, DEV_PASSWORD, parseDevIdpArgs, startDevIdp, type DevIdp } from '../../demo/dev-idp.ts';
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

const DEV_IDP = join(import.meta.dirname, '../../demo/dev-idp.ts');

/** `demo/dev-idp.ts ARGS` as a program (node with the tsx loader, as `npx tsx` runs it). */
function devIdpProcess(args: readonly string[]): { readonly child: ChildProcess; readonly output: () => { stdout: string; stderr: string }; readonly exited: Promise<number | null> } {
  const child = spawn(process.execPath, ['--import', 'tsx', DEV_IDP, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env['PATH'] ?? '' } });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => ({ stdout, stderr }), exited };
}

describe('demo/dev-idp.ts as a program (docs/dev-idp.md)', () => {
  const clientId = 'my-svc';
  const clientSecret = 'my-secret-0123456789';
  const redirectUri = 'https://authenticate.example.test/oauth2/callback';
  let running: ReturnType<typeof devIdpProcess> | undefined;
  let issuer = '';

  beforeAll(async () => {
    running = devIdpProcess(['--port', '0', '--client-id', clientId, '--client-secret', clientSecret, '--redirect-uri', redirectUri]);
    const started = running;
    issuer = await new Promise<string>((resolve, reject) => {
      const timer = setInterval(() => {
        const found = /^svc dev identity provider \(local use only\) at (http:\/\/127\.0\.0\.1:\d+)$/m.exec(started.output().stdout);
        if (found?.[1] !== undefined) {
          clearInterval(timer);
          resolve(found[1]);
        }
      }, 50);
      void started.exited.then((code) => {
        clearInterval(timer);
        reject(new Error(`dev-idp exited with ${code}: ${started.output().stderr}`));
      });
    });
  }, 60_000);

  afterAll(async () => {
    if (running && running.child.exitCode === null) {
      running.child.kill('SIGTERM');
      expect(await running.exited).toBe(0);
    }
  });

  /** The authorization request svc makes (code flow, PKCE S256), answered without following redirects. */
  async function authorize(askingClientId: string, redirect: string): Promise<Response> {
    const url = new URL(`${issuer}/auth`);
    url.search = new URLSearchParams({
      client_id: askingClientId,
      redirect_uri: redirect,
      response_type: 'code',
      scope: 'openid email profile',
      state: 'state-1',
      code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()),
      code_challenge_method: 'S256',
    }).toString();
    return fetch(url, { redirect: 'manual' });
  }

  it('prints its issuer and serves discovery for it', async () => {
    const { stdout } = running!.output();
    expect(stdout).toContain(`  client:        ${clientId}\n`);
    expect(stdout).toContain(`  redirect URI:  ${redirectUri}\n`);
    expect(stdout).not.toContain(clientSecret);
    const discovery = await fetch(`${issuer}/.well-known/openid-configuration`);
    expect(discovery.status).toBe(200);
    const metadata = (await discovery.json()) as Record<string, unknown>;
    expect(metadata['issuer']).toBe(issuer);
    expect(metadata['authorization_endpoint']).toBe(`${issuer}/auth`);
  });

  it('registers the client for its redirect URI: accepted there, refused for any other and for another client', async () => {
    const accepted = await authorize(clientId, redirectUri);
    expect(accepted.status).toBe(303);
    // On to the provider's own sign-in page: the request was accepted (a refused one stays at /auth).
    expect(new URL(accepted.headers.get('location') ?? '', issuer).href).toMatch(new RegExp(`^${issuer}/interaction/[\\w-]+$`));

    const otherUri = await authorize(clientId, 'https://elsewhere.example.test/oauth2/callback');
    expect(otherUri.status).toBe(400);
    expect(otherUri.headers.get('location')).toBeNull();
    expect(await otherUri.text()).toContain('invalid_redirect_uri');

    const otherClient = await authorize('svc-quickstart', redirectUri);
    expect(otherClient.status).toBe(400);
    expect(await otherClient.text()).toContain('invalid_client');
  });

  it('signs alice in with the demo password and sends the code to the redirect URI', async () => {
    const config = await client.discovery(new URL(issuer), clientId, clientSecret, undefined, { execute: [client.allowInsecureRequests] });
    const verifier = client.randomPKCECodeVerifier();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: 'openid email profile',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state: 'state-2',
    });
    const port = Number(new URL(issuer).port);
    const browser = new HttpBrowser((u) => (u.hostname === '127.0.0.1' && Number(u.port) === port ? { port } : undefined));
    const callback = locationOf(last(await browser.signIn(url.href, 'alice@example.com')));
    expect(`${callback.origin}${callback.pathname}`).toBe(redirectUri);
    const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: 'state-2' });
    expect(tokens.claims()).toMatchObject({ iss: issuer, aud: clientId, email: 'alice@example.com', groups: ['admins', 'staff'] });
  });
});

describe('demo/dev-idp.ts command line', () => {
  it('--help prints the options and the users, and exits 0', async () => {
    const help = devIdpProcess(['--help']);
    expect(await help.exited).toBe(0);
    expect(help.output().stdout).toBe(DEV_IDP_USAGE);
    for (const flag of ['--client-id', '--client-secret', '--redirect-uri', '--post-logout-redirect-uri', '--port', '--host', '--token-ttl']) {
      expect(DEV_IDP_USAGE).toContain(`  ${flag} `);
    }
    for (const user of DEMO_USERS) expect(DEV_IDP_USAGE).toContain(user.email);
  }, 60_000);

  it('a bad option is one error line and exit code 2', async () => {
    const bad = devIdpProcess(['--client-id', 'x', '--client-secret', 'y', '--redirect-uri', 'https://a.test/cb', '--prot', '9000']);
    expect(await bad.exited).toBe(2);
    expect(bad.output().stderr).toBe("error: Unknown option '--prot'\n(npx tsx demo/dev-idp.ts --help for the options)\n");
    expect(bad.output().stdout).toBe('');
  }, 60_000);

  it('parses the options and refuses what it cannot serve', () => {
    const base = ['--client-id', 'c', '--client-secret', 's', '--redirect-uri', 'https://a.test/oauth2/callback'];
    expect(parseDevIdpArgs(base)).toEqual({
      kind: 'run',
      options: { host: '127.0.0.1', port: 9000, accessTokenTtlSeconds: 3600, clients: [{ clientId: 'c', clientSecret: 's', redirectUris: ['https://a.test/oauth2/callback'], postLogoutRedirectUris: [] }] },
    });
    expect(parseDevIdpArgs([...base, '--redirect-uri', 'http://b.test/cb', '--post-logout-redirect-uri', 'https://a.test/', '--port', '0', '--host', '::1', '--token-ttl', '60'])).toEqual({
      kind: 'run',
      options: { host: '::1', port: 0, accessTokenTtlSeconds: 60, clients: [{ clientId: 'c', clientSecret: 's', redirectUris: ['https://a.test/oauth2/callback', 'http://b.test/cb'], postLogoutRedirectUris: ['https://a.test/'] }] },
    });
    expect(parseDevIdpArgs(['-h'])).toEqual({ kind: 'help' });
    const error = (args: readonly string[]) => {
      const parsed = parseDevIdpArgs(args);
      return parsed.kind === 'error' ? parsed.message : `not an error: ${parsed.kind}`;
    };
    expect(error([])).toMatch(/^give the client svc signs in as: --client-id ID/);
    expect(error(['--client-id', 'c', '--redirect-uri', 'https://a.test/cb'])).toMatch(/^give the client's secret: --client-secret/);
    expect(error(['--client-id', 'c', '--client-secret', 's'])).toMatch(/^give at least one --redirect-uri URI/);
    expect(error([...base, '--redirect-uri', '/oauth2/callback'])).toMatch(/^--redirect-uri `\/oauth2\/callback` is not an absolute URL/);
    expect(error([...base, '--redirect-uri', 'javascript:alert(1)'])).toMatch(/is not an http or https URL$/);
    expect(error([...base, '--post-logout-redirect-uri', 'https://a.test/#x'])).toMatch(/has a fragment/);
    expect(error([...base, '--port', '65536'])).toMatch(/^--port `65536` is not a port number/);
    expect(error([...base, '--port', 'http'])).toMatch(/^--port `http` is not a port number/);
    expect(error([...base, '--host', '0.0.0.0'])).toMatch(/^--host `0\.0\.0\.0` is not a loopback address: this provider is for local use only/);
    expect(error([...base, '--token-ttl', '0'])).toMatch(/^--token-ttl `0` is not a number of seconds/);
    expect(error([...base, '--port'])).toMatch(/--port <value>' argument missing/);
    expect(error([...base, 'extra'])).toMatch(/^Unexpected argument 'extra'/);
  });
});
