/**
 * Sign-in end to end with real parts on loopback: the OpenID provider (oidc-provider), svc run and
 * an echo upstream. Policy decisions with real identities (alice allowed by domain, bob denied,
 * anonymous redirected or 401), the identity svc sends upstream, the user info page, sign-out with
 * CSRF and revocation, programmatic login, session refresh, and the security rows that live here
 * (S05, S22, S26, S30, S31).
 */
import { createLocalJWKSet, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Hop } from '../support/http-browser.ts';
import { startAuthWorld, testSigningKey, type AuthWorld } from './auth-support.ts';

const last = (hops: Hop[]): Hop => hops[hops.length - 1]!;
const echoed = (hop: Hop): { url: string; headers: Record<string, string> } => JSON.parse(hop.body) as { url: string; headers: Record<string, string> };

describe('sign-in with a real OpenID provider', () => {
  let w: AuthWorld;

  beforeAll(async () => {
    w = await startAuthWorld({
      settings: { signing_key: testSigningKey(), jwt_claims_headers: ['email', 'groups'] },
      routes: [
        { name: 'app', from: 'https://app.localhost:PORT', to: 'UPSTREAM', policy: 'allow if domain is "example.com"', pass_identity_headers: true },
        { name: 'other', from: 'https://other.localhost:PORT', to: 'UPSTREAM', allow_any_authenticated_user: true },
      ],
    });
  });
  afterAll(async () => {
    await w?.close();
  });

  it('anonymous: a browser is sent to sign in, an API client gets 401', async () => {
    const b = w.browser();
    const page = await b.request(`${w.origin('app')}/x?y=1`);
    expect(page.status).toBe(302);
    const signIn = new URL(String(page.headers['location']));
    expect(`${signIn.origin}${signIn.pathname}`).toBe(`${w.origin('authenticate')}/.svc/sign_in`);
    expect(signIn.searchParams.get('svc_redirect_uri')).toBe(`${w.origin('app')}/x?y=1`);
    const api = await b.request(`${w.origin('app')}/x`, { headers: { accept: 'application/json' } });
    expect(api.status).toBe(401);
    expect(JSON.parse(api.body)).toMatchObject({ status: 401, reason: 'sign-in-required' });
  });

  it('alice signs in, lands where she started, and the upstream gets a signed identity', async () => {
    const b = w.browser();
    const hops = await b.signIn(`${w.origin('app')}/hello?q=1`, 'alice@example.com');
    const end = last(hops);
    expect(end.status).toBe(200);
    expect(end.url).toBe(`${w.origin('app')}/hello?q=1`);
    const got = echoed(end);
    expect(got.url).toBe('/hello?q=1');
    expect(got.headers['x-svc-claim-email']).toBe('alice@example.com');
    expect(got.headers['x-svc-claim-groups']).toBe('admins,staff');
    // The assertion verifies against svc's published key set, for this route's port-specific audience.
    const jwks = JSON.parse((await b.request(`${w.origin('authenticate')}/.well-known/svc/jwks.json`)).body) as { keys: Record<string, string>[] };
    expect(jwks.keys).toHaveLength(1);
    expect(Object.keys(jwks.keys[0]!).sort()).toEqual(['alg', 'crv', 'kid', 'kty', 'use', 'x', 'y']);
    const { payload, protectedHeader } = await jwtVerify(got.headers['x-svc-jwt-assertion']!, createLocalJWKSet(jwks as never), { audience: `app.localhost:${w.port}`, issuer: `authenticate.localhost:${w.port}` });
    expect(protectedHeader.alg).toBe('ES256');
    expect(payload).toMatchObject({ sub: 'alice', user: 'alice', email: 'alice@example.com', groups: ['admins', 'staff'] });
    expect(payload.exp! - payload.iat!).toBeLessThanOrEqual(300);
    // `sid` is the session's public id (a hash), never the handle the cookie carries.
    expect(payload.sid).toMatch(/^[A-Za-z0-9_-]{22}$/);
    // svc's own session cookie never reaches the upstream.
    expect(got.headers['cookie'] ?? '').not.toContain('_svc=');
  });

  it('reuses the signed assertion for the same session and audience', async () => {
    const b = w.browser();
    await b.signIn(`${w.origin('app')}/`, 'alice@example.com');
    const a = echoed(await b.request(`${w.origin('app')}/1`)).headers['x-svc-jwt-assertion'];
    const c = echoed(await b.request(`${w.origin('app')}/2`)).headers['x-svc-jwt-assertion'];
    expect(a).toMatch(/^ey/);
    expect(c).toBe(a);
  });

  it('bob signs in and is denied with a 403 page', async () => {
    const b = w.browser();
    const end = last(await b.signIn(`${w.origin('app')}/`, 'bob@other.example'));
    expect(end.status).toBe(403);
    expect(end.body).toContain('403 · Access denied');
    expect(end.body).toContain('domain-unauthorized');
    expect(end.body).toContain('your email domain is not <code>example.com</code>');
    // Signed in, bob reaches a route that takes any signed-in user: the authenticate service remembers him.
    const other = last(await b.navigate(`${w.origin('other')}/`));
    expect(other.status).toBe(200);
    expect(echoed(other).headers['x-svc-jwt-assertion']).toBeUndefined(); // pass_identity_headers is off there
  });

  it('every sign-in starts a new session id (S31: no fixation)', async () => {
    const b = w.browser();
    await b.signIn(`${w.origin('app')}/`, 'alice@example.com');
    const first = b.cookies(`app.localhost`)['_svc'];
    const again = w.browser();
    // A fixed cookie planted before sign-in is not adopted.
    again.setCookie('app.localhost', '_svc', first!);
    again.setCookie('authenticate.localhost', '_svc', 'planted');
    await again.signIn(`${w.origin('other')}/`, 'alice@example.com');
    const second = again.cookies('other.localhost')['_svc'];
    expect(first).toMatch(/^[A-Za-z0-9_-]{40,}$/);
    expect(second).toMatch(/^[A-Za-z0-9_-]{40,}$/);
    expect(second).not.toBe(first);
  });

  it('S22: a garbage, truncated or foreign cookie is no session', async () => {
    const b = w.browser();
    await b.signIn(`${w.origin('app')}/`, 'alice@example.com');
    const good = b.cookies('app.localhost')['_svc']!;
    // One character changed for sure (a fixed replacement equal to the original, 1 time in 64, was no change at all).
    const flipped = `${good.slice(0, 20)}${good[20] === 'A' ? 'B' : 'A'}${good.slice(21)}`;
    for (const bad of ['garbage', good.slice(0, -4), flipped, '']) {
      const r = await w.browser().request(`${w.origin('app')}/`, { headers: { cookie: `_svc=${bad}` } });
      expect(r.status).toBe(302);
    }
    expect((await w.browser().request(`${w.origin('app')}/`, { headers: { cookie: `_svc=${good}` } })).status).toBe(200);
  });

  it('S05: a tampered or unsigned sign-in link is refused; only configured hosts are targets', async () => {
    const b = w.browser();
    const link = new URL(String((await b.request(`${w.origin('app')}/`)).headers['location']));
    const tampered = new URL(link);
    tampered.searchParams.set('svc_redirect_uri', 'https://evil.example/');
    expect((await b.request(tampered.href)).status).toBe(400);
    const unsigned = `${w.origin('authenticate')}/.svc/sign_in?svc_redirect_uri=${encodeURIComponent(`${w.origin('app')}/`)}`;
    expect((await b.request(unsigned)).status).toBe(400);
  });

  it('a hand-off is single use and bound to its host', async () => {
    const b = w.browser();
    const hops = await b.signIn(`${w.origin('app')}/`, 'alice@example.com');
    const handoff = hops.find((h) => h.url.includes('/.svc/callback?svc_handoff='))!;
    expect(handoff.status).toBe(302);
    // Replayed even with the binding cookie of the browser that started it (test/security/login-csrf.test.ts).
    const binding = ([hops[0]!.headers['set-cookie'] ?? []].flat().find((c) => c.startsWith('_svc_bind_')) ?? '').split(';')[0]!;
    expect(binding).toMatch(/^_svc_bind_[A-Za-z0-9_-]{12}=./);
    const replay = await w.browser().request(handoff.url, { headers: { cookie: binding } });
    expect(replay.status).toBe(400);
    expect(replay.body).toContain('hand-off-replayed');
    const elsewhere = handoff.url.replace(`app.localhost:${w.port}`, `other.localhost:${w.port}`);
    const moved = await w.browser().request(elsewhere);
    expect(moved.status).toBe(400);
  });

  it('the user info page shows who is signed in, never raw tokens (S26), for top-level navigation only', async () => {
    const b = w.browser();
    await b.signIn(`${w.origin('app')}/`, 'alice@example.com');
    const page = await b.request(`${w.origin('app')}/.svc/`);
    expect(page.status).toBe(200);
    expect(page.body).toContain('alice@example.com');
    expect(page.body).toContain('admins, staff');
    expect(page.body).not.toMatch(/eyJ[A-Za-z0-9_-]{10,}\./); // no JWT (ID token) anywhere
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.headers['x-frame-options']).toBe('DENY');
    const fetched = await b.request(`${w.origin('app')}/.svc/`, { headers: { 'sec-fetch-dest': 'empty', 'sec-fetch-mode': 'cors' } });
    expect(fetched.status).toBe(403);
    const anonymous = await w.browser().request(`${w.origin('app')}/.svc/`);
    expect(anonymous.status).toBe(302);
  });

  it('sign-out needs the CSRF token, revokes the session server-side (S30) and redirects', async () => {
    const b = w.browser();
    await b.signIn(`${w.origin('app')}/`, 'alice@example.com');
    const saved = b.cookies('app.localhost')['_svc']!;
    // Without the token a GET asks for confirmation, and a POST is refused: nothing changes.
    const confirm = await b.request(`${w.origin('app')}/.svc/signout/`);
    expect(confirm.status).toBe(200);
    expect(confirm.body).toContain('name="svc_csrf"');
    const forged = await b.request(`${w.origin('app')}/.svc/signout/`, { method: 'POST', body: 'svc_csrf=forged' });
    expect(forged.status).toBe(403);
    expect((await b.request(`${w.origin('app')}/`)).status).toBe(200);
    // The confirmation form signs out, through the provider's end-session endpoint, to the configured page.
    const hops = await b.submitForm(confirm);
    expect(hops[0]!.headers['set-cookie']).toEqual(expect.arrayContaining([expect.stringMatching(/^_svc=; .*Max-Age=0/)]));
    // The provider's end-session page submits itself in a browser; this client submits it.
    expect(last(hops).url.startsWith(`${w.idp.issuer}/session/end`)).toBe(true);
    const ended = await b.submitForm(last(hops));
    expect(last(ended).url).toBe(`${w.origin('public')}/signed-out`);
    // The saved cookie replayed afterwards opens no session, on this host and on the authenticate host.
    const replay = await w.browser().request(`${w.origin('app')}/`, { headers: { cookie: `_svc=${saved}` } });
    expect(replay.status).toBe(302);
  });

  it('programmatic login: a local client gets a bearer token bound to the route (spec 5.6, S05)', async () => {
    const b = w.browser();
    const callback = 'http://127.0.0.1:4321/callback';
    const loginUrl = await b.request(`${w.origin('app')}/.svc/api/v1/login?svc_redirect_uri=${encodeURIComponent(callback)}`);
    expect(loginUrl.status).toBe(200);
    const hops = await b.signIn(loginUrl.body.trim(), 'alice@example.com');
    const back = new URL(String(last(hops).headers['location']));
    expect(`${back.origin}${back.pathname}`).toBe(callback);
    const token = back.searchParams.get('svc_jwt')!;
    expect(token).toMatch(/^svc1\./);
    const api = w.browser();
    const ok = await api.request(`${w.origin('app')}/data`, { headers: { authorization: `Bearer ${token}`, accept: 'application/json' } });
    expect(ok.status).toBe(200);
    const got = echoed(ok);
    expect(got.headers['x-svc-claim-email']).toBe('alice@example.com');
    expect(got.headers['authorization']).toBeUndefined(); // svc's token stays with svc
    // Bound to the route's host: refused on another route.
    expect((await api.request(`${w.origin('other')}/`, { headers: { authorization: `Bearer ${token}`, accept: 'application/json' } })).status).toBe(401);
    // Tokens go only to loopback or allow-listed callbacks.
    for (const evil of ['https://evil.example/cb', 'http://evil.example/cb', 'http://user@127.0.0.1/cb', 'javascript:alert(1)']) {
      expect((await b.request(`${w.origin('app')}/.svc/api/v1/login?svc_redirect_uri=${encodeURIComponent(evil)}`)).status).toBe(400);
    }
  });
});

describe('session refresh with the provider', () => {
  let w: AuthWorld;
  beforeAll(async () => {
    w = await startAuthWorld({ accessTokenTtlSeconds: 1, routes: [{ name: 'app', from: 'https://app.localhost:PORT', to: 'UPSTREAM', policy: 'allow if domain is "example.com"' }] });
  });
  afterAll(async () => {
    await w?.close();
  });

  it('refreshes an expired access token, and a refused refresh ends the session', async () => {
    const alice = w.browser();
    expect(last(await alice.signIn(`${w.origin('app')}/`, 'alice@example.com')).status).toBe(200);
    const before = w.idp.tokenCalls['refresh_token'] ?? 0;
    await new Promise((r) => setTimeout(r, 1_200));
    expect((await alice.request(`${w.origin('app')}/after-expiry`)).status).toBe(200);
    // The request refreshed it; the identity manager may have too (its margin, a minute, is longer
    // than these tokens live: test/e2e/identity-manager.test.ts).
    expect(w.idp.tokenCalls['refresh_token'] ?? 0).toBeGreaterThanOrEqual(before + 1);
    // The provider revokes alice's grant: at the next expiry the refresh fails and the session ends.
    // On a loaded machine the identity manager may refresh just before the revocation lands, so the
    // session's last token can outlive the wait by a little: ask until it has expired (bounded).
    // A refresh the loaded provider fails to answer keeps the session and backs off (1, 2, 4 s)
    // before the provider is asked again: the bound covers three such failures in a row.
    await w.idp.revokeUser('alice');
    await new Promise((r) => setTimeout(r, 1_200));
    await expect.poll(async () => (await alice.request(`${w.origin('app')}/after-revoke`)).status, { timeout: 15_000, interval: 500 }).toBe(302);
  });
});
