/**
 * The health answers' parts (runtime/observe/metrics/health.ts): `/healthz` reports the data broker's
 * state from what is known already (the Redis pool, or a background probe whose changes are logged)
 * and never fails for it; readiness is only the checks it is given.
 */
import { describe, expect, it } from 'vitest';
import { failedChecks, healthBody, watchDatabroker } from '../../../../runtime/observe/metrics/health.ts';
import type { SessionStore, StorePoolFigures } from '../../../../runtime/core/session-store.ts';

/** A store whose `get` answers or fails as `reachable` says. */
function fakeStore(reachable: { value: boolean }): SessionStore {
  return { get: () => (reachable.value ? Promise.resolve(undefined) : Promise.reject(new Error('down'))) } as unknown as SessionStore;
}

const pool = (up: boolean): StorePoolFigures => ({ conns: 1, idleConns: 1, waitCount: 0, waitDurationMs: 0, up, replaysRefused: 0, leasesTakenOver: 0 });

describe('watchDatabroker', () => {
  it('reads a Redis pool state at once', () => {
    let up = true;
    const w = watchDatabroker({ store: () => undefined, pool: () => pool(up) });
    expect(w.state()).toBe('reachable');
    up = false;
    expect(w.state()).toBe('unreachable');
    w.close();
  });

  it('probes a store without a pool in the background and logs each change', async () => {
    const reachable = { value: true };
    const lines: Record<string, unknown>[] = [];
    const w = watchDatabroker({ store: () => fakeStore(reachable), log: (l) => lines.push(l), intervalMs: 10 });
    await expect.poll(() => w.state()).toBe('reachable');
    reachable.value = false;
    await expect.poll(() => w.state()).toBe('unreachable');
    reachable.value = true;
    await expect.poll(() => w.state()).toBe('reachable');
    w.close();
    expect(lines.map((l) => l['msg'])).toEqual(['data broker unreachable; requests that need a session answer 503 until it is back (readiness does not change)', 'data broker reachable again']);
  });
});

describe('the health answers', () => {
  it('/healthz: ok, then each detail; a detail that throws reads unknown', () => {
    expect(healthBody(undefined)).toBe('ok\n');
    expect(
      healthBody({
        databroker: () => 'unreachable',
        other: () => {
          throw new Error('x');
        },
      }),
    ).toBe('ok\ndatabroker: unreachable\nother: unknown\n');
  });

  it('readiness names the failed checks only', async () => {
    expect(await failedChecks({ plan: () => true, draining: () => false })).toEqual(['draining']);
  });
});
