/**
 * The figures other parts keep and the metrics read at each scrape: the Redis pool (a provider of
 * `StorePoolFigures`), the identity manager (`IdentityManagerFigures`), and storage operations
 * (a `StoreObserver`, here through `observedStore` around the real memory store).
 */
import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../../../../runtime/databroker/memory-store.ts';
import type { StorePoolFigures } from '../../../../runtime/core/session-store.ts';
import { NO_IDENTITY_FIGURES, type IdentityManagerFigures } from '../../../../runtime/core/identity-figures.ts';
import { observedStore } from '../../../../runtime/databroker/observed-store.ts';
import { createMetrics } from '../../../../runtime/observe/metrics/registry.ts';
import { sample } from '../../../e2e/metrics-support.ts';

describe('metrics read from providers', () => {
  it('exports the Redis pool figures at each scrape, and no Redis metrics without a provider', async () => {
    let figures: StorePoolFigures | undefined = { conns: 4, idleConns: 3, waitCount: 7, waitDurationMs: 12.5, up: true, replaysRefused: 2, leasesTakenOver: 1 };
    const m = createMetrics({ service: 'svc-databroker', role: 'loader', storePool: () => figures });
    let text = await m.registry.metrics();
    expect([sample(text, 'svc_redis_conns'), sample(text, 'svc_redis_idle_conns'), sample(text, 'svc_redis_wait_count_total'), sample(text, 'svc_redis_wait_duration_ms_total'), sample(text, 'svc_redis_up')]).toEqual([4, 3, 7, 12.5, 1]);
    expect([sample(text, 'svc_redis_replays_refused_total'), sample(text, 'svc_redis_leases_taken_over_total')]).toEqual([2, 1]);
    expect(text).toContain('service="svc-databroker"');
    figures = { conns: 0, idleConns: 0, waitCount: 9, waitDurationMs: 20, up: false, replaysRefused: 2, leasesTakenOver: 1 };
    text = await m.registry.metrics();
    expect([sample(text, 'svc_redis_up'), sample(text, 'svc_redis_wait_count_total')]).toEqual([0, 9]);
    // No store yet: no connections, not up (never a stale figure).
    figures = undefined;
    text = await m.registry.metrics();
    expect([sample(text, 'svc_redis_conns'), sample(text, 'svc_redis_up')]).toEqual([0, 0]);
    expect(await createMetrics({ service: 'svc', role: 'loader' }).registry.metrics()).not.toContain('svc_redis_');
  });

  it('exports the identity manager figures: timestamps in seconds, counters as totals', async () => {
    const figures: IdentityManagerFigures = { ...NO_IDENTITY_FIGURES, lastRefreshMs: 1_700_000_000_000, sessionRefreshSuccess: 5, sessionRefreshError: 2, userGroupRefreshErrorMs: 1_700_000_001_500 };
    const text = await createMetrics({ service: 'svc', role: 'loader', identityManager: () => figures }).registry.metrics();
    expect(sample(text, 'svc_identity_manager_last_refresh_timestamp')).toBe(1_700_000_000);
    expect(sample(text, 'svc_identity_manager_user_group_refresh_error_timestamp')).toBe(1_700_000_001.5);
    expect(sample(text, 'svc_identity_manager_session_refresh_success_total')).toBe(5);
    expect(sample(text, 'svc_identity_manager_session_refresh_errors_total')).toBe(2);
    expect(sample(text, 'svc_identity_manager_user_refresh_success_timestamp')).toBe(0);
  });

  it('times storage operations by operation, result and backend', async () => {
    const m = createMetrics({ service: 'svc', role: 'loader' });
    const store = new MemoryStore({ sweepIntervalMs: 0 });
    const observed = observedStore(store, m.store, 'memory');
    const now = Date.now();
    await observed.put({ id: 'test-session', userId: 'u', groups: [], claims: {}, expiresAtMs: now + 60_000, createdAtMs: now });
    await observed.get('test-session');
    await observed.get('missing');
    await observed.delete('test-session');
    await expect(observed.put({ id: 'test-session', userId: 'u', groups: [], claims: {}, expiresAtMs: now + 60_000, createdAtMs: now })).rejects.toThrow();
    const text = await m.registry.metrics();
    expect(sample(text, 'svc_storage_operation_duration_ms_count', { operation: 'get', result: 'ok', backend: 'memory' })).toBe(2);
    expect(sample(text, 'svc_storage_operation_duration_ms_count', { operation: 'put', result: 'ok' })).toBe(1);
    expect(sample(text, 'svc_storage_operation_duration_ms_count', { operation: 'put', result: 'error' })).toBe(1);
    expect(sample(text, 'svc_storage_operation_duration_ms_count', { operation: 'delete', result: 'ok' })).toBe(1);
    await observed.close();
  });

  it('a cluster worker keeps no configuration figures (the primary does, once)', async () => {
    const text = await createMetrics({ service: 'svc', role: 'worker' }).registry.metrics();
    expect(text).not.toContain('svc_build_info');
    expect(text).not.toContain('svc_config_');
    expect(text).toContain('svc_http_server_requests_total');
  });
});
