/**
 * Forward auth for a route whose policy reads `device` (docs/forward-auth.md, docs/authentication.md
 * "Devices"): a REAL Caddy running docs/forward-auth/Caddyfile in front of an application, svc
 * deciding every request, and Chromium with a virtual authenticator. The user only talks to Caddy
 * (`app.svc.localhost:<caddy port>`); the device page is svc's, reached through Caddy's `/.svc/`
 * route on the application's host. Signed in without a device: `/` sends the browser to the device
 * page and `/verify` answers 401 `device-authentication-required`; a device pending approval: 450,
 * passed on by Caddy; approved: 200 with the identity headers, which reach the application; revoked:
 * 401 again at once (docs/security.md S64). The relying party id is `svc.localhost` (authenticate.svc.localhost's
 * registrable domain), so the application's host is under it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose';
import { type Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DEV_PASSWORD } from '../../demo/dev-idp.ts';
import { devicesCommand } from '../../cli/devices-command.ts';
import { launchChromium, withAuthenticator as withVirtualAuthenticator } from '../support/chromium.ts';
import { describeWithCommands } from '../support/system.ts';
import { freePort, startAuthWorld, testSigningKey, type AuthWorld } from './auth-support.ts';
import { get } from './role-process.ts';

const DOCS = new URL('../../docs/forward-auth/', import.meta.url);
const IDP_TITLE = 'svc dev identity provider — local use only';
const STEP_MS = 15_000;

/** Replaces each placeholder of a docs file; every one must occur (a doc that drifts fails here). */
function substitute(text: string, table: readonly (readonly [RegExp, string])[]): string {
  let out = text;
  for (const [pattern, replacement] of table) {
    if (!new RegExp(pattern.source, pattern.flags.replace('g', '')).test(out)) throw new Error(`docs/forward-auth/Caddyfile no longer contains ${pattern}`);
    out = out.replace(pattern, replacement);
  }
  return out;
}

/** Starts Caddy on `configPath` and waits until `port` accepts connections. */
async function startCaddy(configPath: string, port: number): Promise<{ child: ChildProcess; output: () => string }> {
  const child = spawn('caddy', ['run', '--config', configPath, '--adapter', 'caddyfile'], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, HOME: join(configPath, '..'), XDG_DATA_HOME: join(configPath, '..'), XDG_CONFIG_HOME: join(configPath, '..') } });
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`caddy exited at start:\n${output}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1', () => (s.destroy(), resolve(true)));
      s.on('error', () => resolve(false));
    });
    if (ok) return { child, output: () => output };
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`caddy did not listen on ${port}:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

describeWithCommands(['chromium', 'caddy'], 'forward auth for a device route: Caddy, svc and Chromium with a virtual authenticator', () => {
  let w: AuthWorld;
  let caddyPort: number;
  let caddy: ChildProcess | undefined;
  let dir: string;
  let browser: Browser;
  let jwks: JSONWebKeySet;
  let app: string;

  beforeAll(async () => {
    caddyPort = await freePort();
    app = `http://app.svc.localhost:${caddyPort}`;
    w = await startAuthWorld({
      authenticateName: 'authenticate.svc',
      settings: { signing_key: testSigningKey(), jwt_claims_headers: ['email', 'groups'] },
      routes: [{ from: `https://app.svc.localhost:${caddyPort}`, to: 'UPSTREAM', policy: 'allow if device approved', pass_identity_headers: true }],
    });
    jwks = JSON.parse((await w.browser().request(`${w.origin('authenticate.svc')}/.well-known/svc/jwks.json`)).body) as JSONWebKeySet;
    dir = mkdtempSync(join(tmpdir(), 'svc-caddy-device-'));
    const doc = substitute(readFileSync(new URL('Caddyfile', DOCS), 'utf8'), [
      [/^\s*transport http \{\n\s*tls_server_name \S+\n\s*\}\n/gm, ''],
      [/^app\.example\.com \{/gm, `http://app.svc.localhost:${caddyPort} {`],
      [/https%3A%2F%2Fapp\.example\.com\{uri\}/g, `http%3A%2F%2Fapp.svc.localhost:${caddyPort}{uri}`],
      [/https:\/\/svc\.internal:443/g, `http://127.0.0.1:${w.port}`],
      [/app\.internal:8080/g, `127.0.0.1:${w.upstream.port}`],
      [/fwd\.example\.com/g, `fwd.localhost:${w.port}`],
      [/app\.example\.com/g, `app.svc.localhost:${caddyPort}`],
    ]);
    const config = join(dir, 'Caddyfile');
    writeFileSync(config, ['{', '\tadmin off', '\tauto_https off', '\tdefault_bind 127.0.0.1', `\tstorage file_system ${dir}/storage`, '}', '', doc].join('\n'));
    caddy = (await startCaddy(config, caddyPort)).child;
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    if (caddy && caddy.exitCode === null) {
      const exited = new Promise((r) => caddy!.once('exit', r));
      caddy.kill('SIGTERM');
      await exited;
    }
    await w?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** `svc devices <action>` through its function, against svc's data broker. */
  async function devices(action: string, id?: string): Promise<{ code: number; out: string }> {
    let out = '';
    const grpc = w.svc.grpc!.address;
    const code = await devicesCommand(action, id, { config: w.configPath, databroker: `http://127.0.0.1:${grpc.port}`, format: 'json' }, { out: (s) => void (out += s), err: () => undefined });
    return { code, out };
  }

  /** svc's forward-auth endpoint `path` (`/verify` or `/`) asked about `url` with `cookie`, as the proxy asks. */
  function ask(path: '/verify' | '/', url: string, cookie: string): ReturnType<typeof get> {
    return get(w.port, `fwd.localhost:${w.port}`, cookie, `${path}?uri=${encodeURIComponent(url)}`);
  }

  it('no device: the device page (/: 302, /verify: 401); pending: 450 through Caddy; approved: 200 with identity headers; revoked: 401 at once', async () => {
    const { context, page } = await withVirtualAuthenticator(browser, 'usb', STEP_MS);
    try {
      const target = `${app}/hello?x=1`;
      await page.goto(target);
      await expect.poll(() => page.title()).toBe(IDP_TITLE);
      await page.locator('input[name="login"]').fill('alice@example.com');
      await page.locator('input[name="password"]').fill(DEV_PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      // Signed in (the hand-off through Caddy's `/.svc/` route), no device: Caddy passed svc's
      // redirect to the device page on the application's host, which Caddy routes to svc.
      await page.waitForURL((u) => u.pathname === '/.svc/webauthn');
      expect(new URL(page.url()).origin).toBe(app);
      expect(new URL(page.url()).searchParams.get('svc_redirect_uri')).toBe(target);
      await expect.poll(() => page.locator('#no-devices').isVisible()).toBe(true);

      const cookie = `_svc=${(await context.cookies(app)).find((c) => c.name === '_svc')!.value}`;
      const none = await ask('/verify', target, cookie);
      expect(none.status).toBe(401);
      expect(none.body).toContain('device-authentication-required');
      expect(none.headers['location']).toBeUndefined();
      const toPage = await ask('/', target, cookie);
      expect(toPage.status).toBe(302);
      expect(toPage.headers['location']).toBe(`${app}/.svc/webauthn?svc_redirect_uri=${encodeURIComponent(target)}`);

      // Registered, pending approval: 450 from svc, passed on by Caddy, and from /verify.
      const back = page.waitForResponse((r) => r.url() === target && r.request().isNavigationRequest());
      await page.locator('#register-key').click();
      const pending = await back;
      expect(pending.status()).toBe(450);
      await page.waitForURL(target);
      expect(await page.locator('body').innerText()).toContain('device-unauthorized');
      expect((await ask('/verify', target, cookie)).status).toBe(450);
      expect((await ask('/', target, cookie)).status).toBe(450);

      // Approved: 200 with the identity headers, which Caddy copies to the application.
      const listed = JSON.parse((await devices('list')).out) as { devices: { credentialId: string; approved: boolean }[] };
      expect(listed.devices).toEqual([expect.objectContaining({ approved: false })]);
      const id = listed.devices[0]!.credentialId;
      expect((await devices('approve', id)).code).toBe(0);
      const allowed = await ask('/verify', target, cookie);
      expect(allowed.status).toBe(200);
      expect(allowed.headers['x-svc-claim-email']).toBe('alice@example.com');
      expect(allowed.headers['x-svc-route-host']).toBe(`app.svc.localhost:${caddyPort}`);
      const { payload } = await jwtVerify(String(allowed.headers['x-svc-jwt-assertion']), createLocalJWKSet(jwks), { audience: `app.svc.localhost:${caddyPort}` });
      expect(payload).toMatchObject({ sub: 'alice', email: 'alice@example.com' });
      const res = await page.goto(target);
      expect(res?.status()).toBe(200);
      const echoed = JSON.parse(await page.locator('body').innerText()) as { url: string; headers: Record<string, string> };
      expect(echoed.url).toBe('/hello?x=1');
      expect(echoed.headers['x-svc-claim-email']).toBe('alice@example.com');
      await jwtVerify(echoed.headers['x-svc-jwt-assertion']!, createLocalJWKSet(jwks), { audience: `app.svc.localhost:${caddyPort}` });

      // Revoked: at once the session has no device.
      expect((await devices('revoke', id)).code).toBe(0);
      const revoked = await ask('/verify', target, cookie);
      expect(revoked.status).toBe(401);
      expect(revoked.body).toContain('device-authentication-required');
      await page.goto(target);
      await page.waitForURL((u) => u.pathname === '/.svc/webauthn');
    } finally {
      await context.close();
    }
  }, 90_000);
});
