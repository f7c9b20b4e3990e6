/**
 * Device identity in a real browser (docs/authentication.md "Devices"): Chromium with a virtual
 * authenticator (Chrome DevTools Protocol `WebAuthn`), the dev OpenID provider, and `svc run`.
 * A USB security key is registered (pending: 450), approved with `svc devices approve` (the CLI's
 * function, over the data broker's gRPC interface), opens a `device approved` route, is refused with
 * 450 on a route that needs `enclave_only`, and stops working at once when revoked. A built-in
 * authenticator with user verification opens the `enclave_only` route, authenticates again with
 * the authentication ceremony, and a replay of that assertion is refused. A copy of a key (its
 * private key moved into another authenticator, its counter behind) is refused and logged (S59).
 *
 * Host names are `*.svc.localhost`: the relying party id is the authenticate host's registrable
 * domain, `svc.localhost` (`localhost` is the public suffix under the list's default rule), so one
 * registration serves every route host.
 */
import { launchChromium, withAuthenticator as withVirtualAuthenticator } from '../support/chromium.ts';
import { readFileSync, writeFileSync } from 'node:fs';
import { type Browser, type Page } from 'playwright-core';
import { parse, stringify } from 'yaml';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DEV_PASSWORD } from '../../demo/dev-idp.ts';
import { devicesCommand } from '../../cli/devices-command.ts';
import { describeWithCommands } from '../support/system.ts';
import { startAuthWorld, type AuthWorld } from './auth-support.ts';

const IDP_TITLE = 'svc dev identity provider — local use only';
const STEP_MS = 10_000;

describeWithCommands(['chromium'], 'device identity with WebAuthn in a real browser', () => {
  let world: AuthWorld;
  let browser: Browser;
  let dev: string;
  let enclave: string;
  const logs: Record<string, unknown>[] = [];

  beforeAll(async () => {
    world = await startAuthWorld({
      authenticateName: 'authenticate.svc',
      routes: [
        { from: 'https://dev.svc.localhost:PORT', to: 'UPSTREAM', policy: 'allow if device approved', allow_websockets: true },
        { from: 'https://enclave.svc.localhost:PORT', to: 'UPSTREAM', policy: 'allow if device approved and device type "enclave_only"' },
      ],
      log: (e) => logs.push(e),
    });
    dev = world.origin('dev.svc');
    enclave = world.origin('enclave.svc');
    browser = await launchChromium();
  }, 30_000);

  afterAll(async () => {
    await browser?.close();
    await world?.close();
  });

  /** A browser context whose page has a virtual authenticator of `transport`. */
  const withAuthenticator = (transport: 'usb' | 'internal') => withVirtualAuthenticator(browser, transport, STEP_MS);

  async function signIn(p: Page, login: string): Promise<void> {
    await expect.poll(() => p.title()).toBe(IDP_TITLE);
    await p.locator('input[name="login"]').fill(login);
    await p.locator('input[name="password"]').fill(DEV_PASSWORD);
    await p.getByRole('button', { name: 'Sign in' }).click();
  }

  /** `svc devices <action>` through its function, against this svc's data broker. */
  async function devices(action: string, id?: string): Promise<{ code: number; out: string; err: string }> {
    let out = '';
    let err = '';
    const grpc = world.svc.grpc!.address;
    const code = await devicesCommand(action, id, { config: world.configPath, databroker: `http://127.0.0.1:${grpc.port}`, format: 'json' }, { out: (s) => void (out += s), err: (s) => void (err += s) });
    return { code, out, err };
  }

  /** The navigation status of `url` in `p`. */
  async function statusOf(p: Page, url: string): Promise<number | undefined> {
    const res = await p.goto(url);
    return res?.status();
  }

  /** The body of the next POST to the device page's verify step. */
  function nextVerifyBody(p: Page): Promise<string> {
    return p.waitForRequest((r) => r.method() === 'POST' && r.url().endsWith('/.svc/webauthn/verify')).then((r) => r.postData() ?? '');
  }

  let usbCredential = '';

  it('a signed-in user without a device goes to the device page, registers a USB key, and gets 450 until it is approved', async () => {
    const { context, page } = await withAuthenticator('usb');
    try {
      await page.goto(`${dev}/hello?x=1`);
      await signIn(page, 'alice@example.com');
      // Signed in, no device in this session: svc's device page on the route host.
      await page.waitForURL((u) => u.pathname === '/.svc/webauthn');
      expect(new URL(page.url()).origin).toBe(dev);
      expect(new URL(page.url()).searchParams.get('svc_redirect_uri')).toBe(`${dev}/hello?x=1`);
      await expect.poll(() => page.locator('#no-devices').isVisible()).toBe(true);
      const back = page.waitForResponse((r) => r.url() === `${dev}/hello?x=1` && r.request().isNavigationRequest());
      await page.locator('#register-key').click();
      const pending = await back;
      // Registered, pending approval: the device does not meet `device approved`.
      expect(pending.status()).toBe(450);
      await page.waitForURL(`${dev}/hello?x=1`);
      expect(await page.locator('h1').innerText()).toContain('Device not authorized');
      expect(await page.locator('#reasons').innerText()).toBe('device-unauthorized');

      const listed = await devices('list');
      expect(listed.code).toBe(0);
      const all = (JSON.parse(listed.out) as { devices: { credentialId: string; user: string; type: string; approved: boolean }[] }).devices;
      expect(all).toHaveLength(1);
      expect(all[0]).toMatchObject({ user: 'alice', type: 'any', approved: false });
      usbCredential = all[0]!.credentialId;

      expect((await devices('approve', usbCredential)).code).toBe(0);
      expect(await statusOf(page, `${dev}/hello?x=1`)).toBe(200);
      expect(await page.locator('body').innerText()).toContain('/hello?x=1');
      // The user page lists the device, approved, in use by this session.
      await page.goto(`${dev}/.svc/`);
      expect(await page.locator('#devices').innerText()).toMatch(/any · approved · in use by this session/);

      // Another route host: a session of its own (its own sign-in), so the device page again, where
      // the key registered on the first host authenticates (one relying party for both hosts).
      await page.goto(`${enclave}/hello`);
      await page.waitForURL((u) => u.pathname === '/.svc/webauthn');
      expect(await page.locator('#devices .device .state').innerText()).toBe('approved');
      // A USB key is not `enclave_only`: 450 with the reason on svc's page.
      const refused = page.waitForResponse((r) => r.url() === `${enclave}/hello` && r.request().isNavigationRequest());
      await page.locator('#authenticate').click();
      expect((await refused).status()).toBe(450);
      expect(await page.locator('#why').innerText()).toMatch(/your device type is not enclave_only/);

      // Revoked: at once, the session has no device any more and goes back to the device page.
      expect((await devices('revoke', usbCredential)).code).toBe(0);
      await page.goto(`${dev}/hello?x=1`);
      await page.waitForURL((u) => u.pathname === '/.svc/webauthn');
      expect((await devices('revoke', usbCredential)).code).toBe(1);
      expect(JSON.parse((await devices('list')).out)).toEqual({ devices: [] });
    } finally {
      await context.close();
    }
  }, 60_000);

  it('a built-in authenticator with user verification opens the enclave_only route; a replayed assertion is refused', async () => {
    const { context, page } = await withAuthenticator('internal');
    try {
      await page.goto(`${enclave}/hello`);
      await signIn(page, 'alice@example.com');
      await page.waitForURL((u) => u.pathname === '/.svc/webauthn');
      const back = page.waitForResponse((r) => r.url() === `${enclave}/hello` && r.request().isNavigationRequest());
      await page.locator('#register-platform').click();
      expect((await back).status()).toBe(450);
      // The answer arrived; the navigation it ends must be over before the next one starts.
      await page.waitForURL(`${enclave}/hello`);
      const all = (JSON.parse((await devices('list')).out) as { devices: { credentialId: string; type: string }[] }).devices;
      expect(all.map((d) => d.type)).toEqual(['enclave_only']);
      expect((await devices('approve', all[0]!.credentialId)).code).toBe(0);
      expect(await statusOf(page, `${enclave}/hello`)).toBe(200);

      // The authentication ceremony with the registered device, from the device page.
      await page.goto(`${enclave}/.svc/webauthn?svc_redirect_uri=${encodeURIComponent(`${enclave}/again`)}`);
      const csrf = await page.locator('#svc-device').getAttribute('data-csrf');
      const captured = nextVerifyBody(page);
      const again = page.waitForResponse((r) => r.url() === `${enclave}/again` && r.request().isNavigationRequest());
      await page.locator('#authenticate').click();
      const body = await captured;
      expect((await again).status()).toBe(200);
      await page.waitForURL(`${enclave}/again`);
      await page.waitForLoadState('load');
      expect(JSON.parse(body)).toMatchObject({ response: { id: all[0]!.credentialId } });

      // The same assertion sent again: its challenge was taken.
      const replay = await page.evaluate(
        async ([b, token]) => {
          const r = await fetch('/.svc/webauthn/verify', { method: 'POST', headers: { 'content-type': 'application/json', 'x-svc-csrf': token! }, body: b });
          return { status: r.status, body: (await r.json()) as { error?: string } };
        },
        [body, csrf] as const,
      );
      expect(replay).toEqual({ status: 400, body: expect.objectContaining({ error: 'challenge-used' }) });
      expect(logs.some((e) => e['msg'] === 'device ceremony refused' && e['reason'] === 'challenge-used')).toBe(true);
    } finally {
      await context.close();
    }
  }, 60_000);
  it('a cloned authenticator (its key copied, its counter behind) is refused and logged', async () => {
    const original = await withAuthenticator('usb');
    const clone = await withAuthenticator('usb');
    try {
      const { page } = original;
      await page.goto(`${dev}/clone`);
      await signIn(page, 'alice@example.com');
      await page.waitForURL((u) => u.pathname === '/.svc/webauthn');
      const registered = page.waitForResponse((r) => r.url() === `${dev}/clone` && r.request().isNavigationRequest());
      await page.locator('#register-key').click();
      expect((await registered).status()).toBe(450);
      await page.waitForURL(`${dev}/clone`);
      const mine = (JSON.parse((await devices('list')).out) as { devices: { credentialId: string; type: string }[] }).devices.find((d) => d.type === 'any')!;
      expect((await devices('approve', mine.credentialId)).code).toBe(0);
      // One authentication with the original: the stored counter moves past the registration's.
      await page.goto(`${dev}/.svc/webauthn?svc_redirect_uri=${encodeURIComponent(`${dev}/clone`)}`);
      const used = page.waitForResponse((r) => r.url() === `${dev}/clone` && r.request().isNavigationRequest());
      await page.locator('#authenticate').click();
      expect((await used).status()).toBe(200);
      await page.waitForURL(`${dev}/clone`);
      const stored = (JSON.parse((await devices('list')).out) as { devices: { credentialId: string; counter: number }[] }).devices.find((d) => d.credentialId === mine.credentialId)!;
      expect(stored.counter).toBeGreaterThan(0);

      // The key copied into another authenticator, its counter back at zero.
      const { credentials } = (await original.cdp.send('WebAuthn.getCredentials', { authenticatorId: original.authenticatorId })) as { credentials: { credentialId: string; isResidentCredential: boolean; rpId?: string; privateKey: string; signCount: number; userHandle?: string }[] };
      expect(credentials).toHaveLength(1);
      await clone.cdp.send('WebAuthn.addCredential', { authenticatorId: clone.authenticatorId, credential: { ...credentials[0]!, signCount: 0 } });
      await clone.page.goto(`${dev}/clone`);
      await signIn(clone.page, 'alice@example.com');
      await clone.page.waitForURL((u) => u.pathname === '/.svc/webauthn');
      const refused = clone.page.waitForResponse((r) => r.url().endsWith('/.svc/webauthn/verify'));
      await clone.page.locator('#authenticate').click();
      const answer = await refused;
      expect(answer.status()).toBe(400);
      expect(await answer.json()).toMatchObject({ error: 'device-counter-regressed' });
      expect(logs.some((e) => typeof e['msg'] === 'string' && e['msg'].startsWith('device signature counter did not grow') && e['device'] === mine.credentialId)).toBe(true);
      await expect.poll(() => clone.page.locator('#status').innerText()).toBe('Refused: device-counter-regressed');
      // The original still works; the stored counter was kept.
      const after = (JSON.parse((await devices('list')).out) as { devices: { credentialId: string; counter: number }[] }).devices.find((d) => d.credentialId === mine.credentialId)!;
      expect(after.counter).toBe(stored.counter);
    } finally {
      await original.context.close();
      await clone.context.close();
    }
  }, 60_000);
  it('with device_self_registration_approved, a new device is approved when it is registered (applied by a reload)', async () => {
    const config = parse(readFileSync(world.configPath, 'utf8')) as Record<string, unknown>;
    writeFileSync(world.configPath, stringify({ ...config, device_self_registration_approved: true }));
    expect(await world.svc.reload()).toMatchObject({ ok: true, result: 'swapped' });
    const { context, page } = await withAuthenticator('usb');
    try {
      await page.goto(`${dev}/self`);
      await signIn(page, 'bob@other.example');
      await page.waitForURL((u) => u.pathname === '/.svc/webauthn');
      const back = page.waitForResponse((r) => r.url() === `${dev}/self` && r.request().isNavigationRequest());
      await page.locator('#register-key').click();
      expect((await back).status()).toBe(200);
      const bobs = (JSON.parse((await devices('list')).out) as { devices: { user: string; approved: boolean }[] }).devices.filter((d) => d.user === 'bob');
      expect(bobs).toEqual([expect.objectContaining({ approved: true })]);
    } finally {
      await context.close();
      writeFileSync(world.configPath, stringify(config));
      await world.svc.reload();
    }
  }, 60_000);
});
