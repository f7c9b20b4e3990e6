import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { HealthCheck, Route, Upstream } from '../../../compiler/plan/types.ts';
import { createBalancer } from '../../../runtime/upstream/balancers/index.ts';
import { createUpstreamSet, HealthCheckError, type Prober } from '../../../runtime/upstream/index.ts';
import { healthCheck, manualClock, manualTimers, outlier, route, seeded, upstreams } from './fixtures.ts';

const POLICIES: Route['lb']['policy'][] = ['ROUND_ROBIN', 'LEAST_REQUEST', 'RANDOM', 'RING_HASH', 'MAGLEV'];
const lbFor = (policy: Route['lb']['policy']): Partial<Route['lb']> => (policy === 'MAGLEV' ? { policy, maglev: { tableSize: 251 } } : { policy });

type Op =
  | { op: 'pick'; key: string | undefined; hold: boolean; status: number }
  | { op: 'release'; status: number }
  | { op: 'verdict'; host: number; ok: boolean }
  | { op: 'checks' }
  | { op: 'advance'; ms: number };

const opArb = (hosts: number): fc.Arbitrary<Op> =>
  fc.oneof(
    { weight: 5, arbitrary: fc.record({
        op: fc.constant('pick' as const),
        key: fc.option(fc.string({ maxLength: 6 }), { nil: undefined }),
        hold: fc.boolean(),
        status: fc.constantFrom(200, 500, 503),
      }) },
    { weight: 3, arbitrary: fc.record({ op: fc.constant('release' as const), status: fc.constantFrom(200, 404, 500, 502, 503) }) },
    { weight: 3, arbitrary: fc.record({ op: fc.constant('verdict' as const), host: fc.nat({ max: hosts - 1 }), ok: fc.boolean() }) },
    { weight: 2, arbitrary: fc.constant({ op: 'checks' as const }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 40_000 }) }) },
  );

const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('properties', () => {
  it('every balancer picks a member of the eligible set', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...POLICIES),
        fc.array(fc.integer({ min: 1, max: 5 }), { minLength: 1, maxLength: 6 }),
        fc.array(fc.boolean(), { minLength: 6, maxLength: 6 }),
        fc.array(fc.option(fc.string({ maxLength: 8 }), { nil: undefined }), { minLength: 1, maxLength: 20 }),
        fc.integer(),
        (policy, weights, mask, keys, seed) => {
          const ups = upstreams(weights);
          let eligible = ups.map((_, i) => i).filter((i) => mask[i]);
          if (eligible.length === 0) eligible = [ups.length - 1];
          const balancer = createBalancer({ policy, leastRequest: null, ringHash: null, maglev: policy === 'MAGLEV' ? { tableSize: 251 } : null }, ups, seeded(seed));
          const active = ups.map((_, i) => i % 3);
          for (const hashKey of keys) expect(eligible).toContain(balancer.pick({ eligible, hashKey, active }));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('pick never returns an unhealthy or ejected upstream while a healthy one exists', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...POLICIES),
        fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 5 }),
        fc.integer(),
        fc.array(opArb(5), { maxLength: 80 }),
        async (policy, weights, seed, ops) => {
          const ups = upstreams(weights);
          const timers = manualTimers();
          const clock = manualClock();
          const ok = new Map<number, boolean>();
          const prober = (u: Upstream): Prober => ({
            probe: () => (ok.get(u.port) ?? true ? Promise.resolve() : Promise.reject(new HealthCheckError('SVC_ERR_HEALTH_CHECK_STATUS', 'down'))),
            close: () => {},
          });
          const check: HealthCheck = healthCheck({ kind: 'tcp', send: null, receive: [] }, { unhealthyThreshold: 1, healthyThreshold: 1 });
          const set = createUpstreamSet(
            route({ upstreams: ups, lb: lbFor(policy), healthChecks: [check], outlierDetection: outlier({ consecutive5xx: 2, maxEjectionPercent: 60, baseEjectionTimeMs: 30_000 }) }),
            { timers, now: clock.now, random: seeded(seed), createProber: prober },
          );
          set.start();
          const held: { release(o: { status: number }): void }[] = [];
          try {
            for (const op of ops) {
              if (op.op === 'pick') {
                const before = set.snapshot();
                const servable = before.filter((s) => s.healthy && !s.ejected).map((s) => s.index);
                const graced = before.filter((s) => s.health === 'pending' && !s.ejected).map((s) => s.index);
                const p = set.pick({ hashKey: op.key });
                if (servable.length > 0) expect(servable).toContain(p?.index);
                else if (graced.length > 0) expect(graced).toContain(p?.index);
                else expect(p).toBeUndefined();
                if (p && op.hold) held.push(p);
                else p?.release({ status: op.status });
              } else if (op.op === 'release') held.shift()?.release({ status: op.status });
              else if (op.op === 'verdict') ok.set(9001 + (op.host % ups.length), op.ok);
              else if (op.op === 'checks') {
                timers.fireAll();
                await flush();
              } else clock.advance(op.ms);
            }
            expect(set.snapshot().reduce((n, s) => n + s.active, 0)).toBe(held.length);
          } finally {
            set.stop();
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('RANDOM respects the weights in the limit', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 10 }), { minLength: 2, maxLength: 5 }), fc.integer(), (weights, seed) => {
        const set = createUpstreamSet(route({ upstreams: upstreams(weights), lb: { policy: 'RANDOM' } }), { random: seeded(seed) });
        const n = 20_000;
        const counts = new Array<number>(weights.length).fill(0);
        for (let i = 0; i < n; i++) {
          const p = set.pick({ hashKey: undefined })!;
          counts[p.index] = (counts[p.index] ?? 0) + 1;
          p.release({ status: 200 });
        }
        const total = weights.reduce((a, b) => a + b, 0);
        weights.forEach((w, i) => expect(Math.abs((counts[i] ?? 0) / n - w / total)).toBeLessThan(0.03));
      }),
      { numRuns: 25 },
    );
  });
});
