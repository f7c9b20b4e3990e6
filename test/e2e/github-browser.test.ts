/**
 * GitHub sign-in in a real browser (Chromium through playwright-core; docs/authentication.md
 * "GitHub"): Chromium follows svc's redirect to a loopback GitHub Enterprise Server that speaks
 * GitHub's OAuth shapes (test/runtime/sessions/directory/fake-directory.ts; it approves the app at
 * once, as GitHub does for a user who approved it before) and back through svc's callback; the
 * upstream receives the assertion with the user's teams, and the user page shows the verified
 * primary e-mail. Chromium resolves `*.localhost` to loopback itself. All secrets are TEST ONLY.
 */
import { launchChromium } from '../support/chromium.ts';
import { type Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeWithCommands } from '../support/system.ts';
import { baseModel, FakeDirectory, SECRETS } from '../runtime/sessions/directory/fake-directory.ts';
import { startAuthWorld, type AuthWorld } from './auth-support.ts';

const STEP_MS = 10_000;

describeWithCommands(['chromium'], 'GitHub sign-in in a real browser', () => {
  let fake: FakeDirectory;
  let world: AuthWorld;
  let browser: Browser;

  beforeAll(async () => {
    fake = await FakeDirectory.start(baseModel());
    world = await startAuthWorld({
      routes: [{ from: 'https://app.localhost:PORT', to: 'UPSTREAM', policy: 'allow if groups has "acme/admins"', pass_identity_headers: true }],
      settings: { idp_provider: 'github', idp_provider_url: fake.httpUrl, idp_client_id: SECRETS.githubClient, idp_client_secret: SECRETS.githubSecret, jwt_claims_headers: ['email', 'groups', 'login'] },
    });
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await world?.close();
    await fake?.close();
  });

  it('signs in through GitHub OAuth; the upstream gets the teams; a non-member is refused', async () => {
    const context = await browser.newContext();
    context.setDefaultTimeout(STEP_MS);
    context.setDefaultNavigationTimeout(STEP_MS);
    const page = await context.newPage();
    const visited: string[] = [];
    page.on('request', (r) => visited.push(r.url()));
    fake.githubUser = '1';
    await page.goto(`${world.origin('app')}/hello`);
    await page.waitForURL(`${world.origin('app')}/hello`);
    expect(visited.some((u) => u.startsWith(`${fake.httpUrl}/login/oauth/authorize`))).toBe(true);
    const shown = JSON.parse(await page.locator('body pre').first().innerText()) as { headers: Record<string, string> };
    expect(shown.headers['x-svc-claim-email']).toBe('user1@corp.example');
    expect(shown.headers['x-svc-claim-groups']).toBe('acme/admins,acme/engineering');
    expect(shown.headers['x-svc-claim-login']).toBe('user1');
    expect(shown.headers['x-svc-jwt-assertion']).toMatch(/^eyJ/);
    await page.goto(`${world.origin('app')}/.svc/`);
    expect(await page.locator('#user').innerText()).toBe('1');
    expect(await page.locator('#email').innerText()).toBe('user1@corp.example');
    await context.close();

    fake.githubUser = '2';
    const other = await browser.newContext();
    other.setDefaultNavigationTimeout(STEP_MS);
    const page2 = await other.newPage();
    const res = await page2.goto(`${world.origin('app')}/hello`);
    await page2.waitForURL(`${world.origin('app')}/hello`);
    expect((await page2.reload())?.status() ?? res?.status()).toBe(403);
    await other.close();
  });
});
