/** Per-generation forwarding state: unchanged upstreams keep their pool and health state across swaps. */
import { createServer, type Server } from 'node:https';
import type { Pool } from 'undici';
import { stringify } from 'yaml';
import { afterEach, describe, expect, it } from 'vitest';
import type { PlanEnvelope } from '../../../compiler/plan/types.ts';
import type { ForwardState } from '../../../runtime/generation/forward-provisioner.ts';
import type { CompiledRoute } from '../../../runtime/plan/index.ts';
import { cleanupGeneration, provisionGeneration, type Provisioners } from '../../../runtime/generation/provision.ts';
import { PlanStore } from '../../../runtime/generation/plan-store.ts';
import { forwardProvisioner } from '../../../runtime/generation/forward-provisioner.ts';
import { BASE_SETTINGS, compileText } from '../../support/compile-text.ts';
import { issue, makeCa } from '../tls/pki.ts';

const plan = (to: string, extra: Record<string, unknown> = {}, files: Record<string, string> = {}) =>
  compileText(stringify({ ...BASE_SETTINGS, routes: [{ from: 'https://a.example.com', to, allow_public_unauthenticated_access: true, ...extra }] }), 'config.yaml', {}, files).plan!;

type P = { forward: ForwardState };
const list: Provisioners<P> = { forward: forwardProvisioner() };

/** A store of forwarding generations, as `svc run` keeps them, and a reload that builds fully and swaps. */
async function forwarding(first: PlanEnvelope) {
  const store = new PlanStore<P>(await provisionGeneration(list, first, undefined), { retire: (g, next) => void cleanupGeneration(list, g, next) });
  return { store, reload: async (p: PlanEnvelope) => store.swap(await provisionGeneration(list, p, store.current)) };
}

const stores: { store: PlanStore<P> }[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await cleanupGeneration(list, s.store.current, undefined);
});

describe('gRPC health checks', () => {
  it('a plan with one loads the gRPC prober while its generation is built (the upstream set starts its checks)', async () => {
    // Loaded by no import of this file: without the provisioner's load, making the prober is a bug (health/index.ts).
    const f = await forwarding(plan('http://127.0.0.1:9', { health_checks: [{ interval: '1h', timeout: '1s', unhealthy_threshold: 1, healthy_threshold: 1, grpc_health_check: {} }] }));
    stores.push(f);
    expect(f.store.current.forward.pick).toBeDefined();
    expect(f.store.current.plan.body.routes[0]!.healthChecks[0]!.check.kind).toBe('grpc');
  });
});

describe('forward state across reloads', () => {
  it('reuses the pool of an unchanged upstream and closes the pool of a removed one after its requests', async () => {
    const f = await forwarding(plan('http://one:8080'));
    stores.push(f);
    const first = f.store.current.forward.pools[0]![0]! as Pool;
    // A change elsewhere in the route keeps the upstream's pool.
    await f.reload(plan('http://one:8080', { set_request_headers: { 'X-A': '1' } }));
    expect(f.store.current.forward.pools[0]![0]).toBe(first);
    // A request in flight on this generation keeps its pool open through a swap.
    const g = f.store.acquire();
    await f.reload(plan('http://two:8080'));
    const second = f.store.current.forward.pools[0]![0]! as Pool;
    expect(second).not.toBe(first);
    expect(first.closed).toBe(false);
    f.store.release(g);
    await expect.poll(() => first.closed).toBe(true);
    expect(second.closed).toBe(false);
  });

  it('an unchanged plan is a renewal: the forwarding part is taken over as it is', async () => {
    const p = plan('http://one:8080');
    const f = await forwarding(p);
    stores.push(f);
    const g = await provisionGeneration(list, plan('http://one:8080'), f.store.current);
    expect(g.forward).toBe(f.store.current.forward);
    expect(g.index).toBe(f.store.current.index);
  });

  describe('health checks of an https upstream', () => {
    let server: Server | undefined;
    afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

    it('are rebuilt when the CA they verify the upstream with changes, as its pools are', async () => {
      const right = await makeCa('upstream CA');
      const wrong = await makeCa('another CA');
      const leaf = await issue(right, { cn: 'upstream.test', dns: ['upstream.test'] });
      server = createServer({ cert: leaf.certPem, key: leaf.keyPem }, (_req, res) => res.end('ok'));
      await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', () => resolve()));
      const port = (server.address() as { port: number }).port;
      const route = (ca: string) =>
        plan(`https://127.0.0.1:${port}`, { tls_server_name: 'upstream.test', tls_custom_ca: Buffer.from(ca).toString('base64'), health_checks: [{ timeout: '1s', interval: '50ms', unhealthy_threshold: 1, healthy_threshold: 1, http_health_check: { path: '/health' } }] });
      const healthy = (f: { store: PlanStore<P> }) => f.store.current.forward.pick!(f.store.current.index.routes[0] as CompiledRoute, undefined) !== undefined;

      const f = await forwarding(route(wrong.certPem));
      stores.push(f);
      await expect.poll(() => healthy(f), { timeout: 5_000 }).toBe(false);
      // The CA is now the upstream's real CA: new health checks, which pass.
      await f.reload(route(right.certPem));
      await expect.poll(() => healthy(f), { timeout: 5_000 }).toBe(true);
    });
  });
});
