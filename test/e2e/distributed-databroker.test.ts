/**
 * Distributed mode, first part: two real `svc run` processes on loopback from one config
 * file — the data broker (`SERVICES=databroker`: gRPC only, no HTTP listener) and an all-in-one
 * proxy that keeps its sessions there (`databroker_service_url`) — with a real OIDC provider.
 * Signed in through the proxy, the session outlives a proxy restart; the data broker killed → 503 on
 * protected routes (never a sign-in redirect), 200 on public ones; the data broker back → the proxy
 * recovers by itself. A proxy with the wrong shared secret is refused UNAUTHENTICATED (logged on
 * both sides, no secret in either log) and serves 503. The same over TLS (`grpc_insecure: false`).
 */
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DevIdp } from '../../demo/dev-idp.ts';
import { generateSelfSigned } from '../../runtime/tls/self-signed.ts';
import { BASE_SETTINGS, TEST_SECRET } from '../support/compile-text.ts';
import { HttpBrowser } from '../support/http-browser.ts';
import { freePort, localhostSignInSettings, startLocalhostIdp } from './auth-support.ts';
import { configDir, echo, startUpstream, type Upstream } from './support.ts';
import { get, startSvc, stopSvc, until, type Svc } from './role-process.ts';

/** Another valid test-only secret (32 bytes of 2). */
const WRONG_SECRET = Buffer.alloc(32, 2).toString('base64');

/** One deployment: a data broker and a proxy using it, from one config file. */
function deployment(tls: boolean) {
  let idp: DevIdp;
  let up: Upstream;
  const cfg = configDir();
  let port = 0;
  let brokerPort = 0;
  const svcs: Svc[] = [];
  const brokerEnv = () => ({ SERVICES: 'databroker' });
  const proxyArgs = () => ['--listen', `127.0.0.1:${port}`];

  const setup = async (): Promise<void> => {
    port = await freePort();
    brokerPort = await freePort();
    [idp, up] = await Promise.all([startLocalhostIdp(port), startUpstream(echo)]);
    // grpc_insecure defaults differ by role (true all-in-one, false otherwise): one file sets it.
    const tlsSettings: Record<string, unknown> = { grpc_insecure: true };
    if (tls) {
      // TEST KEY ONLY: the data broker's certificate, trusted by the proxy as certificate_authority.
      const cert = await generateSelfSigned('databroker.localhost');
      Object.assign(tlsSettings, {
        grpc_insecure: false,
        certificate_file: cfg.file('databroker.pem', cert.certPem),
        certificate_key_file: cfg.file('databroker.key', cert.keyPem),
        certificate_authority_file: cfg.file('ca.pem', cert.certPem),
        databroker_internal_service_url: `https://databroker.localhost:${brokerPort}`,
      });
    }
    cfg.writeRaw(
      stringify({
        ...BASE_SETTINGS,
        address: `127.0.0.1:${port}`,
        ...localhostSignInSettings(port, idp),
        grpc_address: `127.0.0.1:${brokerPort}`,
        grpc_client_timeout: '1s',
        databroker_service_url: `${tls ? 'https' : 'http'}://127.0.0.1:${brokerPort}`,
        ...tlsSettings,
        routes: [
          { from: `https://app.localhost:${port}`, to: up.url, policy: 'allow if domain is "example.com"' },
          { from: `https://public.localhost:${port}`, to: up.url, allow_public_unauthenticated_access: true },
        ],
      }),
    );
  };
  let broker: Svc | undefined;
  const startBroker = async () => {
    const s = await startSvc(cfg.path, brokerEnv());
    svcs.push(s);
    broker = s;
    return s;
  };
  const startProxy = async (env: Record<string, string> = {}, listenPort?: number, workers = 1) => {
    const s = await startSvc(cfg.path, env, listenPort === undefined ? proxyArgs() : ['--listen', `127.0.0.1:${listenPort}`], workers);
    svcs.push(s);
    return s;
  };
  const signIn = async (): Promise<string> => {
    const browser = new HttpBrowser((url) => (url.hostname.endsWith('.localhost') ? { port } : url.port === String(idp.port) ? { port: idp.port } : undefined));
    const hops = await browser.signIn(`http://app.localhost:${port}/`, 'alice@example.com');
    expect(hops[hops.length - 1]!.status).toBe(200);
    return `_svc=${browser.cookies('app.localhost')['_svc']}`;
  };
  const close = async () => {
    await Promise.all(svcs.map((s) => stopSvc(s)));
    await up?.close();
    await idp?.close();
    cfg.remove();
  };
  return { setup, startBroker, startProxy, signIn, close, port: () => port, brokerPort: () => brokerPort, broker: () => broker };
}

describe('a data broker process and a proxy using it over gRPC (plaintext)', () => {
  const d = deployment(false);
  beforeAll(d.setup, 30_000);
  afterAll(d.close);

  it('sessions live in the data broker: a proxy restart keeps them; the data broker down → 503 (public routes 200); back → recovers', async () => {
    let broker = await d.startBroker();
    expect(broker.log()).toMatch(/"msg":"listening","services":"databroker","grpcAddress":"127\.0\.0\.1:\d+"/);
    let proxy = await d.startProxy();
    // The service label of the logs (docs/observability.md): svc-databroker for the role, svc all-in-one.
    expect(broker.log()).toMatch(/"service":"svc-databroker","msg":"listening"/);
    expect(broker.log()).not.toMatch(/"service":"svc"/);
    expect(proxy.log()).toMatch(/"service":"svc","msg":"listening"/);
    const port = d.port();
    const app = `app.localhost:${port}`;
    const cookie = await d.signIn();
    expect((await get(port, app, cookie)).status).toBe(200);

    // The proxy keeps no session of its own: restarted, it serves the same session.
    await stopSvc(proxy);
    proxy = await d.startProxy();
    expect((await get(port, app, cookie)).status).toBe(200);

    // The data broker dies: fail closed on routes that need a session, never a sign-in redirect.
    await stopSvc(broker, 'SIGKILL');
    const down = await get(port, app, cookie);
    expect(down.status).toBe(503);
    expect(down.body).toContain('session-store-unavailable');
    expect(down.headers['set-cookie']).toBeUndefined();
    expect((await get(port, `public.localhost:${port}`, '')).status).toBe(200);
    expect(proxy.log()).toMatch(/data broker change stream lost/);

    // It comes back (an in-memory data broker: its sessions are gone, so the old cookie now leads
    // to sign-in): the proxy reconnects by itself and a new sign-in works.
    broker = await d.startBroker();
    await until(async () => (await get(port, app, cookie)).status === 302, 20_000);
    const again = await d.signIn();
    expect((await get(port, app, again)).status).toBe(200);
    await until(() => /data broker change stream back/.test(proxy.log()), 10_000);
  }, 120_000);

  it('a proxy with the wrong shared_secret is refused UNAUTHENTICATED, logged on both sides without the secret, and serves 503', async () => {
    // The data broker and the proxy of the previous test serve on; a session made there is sent to
    // a second proxy with the same cookie_secret (it opens the cookie) but another shared_secret.
    const broker = d.broker()!;
    const brokerLog = () => broker.log();
    const other = await freePort();
    const [cookie, wrong] = await Promise.all([d.signIn(), d.startProxy({ SHARED_SECRET: WRONG_SECRET }, other)]);
    const r = await get(other, `app.localhost:${d.port()}`, cookie);
    expect(r.status).toBe(503);
    expect((await get(other, `public.localhost:${d.port()}`, '')).status).toBe(200);
    await until(() => /UNAUTHENTICATED/.test(wrong.log()), 10_000);
    expect(wrong.log()).toMatch(/refused by svc\.databroker\.v1\.DataBroker at .*UNAUTHENTICATED \(check that every service has the same shared_secret\)/);
    await until(() => /gRPC call refused: UNAUTHENTICATED/.test(brokerLog()), 10_000);
    expect(brokerLog()).toContain('bad-signature');
    for (const log of [wrong.log(), brokerLog()]) {
      expect(log).not.toContain(WRONG_SECRET);
      expect(log).not.toContain(TEST_SECRET);
      expect(log).not.toMatch(/Bearer|eyJ[\w-]+\./);
    }
  }, 60_000);
});

describe('a data broker process and a proxy using it over gRPC with TLS (grpc_insecure: false)', () => {
  const d = deployment(true);
  beforeAll(d.setup, 30_000);
  afterAll(d.close);

  it('serves sessions over TLS, the certificate checked against databroker_internal_service_url (a proxy with two workers)', async () => {
    const broker = await d.startBroker();
    expect(broker.log()).toMatch(/"msg":"serving the data broker over gRPC".*"tls":true/);
    // With workers, the primary is the data broker's client and serves its workers over IPC.
    await d.startProxy({}, undefined, 2);
    const port = d.port();
    const cookie = await d.signIn();
    expect((await get(port, `app.localhost:${port}`, cookie)).status).toBe(200);
  }, 60_000);
});
