/**
 * Readiness while the shared data broker (Redis) is down (docs/observability.md; docs/observability.md
 * "Health endpoints", docs/scale-out.md "Failure behaviour"): every replica shares it, so failing
 * readiness for it would make an orchestrator pull every replica at once, public routes included,
 * which svc still serves. `/readyz` and `/.svc/ready` stay 200; `/healthz` (still 200) reports the
 * data broker unreachable, as `svc_redis_up` does.
 */
import { stringify } from 'yaml';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { run, type Running } from '../../runtime/process/run.ts';
import { BASE_SETTINGS } from '../support/compile-text.ts';
import { startRedis, type RedisProcess } from '../support/redis-server.ts';
import { describeWithCommands } from '../support/system.ts';
import { freePort, hit, sample, scrape } from './metrics-support.ts';
import { configDir, echo, startUpstream, type Upstream } from './support.ts';

describeWithCommands(['redis-server'], 'readiness with the data broker down', () => {
  let redis: RedisProcess;
  let up: Upstream;
  let svc: Running;
  let metricsPort = 0;
  const cfg = configDir();

  beforeAll(async () => {
    redis = await startRedis();
    up = await startUpstream(echo);
    metricsPort = await freePort();
    cfg.writeRaw(
      stringify({
        ...BASE_SETTINGS,
        metrics_address: `127.0.0.1:${metricsPort}`,
        databroker_storage_type: 'redis',
        databroker_storage_connection_string: `redis://127.0.0.1:${redis.port}/6`,
        routes: [{ from: 'https://public.example.com', to: up.url, allow_public_unauthenticated_access: true }],
      }),
    );
    svc = await run({ configPath: cfg.path, listen: { host: '127.0.0.1', port: 0 }, watch: false, grpcListen: { host: '127.0.0.1', port: 0 } });
  }, 60_000);

  afterAll(async () => {
    await svc?.close();
    await up?.close();
    await redis?.stop();
    cfg.remove();
  });

  it('stays ready and serves public routes; /healthz reports the data broker unreachable', async () => {
    const redisUp = async () => sample((await scrape(metricsPort)).body, 'svc_redis_up');
    await expect.poll(redisUp, { timeout: 20_000 }).toBe(1);
    expect(await scrape(metricsPort, { path: '/healthz' })).toMatchObject({ status: 200, body: 'ok\ndatabroker: reachable\n' });

    await redis.kill();
    await expect.poll(redisUp, { timeout: 20_000 }).toBe(0);
    expect(await scrape(metricsPort, { path: '/readyz' })).toMatchObject({ status: 200, body: 'ok\n' });
    expect(await scrape(metricsPort, { path: '/healthz' })).toMatchObject({ status: 200, body: 'ok\ndatabroker: unreachable\n' });
    const port = svc.listening.address.port;
    expect(await hit(port, 'public.example.com', '/.svc/ready')).toBe(200);
    expect(await hit(port, 'public.example.com', '/')).toBe(200);
  }, 60_000);
});
