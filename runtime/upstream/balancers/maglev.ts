/**
 * MAGLEV: the lookup table of Eisenbud et al., "Maglev: A Fast and Reliable Software Network Load
 * Balancer" (NSDI 2016), §3.4 pseudocode listing 1, with weights as Envoy adds them.
 *
 * Each eligible host has a permutation of the table's slots, `(offset + next · skip) mod M` with
 * `offset = xxHash64(key, 0) mod M` and `skip = xxHash64(key, 1) mod (M − 1) + 1` (M prime, so
 * every permutation visits every slot). Hosts take turns claiming their next free slot until the
 * table is full; a host of weight w takes a turn in proportion to w / max weight. A request's
 * `hashKey` is served by slot `xxHash64(hashKey) mod M`. Hosts are visited in key order, so the
 * table does not depend on the order of the `to` list. Rebuilt over the eligible hosts when that
 * set changes: most keys stay where they were (the paper's minimal disruption).
 */
import type { Route, Upstream } from '../../../compiler/plan/types.ts';
import { xxHash64 } from '../hash/xxhash64.ts';
import type { Random } from '../types.ts';
import { EligibleCache, hostKeys } from './host-keys.ts';
import { weightedRandom } from './random.ts';
import type { Balancer, BalancerInput } from './types.ts';

/** Envoy's default `maglev_lb_config.table_size` (a prime). */
const DEFAULT_MAGLEV_TABLE_SIZE = 65_537;
/** Envoy's upper bound for `table_size`. */
export const MAX_MAGLEV_TABLE_SIZE = 5_000_011;

/**
 * Builds the lookup table of size `tableSize` (a prime) over `eligible`: slot → upstream index.
 * `weights` are integers ≥ 1. Pure.
 */
export function buildMaglevTable(keys: readonly string[], weights: readonly number[], eligible: readonly number[], tableSize: number): Int32Array {
  const m = BigInt(tableSize);
  const entries = eligible
    .map((host) => {
      const key = keys[host] ?? '';
      return {
        host,
        key,
        weight: weights[host] ?? 0,
        offset: Number(xxHash64(key, 0n) % m),
        skip: Number(xxHash64(key, 1n) % (m - 1n)) + 1,
        next: 0,
        target: 0,
      };
    })
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.host - b.host));
  let maxWeight = 0;
  for (const e of entries) maxWeight = Math.max(maxWeight, e.weight);
  const table = new Int32Array(tableSize).fill(-1);
  let filled = 0;
  for (let iteration = 1; filled < tableSize; iteration++) {
    for (const e of entries) {
      if (filled >= tableSize) break;
      // A host of weight maxWeight / k takes a turn every k iterations (integer arithmetic: exact).
      if (iteration * e.weight < e.target) continue;
      e.target += maxWeight;
      let slot = (e.offset + e.skip * (e.next % tableSize)) % tableSize;
      while (table[slot] !== -1) {
        e.next++;
        slot = (e.offset + e.skip * (e.next % tableSize)) % tableSize;
      }
      table[slot] = e.host;
      e.next++;
      filled++;
    }
  }
  return table;
}

/** The upstream for `hashKey` in a built table. */
function maglevLookup(table: Int32Array, hashKey: string): number {
  return table[Number(xxHash64(hashKey) % BigInt(table.length))] as number;
}

/** MAGLEV over `upstreams` with the route's `maglev_lb_config` (null → table size 65537). */
export function createMaglevBalancer(upstreams: readonly Upstream[], config: Route['lb']['maglev'], random: Random): Balancer {
  const tableSize = config?.tableSize ?? DEFAULT_MAGLEV_TABLE_SIZE;
  const keys = hostKeys(upstreams);
  const weights = upstreams.map((u) => u.weight);
  const tables = new EligibleCache((eligible) => buildMaglevTable(keys, weights, eligible, tableSize));
  return {
    pick(input: BalancerInput): number {
      if (input.hashKey === undefined) return weightedRandom(input.eligible, (i) => weights[i] ?? 0, random);
      return maglevLookup(tables.get(input.eligible), input.hashKey);
    },
  };
}

/** Whether `n` is prime (trial division; table sizes are at most a few million). */
export function isPrime(n: number): boolean {
  if (!Number.isInteger(n) || n < 2) return false;
  if (n % 2 === 0) return n === 2;
  for (let d = 3; d * d <= n; d += 2) if (n % d === 0) return false;
  return true;
}
