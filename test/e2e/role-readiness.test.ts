/**
 * Readiness, liveness and the graceful stop of every split role (`services: databroker`,
 * `authorize`, `authenticate`, `proxy`; docs/distributed.md, docs/observability.md "Health
 * endpoints", docs/logging.md "Stopping"), as four real `svc run` processes on loopback with a real
 * redis-server behind the data broker. Readiness is "this process can serve": it stays 200 while
 * Redis is down, in the data broker itself too (every replica shares that Redis), and `/healthz`
 * (200) says `databroker: unreachable` until it is back. SIGTERM turns `/readyz` to 503 `draining`
 * while the role still accepts connections for `--shutdown-delay`, then it drains and exits 0.
 */
import { connect } from 'node:net';
import { stringify } from 'yaml';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { DevIdp } from '../../demo/dev-idp.ts';
import { BASE_SETTINGS } from '../support/compile-text.ts';
import { startRedis, type RedisProcess } from '../support/redis-server.ts';
import { describeWithCommands } from '../support/system.ts';
import { freePort, localhostSignInSettings, startLocalhostIdp, testSigningKey } from './auth-support.ts';
import { scrape } from './metrics-support.ts';
import { get, startSvc, stopSvc, type Svc } from './role-process.ts';
import { configDir, echo, startUpstream, type Upstream } from './support.ts';

const ROLES = ['databroker', 'authorize', 'authenticate', 'proxy'] as const;
type Role = (typeof ROLES)[number];
/**
 * `--shutdown-delay` of every role: long enough for the checks made within it (a few probes,
 * well under a second), short because the test waits it out before the roles exit.
 */
const SHUTDOWN_DELAY_SECONDS = 5;

/** Whether a TCP connection to the port is accepted. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

describeWithCommands(['redis-server'], 'readiness and the graceful stop of the split roles', () => {
  const cfg = configDir();
  let redis: RedisProcess;
  let idp: DevIdp;
  let up: Upstream;
  /** Each role's main port: gRPC for the data broker and authorize, HTTP for the others. */
  const port = {} as Record<Role, number>;
  const metrics = {} as Record<Role, number>;
  const svc = {} as Record<Role, Svc>;

  beforeAll(async () => {
    for (const r of ROLES) {
      port[r] = await freePort();
      metrics[r] = await freePort();
    }
    [redis, idp, up] = await Promise.all([startRedis(), startLocalhostIdp(port.proxy, port.authenticate), startUpstream(echo)]);
    cfg.writeRaw(
      stringify({
        ...BASE_SETTINGS,
        ...localhostSignInSettings(port.proxy, idp, port.authenticate),
        signing_key: testSigningKey(),
        grpc_insecure: true,
        grpc_client_timeout: '1s',
        authorize_service_url: `http://127.0.0.1:${port.authorize}`,
        databroker_service_url: `http://127.0.0.1:${port.databroker}`,
        databroker_storage_type: 'redis',
        databroker_storage_connection_string: `redis://127.0.0.1:${redis.port}/7`,
        routes: [{ from: `https://public.localhost:${port.proxy}`, to: up.url, allow_public_unauthenticated_access: true }],
      }),
    );
    // The four roles start side by side (the first test waits for each to see the data broker).
    await Promise.all(
      ROLES.map(async (r) => {
        // Every listener on a port of its own, the gRPC one included (the HTTP roles open none here).
        const listen = r === 'databroker' || r === 'authorize' ? ['--grpc-listen', `127.0.0.1:${port[r]}`] : ['--listen', `127.0.0.1:${port[r]}`, '--grpc-listen', '127.0.0.1:0'];
        svc[r] = await startSvc(cfg.path, { SERVICES: r, METRICS_ADDRESS: `127.0.0.1:${metrics[r]}` }, [...listen, '--shutdown-delay', String(SHUTDOWN_DELAY_SECONDS)]);
      }),
    );
  }, 90_000);

  afterAll(async () => {
    await Promise.all(ROLES.map((r) => stopSvc(svc[r], 'SIGKILL')));
    await up?.close();
    await idp?.close();
    await redis?.stop();
    cfg.remove();
  });

  const probe = async (r: Role, path: '/readyz' | '/healthz') => {
    const a = await scrape(metrics[r], { path });
    return `${a.status} ${a.body}`;
  };

  it('every role is ready while its store is up and while it is down; /healthz reports the data broker', async () => {
    for (const r of ROLES) {
      await expect.poll(() => probe(r, '/healthz'), { timeout: 20_000 }).toBe('200 ok\ndatabroker: reachable\n');
      expect(await probe(r, '/readyz')).toBe('200 ok\n');
    }

    // Redis down: the data broker holds no session, and every role still says it can serve.
    await redis.kill();
    for (const r of ROLES) {
      await expect.poll(() => probe(r, '/healthz'), { timeout: 20_000 }).toBe('200 ok\ndatabroker: unreachable\n');
      expect(await probe(r, '/readyz')).toBe('200 ok\n');
    }
    // The proxy still serves its public route, and its main listener's readiness agrees.
    expect((await get(port.proxy, `public.localhost:${port.proxy}`, '')).status).toBe(200);
    expect((await get(port.proxy, `public.localhost:${port.proxy}`, '', '/.svc/ready')).status).toBe(200);

    await redis.restart();
    for (const r of ROLES) await expect.poll(() => probe(r, '/healthz'), { timeout: 30_000 }).toBe('200 ok\ndatabroker: reachable\n');
  }, 120_000);

  it('SIGTERM: /readyz turns 503 draining at once, connections are still accepted for the shutdown delay, then every role exits 0', async () => {
    const exits = ROLES.map((r) => new Promise<number | null>((resolve) => svc[r].child.once('exit', (code) => resolve(code))));
    for (const r of ROLES) svc[r].child.kill('SIGTERM');
    for (const r of ROLES) {
      await expect.poll(() => probe(r, '/readyz'), { timeout: (SHUTDOWN_DELAY_SECONDS - 1) * 1000 }).toBe('503 not ready: draining\n');
      expect(await probe(r, '/healthz')).toMatch(/^200 ok\n/);
    }
    // Within the delay: the gRPC roles accept connections, the HTTP roles answer on their
    // main listener (its readiness says draining too).
    expect(await accepts(port.databroker)).toBe(true);
    expect(await accepts(port.authorize)).toBe(true);
    expect(await get(port.proxy, `public.localhost:${port.proxy}`, '', '/.svc/ready')).toMatchObject({ status: 503, body: 'draining' });
    expect(await get(port.authenticate, `authenticate.localhost:${port.authenticate}`, '', '/.svc/ready')).toMatchObject({ status: 503, body: 'draining' });
    // The stopping line comes through the role's output pipe, which may lag behind its readiness.
    for (const r of ROLES) await expect.poll(() => svc[r].log(), { timeout: 5_000, interval: 50 }).toMatch(new RegExp(`"msg":"stopping","shutdownDelayMs":${SHUTDOWN_DELAY_SECONDS * 1000}`));
    expect(await Promise.all(exits)).toEqual([0, 0, 0, 0]);
  }, 120_000);
});
