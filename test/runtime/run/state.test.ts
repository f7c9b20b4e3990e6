/** Per-generation forwarding state: unchanged upstreams keep their pool and health state across swaps. */
import type { Pool } from 'undici';
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import type { ForwardState } from '../../../runtime/http/handler.ts';
import { PlanStore } from '../../../runtime/plan/store.ts';
import { forwardStateHooks } from '../../../runtime/run/state.ts';
import { BASE_SETTINGS, compileText } from '../../support/compile-text.ts';

const plan = (to: string, extra: Record<string, unknown> = {}) => compileText(stringify({ ...BASE_SETTINGS, routes: [{ from: 'https://a.example.com', to, allow_public_unauthenticated_access: true, ...extra }] })).plan!;

describe('forward state across reloads', () => {
  it('reuses the pool of an unchanged upstream and closes the pool of a removed one after its requests', async () => {
    const store = new PlanStore<ForwardState>(plan('http://one:8080'), forwardStateHooks());
    const first = store.current.extra.pools[0]![0]! as Pool;
    // A change elsewhere in the route keeps the upstream's pool.
    store.swap(plan('http://one:8080', { set_request_headers: { 'X-A': '1' } }));
    expect(store.current.extra.pools[0]![0]).toBe(first);
    // A request in flight on this generation keeps its pool open through a swap.
    const g = store.acquire();
    store.swap(plan('http://two:8080'));
    const second = store.current.extra.pools[0]![0]! as Pool;
    expect(second).not.toBe(first);
    expect(first.closed).toBe(false);
    store.release(g);
    await expect.poll(() => first.closed).toBe(true);
    expect(second.closed).toBe(false);
  });

  it('an unchanged checksum is a no-op', () => {
    const p = plan('http://one:8080');
    const store = new PlanStore<ForwardState>(p, forwardStateHooks());
    expect(store.swap(plan('http://one:8080'))).toBe('unchanged');
    expect(store.current.number).toBe(1);
  });
});
