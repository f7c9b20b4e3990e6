/** RANDOM: each eligible upstream with probability weight / total eligible weight. */
import type { Upstream } from '../../../compiler/plan/types.ts';
import type { Random } from '../types.ts';
import type { Balancer, BalancerInput } from './types.ts';

/**
 * Picks one of `eligible` at random, index `i` with probability `weights[i]` / the sum over
 * `eligible`, using one sample of `random`.
 */
export function weightedRandom(eligible: readonly number[], weights: (i: number) => number, random: Random): number {
  let total = 0;
  for (const i of eligible) total += weights(i);
  let point = random() * total;
  for (const i of eligible) {
    point -= weights(i);
    if (point < 0) return i;
  }
  // Rounding can leave `point` a hair above zero after the last subtraction.
  return eligible[eligible.length - 1] as number;
}

/** RANDOM with weights: stateless, one `random()` sample per pick. */
export function createRandomBalancer(upstreams: readonly Upstream[], random: Random): Balancer {
  const weight = (i: number): number => upstreams[i]?.weight ?? 0;
  return {
    pick(input: BalancerInput): number {
      return weightedRandom(input.eligible, weight, random);
    },
  };
}
