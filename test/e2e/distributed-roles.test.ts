/**
 * Distributed mode: the four roles as four real `svc run` processes on loopback, from
 * one config file, the role from `SERVICES`: the data broker, the authorize service, the
 * authenticate service on `authenticate.localhost`, and proxies on `app.localhost`, with a real
 * OpenID provider and a real upstream. Started in the "wrong" order (proxy first): order does not
 * matter. Alice signs in through the authenticate service; authorize allows her, and the upstream
 * receives her identity signed with the key the authenticate service publishes (JWKS); Bob gets 403,
 * on the route and through forward auth.
 * A restarted proxy keeps serving the session; with authorize killed an uncached decision fails
 * closed (503, public routes 200) and recovers when authorize is back; a sign-out through one proxy
 * is honoured by another at once; a proxy with a wrong shared secret serves nothing protected. The
 * same deployment with TLS between services (`grpc_insecure: false`).
 */
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, it } from 'vitest';
import type { DevIdp } from '../../demo/dev-idp.ts';
import { generateSelfSigned } from '../../runtime/tls/self-signed.ts';
import { BASE_SETTINGS } from '../support/compile-text.ts';
import { HttpBrowser } from '../support/http-browser.ts';
import { freePort, localhostSignInSettings, startLocalhostIdp, testSigningKey } from './auth-support.ts';
import { get, startSvc, stopSvc, until, type Svc } from './role-process.ts';
import { configDir, echo, startUpstream, type Upstream } from './support.ts';

/** Another valid test-only secret (32 bytes of 3). */
const WRONG_SECRET = Buffer.alloc(32, 3).toString('base64');

/**
 * The first answer of a proxy just started: its channels to the other services connect within the
 * reconnect backoff, and until then a request that needs them fails closed (503): waited out.
 */
async function firstAnswer(port: number, host: string, cookie: string): Promise<Awaited<ReturnType<typeof get>>> {
  const started = Date.now();
  for (;;) {
    const r = await get(port, host, cookie);
    if (r.status !== 503 || Date.now() - started > 20_000) return r;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function deployment(tls: boolean) {
  const cfg = configDir();
  const ports = { proxy: 0, authenticate: 0, authorize: 0, databroker: 0 };
  let idp: DevIdp;
  let up: Upstream;
  const running: Svc[] = [];
  const role = { proxy: undefined as Svc | undefined, authorize: undefined as Svc | undefined, databroker: undefined as Svc | undefined };

  const setup = async () => {
    for (const k of Object.keys(ports) as (keyof typeof ports)[]) ports[k] = await freePort();
    // TEST KEYS ONLY: one certificate for both gRPC services' internal names, trusted as certificate_authority.
    const [started, certificate] = await Promise.all([Promise.all([startLocalhostIdp(ports.proxy, ports.authenticate), startUpstream(echo)]), tls ? generateSelfSigned('services.localhost') : undefined]);
    [idp, up] = started;
    const grpcTls: Record<string, unknown> = { grpc_insecure: true };
    if (certificate !== undefined) {
      const cert = certificate;
      Object.assign(grpcTls, {
        grpc_insecure: false,
        certificate_file: cfg.file('services.pem', cert.certPem),
        certificate_key_file: cfg.file('services.key', cert.keyPem),
        certificate_authority_file: cfg.file('ca.pem', cert.certPem),
        override_certificate_name: 'services.localhost',
        authorize_internal_service_url: 'https://services.localhost',
        databroker_internal_service_url: 'https://services.localhost',
      });
    }
    const scheme = tls ? 'https' : 'http';
    cfg.writeRaw(
      stringify({
        ...BASE_SETTINGS,
        ...localhostSignInSettings(ports.proxy, idp, ports.authenticate),
        signing_key: testSigningKey(),
        forward_auth_url: `http://fwd.localhost:${ports.proxy}`,
        grpc_client_timeout: '1s',
        authorize_service_url: `${scheme}://127.0.0.1:${ports.authorize}`,
        databroker_service_url: `${scheme}://127.0.0.1:${ports.databroker}`,
        ...grpcTls,
        routes: [
          { from: `https://app.localhost:${ports.proxy}`, to: up.url, policy: 'allow if domain is "example.com"', pass_identity_headers: true },
          { from: `https://public.localhost:${ports.proxy}`, to: up.url, allow_public_unauthenticated_access: true },
        ],
      }),
    );
  };

  const start = async (services: 'proxy' | 'authenticate' | 'authorize' | 'databroker', env: Record<string, string> = {}, listenPort?: number): Promise<Svc> => {
    const args = services === 'proxy' || services === 'authenticate' ? ['--listen', `127.0.0.1:${listenPort ?? ports[services]}`] : ['--grpc-listen', `127.0.0.1:${ports[services]}`];
    const s = await startSvc(cfg.path, { SERVICES: services, ...env }, args);
    running.push(s);
    if (services === 'proxy' && listenPort === undefined) role.proxy = s;
    if (services === 'authorize') role.authorize = s;
    if (services === 'databroker') role.databroker = s;
    return s;
  };

  const browser = () => new HttpBrowser((url) => (url.hostname === 'authenticate.localhost' ? { port: ports.authenticate } : url.hostname.endsWith('.localhost') ? { port: ports.proxy } : url.port === String(idp.port) ? { port: idp.port } : undefined));
  const signIn = async (login: string): Promise<{ cookie: string; status: number; browser: HttpBrowser }> => {
    const b = browser();
    const hops = await b.signIn(`http://app.localhost:${ports.proxy}/`, login);
    return { cookie: `_svc=${b.cookies('app.localhost')['_svc']}`, status: hops.at(-1)!.status, browser: b };
  };
  const close = async () => {
    await Promise.all(running.map((s) => stopSvc(s)));
    await up?.close();
    await idp?.close();
    cfg.remove();
  };
  return { setup, start, signIn, close, ports, role };
}

function scenario(tls: boolean) {
  const d = deployment(tls);
  beforeAll(d.setup, 30_000);
  afterAll(d.close);

  it.sequential('sign-in through authenticate, policy by authorize, identity signed with the published key; Bob 403; a proxy restart keeps the session', async ({ expect }) => {
    // Any order: the proxy and the authenticate service first, their services later.
    await Promise.all([d.start('proxy'), d.start('authenticate')]);
    const [authorize] = await Promise.all([d.start('authorize'), d.start('databroker')]);
    expect(authorize.log()).toMatch(/"msg":"listening","services":"authorize","grpcAddress":"127\.0\.0\.1:\d+"/);
    const p = d.ports;
    const app = `app.localhost:${p.proxy}`;

    // The proxy and the authenticate service started before their services: their channels find
    // them within the reconnect backoff; until then a sign-in fails closed (503), never open.
    let alice = await d.signIn('alice@example.com');
    const started = Date.now();
    while (alice.status !== 200 && Date.now() - started < 20_000) {
      expect(alice.status).toBe(503);
      await new Promise((r) => setTimeout(r, 50));
      alice = await d.signIn('alice@example.com');
    }
    expect(alice.status).toBe(200);
    const r = await get(p.proxy, app, alice.cookie);
    expect(r.status).toBe(200);
    const assertion = (JSON.parse(r.body) as { headers: Record<string, string> }).headers['x-svc-jwt-assertion']!;
    const jwks = JSON.parse((await get(p.authenticate, `authenticate.localhost:${p.authenticate}`, '', '/.well-known/svc/jwks.json')).body) as JSONWebKeySet;
    expect(jwks.keys).toHaveLength(1);
    const { payload } = await jwtVerify(assertion, createLocalJWKSet(jwks));
    expect(payload['email']).toBe('alice@example.com');

    const bob = await d.signIn('bob@other.example');
    expect(bob.status).toBe(403);
    expect((await get(p.proxy, app, bob.cookie)).status).toBe(403);
    // Forward auth decides through the authorize service too.
    const verify = `/verify?uri=${encodeURIComponent(`http://app.localhost:${p.proxy}/x`)}`;
    expect((await get(p.proxy, `fwd.localhost:${p.proxy}`, alice.cookie, verify)).status).toBe(200);
    expect((await get(p.proxy, `fwd.localhost:${p.proxy}`, bob.cookie, verify)).status).toBe(403);

    // The authenticate service serves no route, the proxy not the authenticate host's endpoints.
    expect((await get(p.authenticate, app, alice.cookie)).status).toBe(404);
    expect((await get(p.proxy, `authenticate.localhost:${p.authenticate}`, '', '/.well-known/svc/jwks.json')).status).toBe(404);

    // The identity manager runs where the sessions are: the data broker, not the other roles.
    await until(() => /identity manager: took the lease/.test(d.role.databroker!.log()), 10_000);
    for (const other of [d.role.proxy!, authorize]) expect(other.log()).not.toMatch(/identity manager/);

    await stopSvc(d.role.proxy);
    await d.start('proxy');
    expect((await firstAnswer(p.proxy, app, alice.cookie)).status).toBe(200);
  }, 120_000);

  it.sequential('authorize down: an uncached decision fails closed (503), public routes serve, cached answers serve; authorize back: recovered', async ({ expect }) => {
    const p = d.ports;
    const app = `app.localhost:${p.proxy}`;
    const cached = await d.signIn('alice@example.com');
    expect((await get(p.proxy, app, cached.cookie)).status).toBe(200);
    await stopSvc(d.role.authorize, 'SIGKILL');
    // A new session: no answer cached for it.
    const fresh = await d.signIn('alice@example.com');
    expect(fresh.status).toBe(503);
    const down = await get(p.proxy, app, fresh.cookie);
    expect(down.status).toBe(503);
    expect(down.body, down.body).toContain('authorize-unavailable');
    const verify = `/verify?uri=${encodeURIComponent(`http://app.localhost:${p.proxy}/`)}`;
    expect((await get(p.proxy, `fwd.localhost:${p.proxy}`, fresh.cookie, verify)).status).toBe(503);
    expect((await get(p.proxy, `public.localhost:${p.proxy}`, '')).status).toBe(200);
    expect((await get(p.proxy, app, cached.cookie)).status).toBe(200);

    await d.start('authorize');
    await until(async () => (await get(p.proxy, app, fresh.cookie)).status === 200, 20_000);
  }, 120_000);

  it.sequential('a sign-out through one proxy is honoured by another at once', async ({ expect }) => {
    const p = d.ports;
    const app = `app.localhost:${p.proxy}`;
    const other = await freePort();
    const [, alice] = await Promise.all([d.start('proxy', {}, other), d.signIn('alice@example.com')]);
    expect((await get(p.proxy, app, alice.cookie)).status).toBe(200);
    expect((await firstAnswer(other, app, alice.cookie)).status).toBe(200);
    // The sign-out form (its CSRF token), posted to the first proxy.
    const page = await alice.browser.request(`http://${app}/.svc/signout`);
    const csrf = /name="svc_csrf" value="([^"]+)"/.exec(page.body)![1]!;
    const out = await alice.browser.request(`http://${app}/.svc/signout/`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `svc_csrf=${encodeURIComponent(csrf)}` });
    expect(out.status).toBe(302);
    await until(async () => (await get(other, app, alice.cookie)).status === 302, 5_000);
  }, 120_000);

  it.sequential('a proxy with the wrong shared_secret serves nothing protected (503) and says why', async ({ expect }) => {
    const p = d.ports;
    const other = await freePort();
    const [alice, wrong] = await Promise.all([d.signIn('alice@example.com'), d.start('proxy', { SHARED_SECRET: WRONG_SECRET }, other)]);
    const r = await get(other, `app.localhost:${p.proxy}`, alice.cookie);
    expect(r.status).toBe(503);
    expect((await get(other, `public.localhost:${p.proxy}`, '')).status).toBe(200);
    await until(() => /UNAUTHENTICATED/.test(wrong.log()), 10_000);
    expect(wrong.log()).not.toContain(WRONG_SECRET);
  }, 120_000);
}

// The two deployments are independent (their own ports, config, provider and processes) and much
// of their time is waiting (channels finding a service just started, a role restarting): they run
// side by side, each one's tests in order.
describe.concurrent('four roles as four processes over plaintext gRPC', () => scenario(false));
describe.concurrent('four roles as four processes over gRPC with TLS (grpc_insecure: false)', () => scenario(true));
