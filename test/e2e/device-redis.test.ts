/**
 * A device revoked through one svc instance stops working at once on another sharing the same
 * Redis (docs/authentication.md "Devices", docs/security.md S60): Chromium with a virtual USB key
 * registers it on instance A, `svc devices approve` runs against A's data broker, the session (the
 * browser sends its cookie to both: same host name, another port) opens the route on instance B too,
 * and `svc devices revoke` against A sends B's next request to the device page.
 */
import { launchChromium, withAuthenticator as withVirtualAuthenticator } from '../support/chromium.ts';
import { type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DEV_PASSWORD } from '../../demo/dev-idp.ts';
import { devicesCommand } from '../../cli/devices-command.ts';
import { startRedis, type RedisProcess } from '../support/redis-server.ts';
import { describeWithCommands } from '../support/system.ts';
import { startAuthWorld, type AuthWorld } from './auth-support.ts';

const IDP_TITLE = 'svc dev identity provider — local use only';
const STEP_MS = 10_000;

describeWithCommands(['chromium', 'redis-server'], 'a device revocation reaches another instance sharing Redis', () => {
  let redis: RedisProcess;
  let a: AuthWorld;
  let b: AuthWorld;
  let browser: Browser;

  beforeAll(async () => {
    redis = await startRedis({});
    const world = () =>
      startAuthWorld({
        authenticateName: 'authenticate.svc',
        routes: [{ from: 'https://dev.svc.localhost:PORT', to: 'UPSTREAM', policy: 'allow if device approved' }],
        settings: { databroker_storage_type: 'redis', databroker_storage_connection_string: `redis://127.0.0.1:${redis.port}/6` },
      });
    a = await world();
    b = await world();
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await a?.close();
    await b?.close();
    await redis?.stop();
  });

  async function signIn(p: Page): Promise<void> {
    await expect.poll(() => p.title()).toBe(IDP_TITLE);
    await p.locator('input[name="login"]').fill('alice@example.com');
    await p.locator('input[name="password"]').fill(DEV_PASSWORD);
    await p.getByRole('button', { name: 'Sign in' }).click();
  }

  async function devices(world: AuthWorld, action: string, id?: string): Promise<{ code: number; out: string }> {
    let out = '';
    const code = await devicesCommand(action, id, { config: world.configPath, databroker: `http://127.0.0.1:${world.svc.grpc!.address.port}`, format: 'json' }, { out: (s) => void (out += s), err: () => undefined });
    return { code, out };
  }

  it('registered and approved through A, served by B, revoked through A: B refuses it at once', async () => {
    const { context, page } = await withVirtualAuthenticator(browser, 'usb', STEP_MS);
    try {
      const devA = a.origin('dev.svc');
      const devB = b.origin('dev.svc');

      await page.goto(`${devA}/hello`);
      await signIn(page);
      await page.waitForURL((u) => u.pathname === '/.svc/webauthn');
      const registered = page.waitForResponse((r) => r.url() === `${devA}/hello` && r.request().isNavigationRequest());
      await page.locator('#register-key').click();
      expect((await registered).status()).toBe(450);
      const listed = JSON.parse((await devices(a, 'list')).out) as { devices: { credentialId: string }[] };
      expect(listed.devices).toHaveLength(1);
      const id = listed.devices[0]!.credentialId;
      expect((await devices(a, 'approve', id)).code).toBe(0);
      // B's data broker (the same Redis) lists it too.
      expect((JSON.parse((await devices(b, 'list')).out) as { devices: { approved: boolean }[] }).devices).toEqual([expect.objectContaining({ credentialId: id, approved: true })]);

      expect((await page.goto(`${devA}/hello`))?.status()).toBe(200);
      // B (another port, the same host name: the browser sends the same cookie) finds the session
      // and its device in the shared Redis.
      expect((await page.goto(`${devB}/hello`))?.status()).toBe(200);
      // Cached on B now; revoked through A.
      expect((await page.goto(`${devB}/hello`))?.status()).toBe(200);
      expect((await devices(a, 'revoke', id)).code).toBe(0);
      // Within moments (Redis pub/sub), never the session cache's 30 s.
      await expect
        .poll(
          async () => {
            await page.goto(`${devB}/hello`);
            return new URL(page.url()).pathname;
          },
          { timeout: 5_000 },
        )
        .toBe('/.svc/webauthn');
    } finally {
      await context.close();
    }
  }, 60_000);
});
