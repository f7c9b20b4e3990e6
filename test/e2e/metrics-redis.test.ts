/**
 * Metrics of the Redis session store (docs/observability.md "Metric reference" `redis_*`, `storage_operation_duration_ms`) against a
 * real redis-server: the pool figures, the wait counter and `svc_redis_up` follow an outage and the recovery, storage
 * operations are timed with `backend="redis"`, and readiness (`/readyz`) does not fail while Redis is down
 * (every replica shares it: test/e2e/readiness.test.ts).
 * The alert rule "Redis unreachable" (docs/observability/alerts.yml) reads `svc_redis_up`.
 */
import { stringify } from 'yaml';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { run, type Running } from '../../runtime/process/run.ts';
import { BASE_SETTINGS } from '../support/compile-text.ts';
import { startRedis, type RedisProcess } from '../support/redis-server.ts';
import { describeWithCommands } from '../support/system.ts';
import { freePort, sample, scrape } from './metrics-support.ts';
import { configDir, echo, startUpstream, type Upstream } from './support.ts';

/** TEST ONLY password. */
const PASSWORD = 'test-only-redis-metrics-password';

async function until(check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describeWithCommands(['redis-server'], 'metrics of the Redis session store', () => {
  let redis: RedisProcess;
  let up: Upstream;
  let svc: Running;
  let metricsPort = 0;
  const cfg = configDir();
  const exposition = async () => (await scrape(metricsPort)).body;

  beforeAll(async () => {
    redis = await startRedis({ password: PASSWORD });
    up = await startUpstream(echo);
    metricsPort = await freePort();
    cfg.writeRaw(
      stringify({
        ...BASE_SETTINGS,
        metrics_address: `127.0.0.1:${metricsPort}`,
        databroker_storage_type: 'redis',
        databroker_storage_connection_string: `redis://:${PASSWORD}@127.0.0.1:${redis.port}/5`,
        routes: [{ from: 'https://app.example.com', to: up.url, allow_public_unauthenticated_access: true }],
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

  it('exports the pool and storage figures, and follows an outage and the recovery', async () => {
    await until(async () => sample(await exposition(), 'svc_redis_up') === 1);
    expect((await scrape(metricsPort, { path: '/readyz' })).status).toBe(200);
    // A session read: one timed storage operation on the Redis backend.
    await svc.sessions.get('metrics-redis-test');
    let text = await exposition();
    expect(sample(text, 'svc_redis_conns')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'svc_storage_operation_duration_ms_count', { backend: 'redis', operation: 'get', result: 'ok' })).toBeGreaterThanOrEqual(1);
    expect(text).not.toContain(PASSWORD);
    const waitsBefore = sample(text, 'svc_redis_wait_count_total') ?? Number.NaN;
    expect(waitsBefore).toBeGreaterThanOrEqual(0);

    await redis.kill();
    await until(async () => sample(await exposition(), 'svc_redis_up') === 0);
    expect((await scrape(metricsPort, { path: '/readyz' })).status).toBe(200);
    await svc.sessions.get('metrics-redis-test').catch(() => undefined);
    text = await exposition();
    expect(sample(text, 'svc_storage_operation_duration_ms_count', { backend: 'redis', operation: 'get', result: 'error' })).toBeGreaterThanOrEqual(1);
    // The session read found no connection: a wait.
    expect(sample(text, 'svc_redis_wait_count_total')).toBeGreaterThan(waitsBefore);
    expect(sample(text, 'svc_redis_wait_duration_ms_total')).toBeGreaterThanOrEqual(0);

    await redis.restart();
    await until(async () => sample(await exposition(), 'svc_redis_up') === 1);
    expect((await scrape(metricsPort, { path: '/readyz' })).status).toBe(200);
  }, 90_000);
});
