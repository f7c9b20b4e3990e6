/**
 * svc in a real browser (Chromium through playwright-core): the whole sign-in round trip through the
 * dev OpenID provider, the identity an upstream receives, the user info page (no raw tokens, S26),
 * sign-out through the provider's end-session page, a signed-in user the policy refuses (403), and an
 * anonymous API client (401). Chromium resolves `*.localhost` to loopback itself, so the browser
 * reaches svc at `http://<name>.localhost:<port>` and the provider at its own `127.0.0.1` address.
 */
import { launchChromium } from '../support/chromium.ts';
import { mkdirSync, rmSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type Browser, type BrowserContext, type ConsoleMessage, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DEV_PASSWORD } from '../../demo/dev-idp.ts';
import { describeWithCommands } from '../support/system.ts';
import { startAuthWorld, type AuthWorld } from './auth-support.ts';

const IDP_TITLE = 'svc dev identity provider — local use only';
const ARTIFACTS = fileURLToPath(new URL('../../test-artifacts/', import.meta.url));
/** A compact JWS: three base64url parts, the first a JSON header (`{"` → `eyJ`). */
const JWT = /eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+/;
const STEP_MS = 10_000;

describeWithCommands(['chromium'], 'svc in a real browser', () => {
  let world: AuthWorld;
  let browser: Browser;
  let alice: BrowserContext;
  let page: Page;
  let app: string;

  beforeAll(async () => {
    world = await startAuthWorld({
      routes: [{ from: 'https://app.localhost:PORT', to: 'UPSTREAM', policy: 'allow if domain is "example.com"', pass_identity_headers: true }],
      settings: { jwt_claims_headers: ['email', 'groups'] },
    });
    app = world.origin('app');
    browser = await launchChromium();
    alice = await browser.newContext();
    alice.setDefaultTimeout(STEP_MS);
    alice.setDefaultNavigationTimeout(STEP_MS);
    page = await alice.newPage();
  });

  afterAll(async () => {
    await browser?.close();
    await world?.close();
  });

  /** Fills the dev provider's login form and submits it. */
  async function signIn(p: Page, login: string): Promise<void> {
    await expect.poll(() => p.title()).toBe(IDP_TITLE);
    await p.locator('input[name="login"]').fill(login);
    await p.locator('input[name="password"]').fill(DEV_PASSWORD);
    await p.getByRole('button', { name: 'Sign in' }).click();
  }

  it('alice signs in through the provider and the upstream gets her identity', async () => {
    await page.goto(`${app}/hello`);
    expect(new URL(page.url()).origin).toBe(world.idp.issuer);
    expect(await page.title()).toBe(IDP_TITLE);
    await signIn(page, 'alice@example.com');
    await page.waitForURL(`${app}/hello`);
    // The echo upstream's JSON, as the browser shows it.
    const shown = JSON.parse(await page.locator('body pre').first().innerText()) as { url: string; headers: Record<string, string> };
    expect(shown.url).toBe('/hello');
    expect(shown.headers['x-svc-jwt-assertion']).toMatch(new RegExp(`^${JWT.source}$`));
    expect(shown.headers['x-svc-claim-email']).toBe('alice@example.com');
    // svc's own session cookie never reaches the upstream.
    expect(shown.headers['cookie'] ?? '').not.toMatch(/_svc|svc_session/i);
  });

  it('the user info page shows who is signed in and no raw token (S26)', async () => {
    const res = await page.goto(`${app}/.svc/`);
    expect(res?.status()).toBe(200);
    await expect.poll(() => page.locator('#email').innerText()).toBe('alice@example.com');
    expect(await page.locator('#user').innerText()).toBe('alice');
    expect(await page.locator('#groups').innerText()).toBe('admins, staff');
    const html = await page.content();
    expect(html).toContain('alice@example.com');
    expect(html).not.toMatch(JWT);
    expect(html).not.toMatch(/id_token|access_token|refresh_token/i);
    rmSync(`${ARTIFACTS}user-info.png`, { force: true });
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: `${ARTIFACTS}user-info.png`, fullPage: true });
    expect(statSync(`${ARTIFACTS}user-info.png`).size).toBeGreaterThan(0);
  });

  it('sign-out ends the svc and provider sessions and lands on signout_redirect_url', async () => {
    const signedOut = `${world.origin('public')}/signed-out`;
    // A navigation the browser refuses (a Content-Security-Policy violation) fails the step at
    // once, with the browser's own words, instead of after a navigation timeout.
    let refused: (text: string) => void = () => undefined;
    const blocked = new Promise<string>((resolve) => (refused = resolve));
    const onConsole = (m: ConsoleMessage) => {
      if (m.type() === 'error' && /Content Security Policy/i.test(m.text())) refused(`blocked by the browser: ${m.text()}`);
    };
    page.on('console', onConsole);
    try {
      await page.locator('#signout').click();
      // Through the provider's end-session page, which submits itself.
      const arrived = page.waitForURL(signedOut).then(
        () => 'arrived',
        (e: Error) => `not arrived: ${e.message}`,
      );
      expect(await Promise.race([arrived, blocked]), `sign-out from ${page.url()}`).toBe('arrived');
    } finally {
      page.off('console', onConsole);
    }
    expect(page.url()).toBe(signedOut);
    // The svc cookie for the route host is gone.
    const cookies = await alice.cookies(app);
    expect(cookies.filter((c) => !c.name.includes('_signin_'))).toEqual([]);
    // Back to the app: the provider session ended too, so its login form shows again.
    await page.goto(`${app}/hello`);
    expect(new URL(page.url()).origin).toBe(world.idp.issuer);
    expect(await page.title()).toBe(IDP_TITLE);
    expect(await page.locator('input[name="login"]').isVisible()).toBe(true);
    expect(await page.locator('input[name="password"]').isVisible()).toBe(true);
  });

  it('bob, signed in but outside the policy, gets svc\'s 403 page', async () => {
    const bob = await browser.newContext();
    try {
      bob.setDefaultTimeout(STEP_MS);
      bob.setDefaultNavigationTimeout(STEP_MS);
      const p = await bob.newPage();
      await p.goto(`${app}/hello`);
      const answered = p.waitForResponse((r) => r.url() === `${app}/hello` && r.request().isNavigationRequest());
      await signIn(p, 'bob@other.example');
      const res = await answered;
      expect(res.status()).toBe(403);
      await p.waitForURL(`${app}/hello`);
      expect(await p.title()).toContain('403');
      expect(await p.locator('h1').innerText()).toContain('403');
      expect(await p.locator('body').innerText()).not.toContain('"headers"');
      // Who is signed in, why in words, and the ways out, as the user sees them.
      expect(await p.locator('#email').innerText()).toBe('bob@other.example');
      expect(await p.locator('#why').innerText()).toMatch(/your email domain is not example\.com/);
      expect(await p.locator('#signout').isVisible()).toBe(true);
      expect(await p.locator('#switch-user').isVisible()).toBe(true);
    } finally {
      await bob.close();
    }
  });

  it('an anonymous API client gets 401', async () => {
    const hop = await world.browser().request(`${app}/hello`, { headers: { accept: 'application/json' } });
    expect(hop.status).toBe(401);
    expect(hop.headers['location']).toBeUndefined();
    expect(JSON.parse(hop.body)).toMatchObject({ status: 401 });
  });
});
