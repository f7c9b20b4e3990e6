/**
 * RING_HASH: a consistent-hash ring (ketama), built as Envoy builds it.
 *
 * Every eligible host gets ring points in proportion to its weight: the scale is chosen so that
 * the lightest host gets a whole number of points and the ring has at least `minimumRingSize`
 * points, capped at `maximumRingSize`; points are handed out with running sums so fractional
 * shares stay stable. Point `n` of a host hashes `"<host:port>_<n>"` with the route's hash
 * function. A request's `hashKey` is hashed with the same function and served by the first point
 * at or after it (wrapping).
 *
 * One deliberate difference from Envoy: the scale and every host's points are computed over the
 * route's whole `to` list, and a host that is unhealthy or ejected simply has its points left off.
 * Envoy recomputes the scale over the healthy hosts, which hands every remaining host extra points
 * that take keys from the others; here a host that leaves moves exactly the keys it owned (they
 * spread over the others) and no other key moves.
 */
import type { Route, Upstream } from '../../../compiler/plan/types.ts';
import { murmurHash64A } from '../hash/murmur2.ts';
import { xxHash64 } from '../hash/xxhash64.ts';
import type { Random } from '../types.ts';
import { EligibleCache, hostKeys } from './host-keys.ts';
import { weightedRandom } from './random.ts';
import type { Balancer, BalancerInput } from './types.ts';

/** Envoy's defaults for `ring_hash_lb_config`. */
const DEFAULT_RING_HASH = { minimumRingSize: 1024, maximumRingSize: 8_388_608, hashFunction: 'XX_HASH' } as const;

/** A built ring: point hashes ascending, and the upstream index owning each point. */
export interface Ring {
  readonly hashes: BigUint64Array;
  readonly hosts: Int32Array;
}

/** The 64-bit hash function named by `ring_hash_lb_config.hash_function`. */
function ringHashFunction(name: 'XX_HASH' | 'MURMUR_HASH_2'): (key: string) => bigint {
  return name === 'MURMUR_HASH_2' ? (key) => murmurHash64A(key) : (key) => xxHash64(key);
}

/**
 * Builds the ring: points for every host of `keys`/`weights` as if all were present, keeping only
 * those of `eligible` (indices). Pure: the same inputs give the same ring.
 */
export function buildRing(
  keys: readonly string[],
  weights: readonly number[],
  eligible: readonly number[],
  minimumRingSize: number,
  maximumRingSize: number,
  hash: (key: string) => bigint,
): Ring {
  let total = 0;
  for (const w of weights) total += w;
  let minNormalized = 1;
  for (const w of weights) minNormalized = Math.min(minNormalized, w / total);
  const scale = Math.min(Math.ceil(minNormalized * minimumRingSize) / minNormalized, maximumRingSize);
  const keep = new Set(eligible);
  const points: { hash: bigint; host: number }[] = [];
  let current = 0;
  let target = 0;
  weights.forEach((w, i) => {
    target += scale * (w / total);
    const first = current;
    current = Math.max(current, Math.ceil(target));
    if (!keep.has(i)) return;
    for (let n = 0; n < current - first; n++) points.push({ hash: hash(`${keys[i] ?? ''}_${n}`), host: i });
  });
  points.sort((a, b) => (a.hash < b.hash ? -1 : a.hash > b.hash ? 1 : 0));
  const hashes = new BigUint64Array(points.length);
  const hosts = new Int32Array(points.length);
  points.forEach((p, k) => {
    hashes[k] = p.hash;
    hosts[k] = p.host;
  });
  return { hashes, hosts };
}

/** The upstream owning the first point at or after `h`, wrapping to the first point. */
function ringLookup(ring: Ring, h: bigint): number {
  let lo = 0;
  let hi = ring.hashes.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((ring.hashes[mid] as bigint) < h) lo = mid + 1;
    else hi = mid;
  }
  return ring.hosts[lo === ring.hashes.length ? 0 : lo] as number;
}

/** RING_HASH over `upstreams` with the route's `ring_hash_lb_config` (null → Envoy's defaults). */
export function createRingHashBalancer(upstreams: readonly Upstream[], config: Route['lb']['ringHash'], random: Random): Balancer {
  const { minimumRingSize, maximumRingSize, hashFunction } = config ?? DEFAULT_RING_HASH;
  const hash = ringHashFunction(hashFunction);
  const keys = hostKeys(upstreams);
  const weights = upstreams.map((u) => u.weight);
  const rings = new EligibleCache((eligible) => buildRing(keys, weights, eligible, minimumRingSize, maximumRingSize, hash));
  return {
    pick(input: BalancerInput): number {
      if (input.hashKey === undefined) return weightedRandom(input.eligible, (i) => weights[i] ?? 0, random);
      return ringLookup(rings.get(input.eligible), hash(input.hashKey));
    },
  };
}
