/**
 * Device identity in split mode (docs/authentication.md "Devices"): the data broker, the authorize
 * service, the authenticate service on `authenticate.svc.localhost` and a proxy on
 * `dev.svc.localhost` (two cluster workers behind its primary) as four `svc run` processes talking
 * gRPC, a real OpenID provider, and Chromium with a virtual authenticator. The device page is served
 * by the proxy, which reaches the devices over the data broker's gRPC interface (from its workers,
 * through the primary); the relying party id is `svc.localhost`, the authenticate host's
 * registrable domain. A USB key is registered (pending: 450), approved with `svc devices approve`
 * against the data broker (200), authenticates again with the authentication ceremony, and is
 * revoked: at once the proxy sends the session back to the device page (no cached session or
 * decision keeps it: docs/security.md S64), and approving a device registered anew opens the route
 * again at once.
 */
import { stringify } from 'yaml';
import { type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DEV_PASSWORD, startDevIdp, type DevIdp } from '../../demo/dev-idp.ts';
import { devicesCommand } from '../../cli/devices-command.ts';
import { BASE_SETTINGS } from '../support/compile-text.ts';
import { launchChromium, withAuthenticator as withVirtualAuthenticator } from '../support/chromium.ts';
import { describeWithCommands } from '../support/system.ts';
import { freePort, testSigningKey } from './auth-support.ts';
import { get, startSvc, stopSvc, until, type Svc } from './role-process.ts';
import { configDir, echo, startUpstream, type Upstream } from './support.ts';

const IDP_TITLE = 'svc dev identity provider — local use only';
const STEP_MS = 15_000;

describeWithCommands(['chromium'], 'device identity in split mode: four roles over gRPC, in a real browser', () => {
  const cfg = configDir();
  const ports = { proxy: 0, authenticate: 0, authorize: 0, databroker: 0 };
  const running: Svc[] = [];
  let idp: DevIdp;
  let up: Upstream;
  let browser: Browser;
  let dev: string;

  beforeAll(async () => {
    for (const k of Object.keys(ports) as (keyof typeof ports)[]) ports[k] = await freePort();
    const authenticate = `http://authenticate.svc.localhost:${ports.authenticate}`;
    dev = `http://dev.svc.localhost:${ports.proxy}`;
    idp = await startDevIdp({ clients: [{ clientId: 'c', clientSecret: 's', redirectUris: [`${authenticate}/oauth2/callback`], postLogoutRedirectUris: [`${dev}/`] }] });
    up = await startUpstream(echo);
    cfg.writeRaw(
      stringify({
        ...BASE_SETTINGS,
        cookie_secure: false,
        authenticate_service_url: authenticate,
        signout_redirect_url: `${dev}/`,
        idp_provider_url: idp.issuer,
        idp_client_id: 'c',
        idp_client_secret: 's',
        signing_key: testSigningKey(),
        grpc_insecure: true,
        grpc_client_timeout: '2s',
        authorize_service_url: `http://127.0.0.1:${ports.authorize}`,
        databroker_service_url: `http://127.0.0.1:${ports.databroker}`,
        routes: [{ from: `https://dev.svc.localhost:${ports.proxy}`, to: up.url, policy: 'allow if device approved' }],
      }),
    );
    const start = async (services: keyof typeof ports, workers = 1): Promise<Svc> => {
      const args = services === 'proxy' || services === 'authenticate' ? ['--listen', `127.0.0.1:${ports[services]}`] : ['--grpc-listen', `127.0.0.1:${ports[services]}`];
      const s = await startSvc(cfg.path, { SERVICES: services }, args, workers);
      running.push(s);
      return s;
    };
    await start('databroker');
    await start('authorize');
    await start('authenticate');
    await start('proxy', 2);
    // The proxy's channels find the other services within their reconnect backoff.
    await until(async () => (await get(ports.proxy, `dev.svc.localhost:${ports.proxy}`, '')).status === 302, 20_000);
    browser = await launchChromium();
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await Promise.all(running.map((s) => stopSvc(s)));
    await up?.close();
    await idp?.close();
    cfg.remove();
  });

  /** `svc devices <action>` through its function, against the data broker process. */
  async function devices(action: string, id?: string): Promise<{ code: number; out: string; err: string }> {
    let out = '';
    let err = '';
    const code = await devicesCommand(action, id, { config: cfg.path, databroker: `http://127.0.0.1:${ports.databroker}`, format: 'json' }, { out: (s) => void (out += s), err: (s) => void (err += s) }, { SERVICES: 'databroker' });
    return { code, out, err };
  }

  async function listed(): Promise<{ credentialId: string; user: string; type: string; approved: boolean; counter: number }[]> {
    const r = await devices('list');
    expect(r.code, r.err).toBe(0);
    return (JSON.parse(r.out) as { devices: { credentialId: string; user: string; type: string; approved: boolean; counter: number }[] }).devices;
  }

  const withAuthenticator = () => withVirtualAuthenticator(browser, 'usb', STEP_MS);

  /** Registers a USB key from the device page `page` is on; resolves the status of the return to `back`. */
  async function register(page: Page, back: string): Promise<number> {
    const answer = page.waitForResponse((r) => r.url() === back && r.request().isNavigationRequest());
    await page.locator('#register-key').click();
    const status = (await answer).status();
    // The answer arrived; the navigation it ends must be over before the next one starts.
    await page.waitForURL(back);
    return status;
  }

  it('register (450 while pending), approve through the data broker (200), authenticate again, revoke: back to the device page at once', async () => {
    const { context, page } = await withAuthenticator();
    try {
      const target = `${dev}/hello?x=1`;
      await page.goto(target);
      // Sign-in at the authenticate service, then the IdP.
      await expect.poll(() => page.title()).toBe(IDP_TITLE);
      await page.locator('input[name="login"]').fill('alice@example.com');
      await page.locator('input[name="password"]').fill(DEV_PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      // Signed in, no device: the proxy's device page on the route host.
      await page.waitForURL((u) => u.pathname === '/.svc/webauthn');
      expect(new URL(page.url()).origin).toBe(dev);
      await expect.poll(() => page.locator('#no-devices').isVisible()).toBe(true);

      expect(await register(page, target)).toBe(450);
      expect(await page.locator('#reasons').innerText()).toBe('device-unauthorized');
      const [mine] = await listed();
      expect(mine).toMatchObject({ user: 'alice', type: 'any', approved: false });

      // Approved in the data broker: the proxy's workers and authorize see it at once. Each `get`
      // is a new connection, which the cluster primary hands to its workers in turn.
      const cookie = `_svc=${(await context.cookies(dev)).find((c) => c.name === '_svc')!.value}`;
      const host = `dev.svc.localhost:${ports.proxy}`;
      expect((await get(ports.proxy, host, cookie, '/hello?x=1')).status).toBe(450);
      expect((await devices('approve', mine!.credentialId)).code).toBe(0);
      for (let i = 0; i < 4; i++) expect((await get(ports.proxy, host, cookie, '/hello?x=1')).status).toBe(200);
      expect((await page.goto(target))?.status()).toBe(200);
      expect(await page.locator('body').innerText()).toContain('/hello?x=1');

      // The authentication ceremony through the proxy: the counter rule runs in the data broker.
      await page.goto(`${dev}/.svc/webauthn?svc_redirect_uri=${encodeURIComponent(`${dev}/again`)}`);
      expect(await page.locator('#devices .device .state').innerText()).toBe('approved');
      const again = page.waitForResponse((r) => r.url() === `${dev}/again` && r.request().isNavigationRequest());
      await page.locator('#authenticate').click();
      expect((await again).status()).toBe(200);
      await page.waitForURL(`${dev}/again`);
      expect((await listed())[0]!.counter).toBeGreaterThan(mine!.counter);

      // Revoked through the data broker: at once the session has no device, on every worker.
      expect((await devices('revoke', mine!.credentialId)).code).toBe(0);
      for (let i = 0; i < 4; i++) {
        const r = await get(ports.proxy, host, cookie, '/hello?x=1');
        expect(r.status).toBe(302);
        expect(new URL(String(r.headers['location'])).pathname).toBe('/.svc/webauthn');
      }
      await page.goto(target);
      await page.waitForURL((u) => u.pathname === '/.svc/webauthn');
      await expect.poll(() => page.locator('#no-devices').isVisible()).toBe(true);
      expect(await listed()).toEqual([]);

      // A device registered anew is pending (450) until approved, then opens the route at once.
      expect(await register(page, target)).toBe(450);
      const [fresh] = await listed();
      expect(fresh!.credentialId).not.toBe(mine!.credentialId);
      expect((await devices('approve', fresh!.credentialId)).code).toBe(0);
      expect((await page.goto(target))?.status()).toBe(200);
    } finally {
      await context.close();
    }
  }, 120_000);
});
