/**
 * docs/distributed.md "Plans that differ", with real `svc run` processes: a proxy and an authorize
 * service loading the same config file run plans with different checksums (`services` differs), and
 * log no `routes checksum mismatch`; a proxy whose config differs in one route's policy (a
 * half-rolled-out config) is answered for the route both have, and both sides log the mismatch.
 */
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE_SETTINGS } from '../support/compile-text.ts';
import { freePort } from './auth-support.ts';
import { get, startSvc, stopSvc, until, type Svc } from './role-process.ts';
import { configDir, echo, startUpstream, type Upstream } from './support.ts';

const MISMATCH = 'routes checksum mismatch';

describe('plan checksums between the proxy and the authorize service', () => {
  const cfg = configDir();
  const running: Svc[] = [];
  let up: Upstream;
  let authorize: Svc;
  const ports = { proxy: 0, other: 0, authorize: 0, databroker: 0 };

  /** The config both roles load; `otherPolicy` changes the second route's policy only. */
  const config = (otherPolicy: string) =>
    stringify({
      ...BASE_SETTINGS,
      authorize_service_url: `http://127.0.0.1:${ports.authorize}`,
      databroker_service_url: `http://127.0.0.1:${ports.databroker}`,
      grpc_insecure: true,
      grpc_client_timeout: '1s',
      routes: [
        // Asked of the authorize service (a policy), answerable without a session.
        { from: 'https://app.localhost', to: up.url, policy: 'allow if http_method is "GET"' },
        { from: 'https://admin.localhost', to: up.url, policy: otherPolicy },
      ],
    });

  /** The first answer of a proxy just started (its channel to authorize connects within the backoff). */
  async function firstAnswer(port: number): Promise<number> {
    let status = 0;
    await until(async () => (status = (await get(port, 'app.localhost', '')).status) !== 503, 20_000);
    return status;
  }

  /**
   * Waits until `svc` has written everything it logged before now: a reload (SIGHUP) of the unchanged
   * config logs `config unchanged`, after any line of a request already answered.
   */
  async function settled(svc: Svc): Promise<void> {
    const count = () => svc.log().split('config unchanged').length;
    const before = count();
    svc.child.kill('SIGHUP');
    await until(() => count() > before, 20_000);
  }

  beforeAll(async () => {
    for (const k of Object.keys(ports) as (keyof typeof ports)[]) ports[k] = await freePort();
    up = await startUpstream(echo);
    cfg.writeRaw(config('allow if http_method is "GET"'));
    authorize = await startSvc(cfg.path, { SERVICES: 'authorize' }, ['--grpc-listen', `127.0.0.1:${ports.authorize}`]);
    running.push(authorize);
  }, 30_000);
  afterAll(async () => {
    for (const s of running) await stopSvc(s);
    await up?.close();
    cfg.remove();
  });

  it('the same config file: answered, and no mismatch is logged on either side', async () => {
    const proxy = await startSvc(cfg.path, { SERVICES: 'proxy' }, ['--listen', `127.0.0.1:${ports.proxy}`]);
    running.push(proxy);
    expect(await firstAnswer(ports.proxy)).toBe(200);
    expect(await get(ports.proxy, 'app.localhost', '', '/again').then((r) => r.status)).toBe(200);
    await settled(proxy);
    await settled(authorize);
    expect(proxy.log()).not.toContain(MISMATCH);
    expect(authorize.log()).not.toContain(MISMATCH);
  }, 40_000);

  it('another policy in the proxy’s config: the shared route is answered, and both sides log the mismatch', async () => {
    const other = await startSvc(cfg.file('other.yaml', config('allow if http_method is "POST"')), { SERVICES: 'proxy' }, ['--listen', `127.0.0.1:${ports.other}`]);
    running.push(other);
    expect(await firstAnswer(ports.other)).toBe(200);
    await until(() => other.log().includes(MISMATCH) && authorize.log().includes(MISMATCH), 10_000);
    const line = other.log().split('\n').find((l) => l.includes(MISMATCH))!;
    expect(JSON.parse(line)).toMatchObject({ level: 'warn' });
  }, 40_000);
});
