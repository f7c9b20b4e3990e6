import { describe, expect, it } from 'vitest';
import type { Route, Upstream } from '../../../compiler/plan/types.ts';
import { createBalancer } from '../../../runtime/upstream/balancers/index.ts';
import { createLeastRequestBalancer } from '../../../runtime/upstream/balancers/least-request.ts';
import { buildMaglevTable, isPrime } from '../../../runtime/upstream/balancers/maglev.ts';
import { buildRing } from '../../../runtime/upstream/balancers/ring-hash.ts';
import { hostKeys } from '../../../runtime/upstream/balancers/host-keys.ts';
import { createUpstreamSet } from '../../../runtime/upstream/index.ts';
import { route, seeded, tally, upstreams } from './fixtures.ts';

const all = (n: number): number[] => Array.from({ length: n }, (_, i) => i);
const lb = (policy: Route['lb']['policy'], extra: Partial<Route['lb']> = {}): Route['lb'] => ({ policy, leastRequest: null, ringHash: null, maglev: null, ...extra });

function picker(policy: Route['lb']['policy'], ups: Upstream[], eligible: number[], extra: Partial<Route['lb']> = {}, seed = 1) {
  const balancer = createBalancer(lb(policy, extra), ups, seeded(seed));
  const active = new Array<number>(ups.length).fill(0);
  return (hashKey: string | undefined): number => balancer.pick({ eligible, hashKey, active });
}

describe('ROUND_ROBIN (smooth weighted)', () => {
  it('gives exactly 1:3 over 400 picks with weights 1 and 3, interleaved', () => {
    const set = createUpstreamSet(route({ upstreams: upstreams([1, 3]) }));
    const order = Array.from({ length: 400 }, () => set.pick({ hashKey: undefined })!.index);
    expect(order.filter((i) => i === 0)).toHaveLength(100);
    expect(order.filter((i) => i === 1)).toHaveLength(300);
    // Smooth: every aligned window of 4 picks holds exactly one pick of the light upstream.
    for (let w = 0; w < 400; w += 4) expect(order.slice(w, w + 4).filter((i) => i === 0)).toHaveLength(1);
  });

  it('cycles in list order with equal weights', () => {
    const next = picker('ROUND_ROBIN', upstreams([1, 1, 1]), [0, 1, 2]);
    expect(Array.from({ length: 7 }, () => next(undefined))).toEqual([0, 1, 2, 0, 1, 2, 0]);
  });

  it('is exact for any weights over one full cycle', () => {
    const weights = [5, 1, 2, 7];
    const next = picker('ROUND_ROBIN', upstreams(weights), all(4));
    expect(tally(() => next(undefined), 15 * 10, 4)).toEqual(weights.map((w) => w * 10));
  });

  it('spreads over the eligible upstreams only', () => {
    const next = picker('ROUND_ROBIN', upstreams([1, 1, 1, 1]), [1, 3]);
    expect(tally(() => next(undefined), 100, 4)).toEqual([0, 50, 0, 50]);
  });
});

describe('RANDOM (weighted)', () => {
  it('follows the weights in the limit', () => {
    const next = picker('RANDOM', upstreams([1, 3]), [0, 1]);
    const counts = tally(() => next(undefined), 20_000, 2);
    expect((counts[0] ?? 0) / 20_000).toBeCloseTo(0.25, 1);
    expect(Math.abs((counts[0] ?? 0) / 20_000 - 0.25)).toBeLessThan(0.02);
  });

  it('is deterministic under an injected random', () => {
    const a = picker('RANDOM', upstreams([1, 2, 3]), [0, 1, 2], {}, 42);
    const b = picker('RANDOM', upstreams([1, 2, 3]), [0, 1, 2], {}, 42);
    expect(Array.from({ length: 50 }, () => a(undefined))).toEqual(Array.from({ length: 50 }, () => b(undefined)));
  });
});

describe('LEAST_REQUEST', () => {
  it('prefers the idle upstream (power of two choices, equal weights)', () => {
    const ups = upstreams([1, 1]);
    const balancer = createLeastRequestBalancer(ups, null, seeded(7));
    const counts = tally(() => balancer.pick({ eligible: [0, 1], hashKey: undefined, active: [5, 0] }), 4000, 2);
    // The busy one wins only when both samples land on it: 1/4 of the time.
    expect((counts[1] ?? 0) / 4000).toBeGreaterThan(0.7);
    expect((counts[0] ?? 0) / 4000).toBeGreaterThan(0.2);
  });

  it('with many choices nearly always takes the least loaded', () => {
    const balancer = createLeastRequestBalancer(upstreams([1, 1, 1]), { choiceCount: 12, activeRequestBias: 1 }, seeded(3));
    const counts = tally(() => balancer.pick({ eligible: [0, 1, 2], hashKey: undefined, active: [4, 1, 9] }), 1000, 3);
    expect(counts[1]).toBeGreaterThan(980);
  });

  it('with unequal weights uses weight / (active + 1) ^ bias', () => {
    const ups = upstreams([1, 2]);
    const n = 20_000;
    const idle = createLeastRequestBalancer(ups, { choiceCount: 2, activeRequestBias: 1 }, seeded(11));
    const idleShare = (tally(() => idle.pick({ eligible: [0, 1], hashKey: undefined, active: [0, 0] }), n, 2)[1] ?? 0) / n;
    expect(Math.abs(idleShare - 2 / 3)).toBeLessThan(0.02);
    // Upstream 1 has 5 in flight: 2 / 6 against 1 / 1 → a quarter of the picks.
    const busy = createLeastRequestBalancer(ups, { choiceCount: 2, activeRequestBias: 1 }, seeded(11));
    const busyShare = (tally(() => busy.pick({ eligible: [0, 1], hashKey: undefined, active: [0, 5] }), n, 2)[1] ?? 0) / n;
    expect(Math.abs(busyShare - 0.25)).toBeLessThan(0.02);
    // Bias 0: active requests are ignored, weights alone decide.
    const unbiased = createLeastRequestBalancer(ups, { choiceCount: 2, activeRequestBias: 0 }, seeded(11));
    const unbiasedShare = (tally(() => unbiased.pick({ eligible: [0, 1], hashKey: undefined, active: [0, 5] }), n, 2)[1] ?? 0) / n;
    expect(Math.abs(unbiasedShare - 2 / 3)).toBeLessThan(0.02);
  });

  it('counts in-flight requests of the set (picked, not yet released)', () => {
    const set = createUpstreamSet(route({ upstreams: upstreams([1, 1]), lb: { policy: 'LEAST_REQUEST', leastRequest: { choiceCount: 8, activeRequestBias: 1 } } }), { random: seeded(5) });
    const held = Array.from({ length: 6 }, () => set.pick({ hashKey: undefined })!);
    const perHost = [0, 1].map((i) => held.filter((p) => p.index === i).length);
    // Each new pick goes to the less loaded host, so the load stays balanced.
    expect(Math.abs((perHost[0] ?? 0) - (perHost[1] ?? 0))).toBeLessThanOrEqual(1);
    expect(set.snapshot().map((s) => s.active)).toEqual(perHost);
    for (const p of held) p.release({ status: 200 });
    expect(set.snapshot().map((s) => s.active)).toEqual([0, 0]);
  });
});

const KEYS = Array.from({ length: 4000 }, (_, i) => `user-${i}`);

describe.each([
  ['RING_HASH XX_HASH', 'RING_HASH', { ringHash: { minimumRingSize: 1024, maximumRingSize: 8_388_608, hashFunction: 'XX_HASH' } }],
  ['RING_HASH MURMUR_HASH_2', 'RING_HASH', { ringHash: { minimumRingSize: 1024, maximumRingSize: 8_388_608, hashFunction: 'MURMUR_HASH_2' } }],
  ['RING_HASH defaults', 'RING_HASH', {}],
  ['MAGLEV', 'MAGLEV', { maglev: { tableSize: 65_537 } }],
  ['MAGLEV defaults', 'MAGLEV', {}],
] as const)('%s', (_name, policy, extra) => {
  it('maps the same key to the same upstream, every time and in a new instance', () => {
    const a = picker(policy, upstreams([1, 1, 1, 1]), all(4), extra, 1);
    const b = picker(policy, upstreams([1, 1, 1, 1]), all(4), extra, 2);
    const first = KEYS.map((k) => a(k));
    expect(KEYS.map((k) => a(k))).toEqual(first);
    expect(KEYS.map((k) => b(k))).toEqual(first);
  });

  it('spreads keys roughly evenly over equal weights', () => {
    const next = picker(policy, upstreams([1, 1, 1, 1]), all(4), extra);
    for (const c of tally((i) => next(KEYS[i]), KEYS.length, 4)) expect(Math.abs(c / KEYS.length - 0.25)).toBeLessThan(0.06);
  });

  it('moves only (RING_HASH) or mostly only (MAGLEV) the keys of an upstream that leaves', () => {
    const before = picker(policy, upstreams([1, 1, 1, 1]), all(4), extra);
    const after = picker(policy, upstreams([1, 1, 1, 1]), [0, 1, 3], extra);
    let stayed = 0;
    let others = 0;
    for (const k of KEYS) {
      const was = before(k);
      const now = after(k);
      expect(now).not.toBe(2);
      if (was !== 2) {
        others++;
        if (now === was) stayed++;
      }
    }
    // A ring keeps every other host's points, so no other key moves; Maglev moves a few.
    if (policy === 'RING_HASH') expect(stayed).toBe(others);
    else expect(stayed / others).toBeGreaterThan(0.9);
  });

  it('shifts share with the weights', () => {
    const next = picker(policy, upstreams([1, 1, 2]), all(3), extra);
    const counts = tally((i) => next(KEYS[i]), KEYS.length, 3);
    expect(Math.abs((counts[2] ?? 0) / KEYS.length - 0.5)).toBeLessThan(0.08);
    expect(Math.abs((counts[0] ?? 0) / KEYS.length - 0.25)).toBeLessThan(0.08);
  });

  it('falls back to weighted random without a hash key', () => {
    const next = picker(policy, upstreams([1, 3]), [0, 1], extra, 9);
    const counts = tally(() => next(undefined), 8000, 2);
    expect(Math.abs((counts[1] ?? 0) / 8000 - 0.75)).toBeLessThan(0.03);
  });
});

describe('ring construction', () => {
  it('gives the lightest host a whole number of points and at least the minimum ring size', () => {
    const ups = upstreams([1, 3]);
    const ring = buildRing(hostKeys(ups), [1, 3], [0, 1], 1024, 8_388_608, () => 0n);
    expect(ring.hashes.length).toBe(1024);
    expect(Array.from(ring.hosts).filter((h) => h === 0)).toHaveLength(256);
  });

  it('is capped at the maximum ring size', () => {
    const ring = buildRing(['a', 'b'], [1, 1000], [0, 1], 1024, 2000, (k) => BigInt(k.length));
    expect(ring.hashes.length).toBeLessThanOrEqual(2001);
    expect(ring.hashes.length).toBeGreaterThan(1990);
  });

  it('keeps two list entries for the same address apart', () => {
    const dup = [upstreams([1])[0]!, upstreams([1])[0]!];
    expect(hostKeys(dup)).toEqual(['10.0.0.1:9001', '10.0.0.1:9001#2']);
  });
});

describe('Maglev table', () => {
  it('gives equal-weight hosts table shares that differ by at most one slot', () => {
    const table = buildMaglevTable(['a:1', 'b:1', 'c:1'], [1, 1, 1], [0, 1, 2], 65_537);
    const counts = tally((i) => table[i], table.length, 3);
    expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(65_537);
  });

  it('gives slots in proportion to weight', () => {
    const table = buildMaglevTable(['a:1', 'b:1'], [1, 3], [0, 1], 65_537);
    const counts = tally((i) => table[i], table.length, 2);
    expect(Math.abs((counts[0] ?? 0) / 65_537 - 0.25)).toBeLessThan(0.001);
  });

  it('does not depend on the order of the host list', () => {
    const t1 = buildMaglevTable(['a:1', 'b:1', 'c:1'], [1, 2, 1], [0, 1, 2], 251);
    const t2 = buildMaglevTable(['c:1', 'b:1', 'a:1'], [1, 2, 1], [0, 1, 2], 251);
    const names1 = Array.from(t1, (i) => ['a', 'b', 'c'][i]);
    const names2 = Array.from(t2, (i) => ['c', 'b', 'a'][i]);
    expect(names1).toEqual(names2);
  });

  it('knows its primes', () => {
    expect([2, 3, 251, 65_537, 5_000_011].every(isPrime)).toBe(true);
    expect([0, 1, 4, 65_536, 65_535, 1.5].some(isPrime)).toBe(false);
  });
});
