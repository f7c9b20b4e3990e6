/**
 * The pages of a refusal and of a failed sign-in, end to end with the real OpenID provider
 * (oidc-provider) on loopback: the 403 page names the user and the reasons in words and offers
 * sign-out and switch user; a provider stopped mid-flow, a replayed callback and the provider's
 * `error=access_denied` each say what happened, with "try again" to a validated target.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEV_PASSWORD } from '../../demo/dev-idp.ts';
import { parseForm, type HttpBrowser, type Hop } from '../support/http-browser.ts';
import { startAuthWorld, type AuthWorld } from './auth-support.ts';

const last = (hops: Hop[]): Hop => hops[hops.length - 1]!;

/** The form of a page whose HTML contains `marker`, as the browser would submit it. */
function formWith(hop: Hop, marker: string) {
  const html = [...hop.body.matchAll(/<form\b[\s\S]*?<\/form>/gi)].map((m) => m[0]).find((f) => f.includes(marker));
  if (html === undefined) throw new Error(`no form with ${marker}`);
  return parseForm(html, hop.url)!;
}

/**
 * Follows a sign-in for `login` through the provider, one hop at a time, and stops at the
 * provider's redirect to svc's callback: returns that callback URL, not yet requested.
 */
async function callbackUrl(w: AuthWorld, b: HttpBrowser, url: string, login: string): Promise<string> {
  const page = last(await b.navigate(url));
  const form = parseForm(page.body, page.url, '/interaction/');
  if (!form) throw new Error('no login form');
  let hop = await b.request(form.action, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ ...form.fields, login, password: DEV_PASSWORD }).toString() });
  for (let i = 0; i < 10; i++) {
    const location = new URL(String(hop.headers['location']), hop.url).href;
    if (location.startsWith(w.origin('authenticate'))) return location;
    hop = await b.request(location);
  }
  throw new Error('the provider never called back');
}

describe('the 403 page and failed sign-ins with a real OpenID provider', () => {
  let w: AuthWorld;

  beforeAll(async () => {
    w = await startAuthWorld({ routes: [{ name: 'admin', from: 'https://app.localhost:PORT', to: 'UPSTREAM', policy: 'allow if groups has "admins"' }] });
  });
  afterAll(async () => {
    await w?.close();
  });

  it('a denied user sees who they are, why in words, and can sign out or switch user', async () => {
    const b = w.browser();
    const page = last(await b.signIn(`${w.origin('app')}/reports?q=1`, 'bob@other.example'));
    expect(page.status).toBe(403);
    expect(page.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(page.body).toContain('Bob Other');
    expect(page.body).toContain('<code id="email">bob@other.example</code>');
    expect(page.body).toContain('your groups do not include <code>admins</code>');
    expect(page.body).toContain(String(page.headers['x-request-id']));
    expect(page.body).toMatch(/id="signout"/);
    // JSON keeps its shape and adds the reasons.
    const api = await b.request(`${w.origin('app')}/reports`, { headers: { accept: 'application/json' } });
    expect(api.status).toBe(403);
    expect(JSON.parse(api.body)).toMatchObject({ status: 403, reason: 'groups-unauthorized', reasons: ['groups-unauthorized'], explanation: ['your groups do not include `admins`'], request_id: api.headers['x-request-id'] });

    // Switch user: the session ends, the provider asks for an account again, alice lands where bob was refused.
    const switched = await b.submit(formWith(page, 'svc_switch_user'), {}, page.url);
    const login = last(switched);
    // svc asked the provider to prompt (oidc-provider: `login`), and the provider shows its login form
    // again instead of reusing bob's provider session.
    const authorize = switched.find((h) => h.url.startsWith(`http://127.0.0.1:${w.idp.port}/auth?`));
    expect(new URL(authorize!.url).searchParams.get('prompt')).toBe('login');
    expect(new URL(authorize!.url).searchParams.get('state')).toBeTruthy();
    expect(login.body).toContain('action="/interaction/');
    // bob's session ended on the way.
    expect((await b.request(`${w.origin('app')}/reports`)).status).toBe(302);
  });

  it('sign-out from the 403 page ends the session', async () => {
    const b = w.browser();
    const page = last(await b.signIn(`${w.origin('app')}/`, 'bob@other.example'));
    await b.submit(formWith(page, 'id="signout"'), {}, page.url);
    expect((await b.request(`${w.origin('app')}/`)).status).toBe(302);
  });

  it('a replayed callback gives the stale sign-in page with "try again"', async () => {
    const b = w.browser();
    const callback = await callbackUrl(w, b, `${w.origin('app')}/x`, 'alice@example.com');
    expect((await b.request(callback)).status).toBe(302);
    const replay = await b.request(callback);
    expect(replay.status).toBe(400);
    expect(replay.body).toContain('This sign-in is stale');
    expect(replay.body).toContain('sign-in-state-invalid');
    expect(replay.body).toContain('id="try-again" href="/.svc/"');
    expect(replay.body).not.toMatch(/upstream/i);
    const json = await b.request(callback, { headers: { accept: 'application/json' } });
    expect(JSON.parse(json.body)).toMatchObject({ status: 400, reason: 'sign-in-state-invalid', retry: '/.svc/' });
  });

  it('error=access_denied from the provider says so and offers to try again where the user was', async () => {
    const b = w.browser();
    // The sign-in as started by svc; the provider's answer for a refused sign-in is the callback
    // with `error` and the same `state` (RFC 6749 §4.1.2.1).
    const signIn = String((await b.request(`${w.origin('app')}/y?z=2`)).headers['location']);
    const toProvider = await b.request(signIn);
    const state = new URL(String(toProvider.headers['location'])).searchParams.get('state');
    expect(state).toMatch(/^[A-Za-z0-9_-]{16,}$/);
    const refused = await b.request(`${w.origin('authenticate')}/oauth2/callback?error=access_denied&state=${state}`);
    expect(refused.status).toBe(403);
    expect(refused.body).toContain('did not sign you in');
    expect(refused.body).toContain('<code id="provider-error">access_denied</code>');
    expect(refused.body).toContain(`id="try-again" href="${w.origin('app')}/y?z=2"`);
  });

  it('the provider stopped mid-flow gives the provider-down page with "try again", never an upstream error', async () => {
    const b = w.browser();
    const callback = await callbackUrl(w, b, `${w.origin('app')}/down`, 'alice@example.com');
    await w.idp.close();
    // The world's close() closes the provider again; it is already closed.
    (w.idp as { close: () => Promise<void> }).close = async () => undefined;
    const page = await b.request(callback);
    expect(page.status).toBe(503);
    expect(page.body).toContain('The identity provider could not be reached');
    expect(page.body).toContain('identity-provider-unavailable');
    expect(page.body).toContain(`id="try-again" href="${w.origin('app')}/down"`);
    expect(page.body).not.toMatch(/upstream/i);
    // A new sign-in meanwhile: the discovery is cached, the provider is down at the token step only;
    // the sign-in start still works (it only builds a URL), so the failure shows at the callback.
  });
});
