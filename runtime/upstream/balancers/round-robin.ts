/**
 * ROUND_ROBIN: smooth weighted round robin (the nginx algorithm). Deterministic: weights 1 and 3
 * give exactly 1:3 over every 4 picks, interleaved (b, b, a, b, …) rather than in bursts.
 */
import type { Upstream } from '../../../compiler/plan/types.ts';
import type { Balancer, BalancerInput } from './types.ts';

/**
 * Smooth weighted round robin over the eligible upstreams. Each pick adds every eligible
 * upstream's weight to its running score, takes the highest score (lowest index on ties) and
 * takes the eligible total off the winner. An upstream that drops out has its score reset, so it
 * comes back without a burst.
 */
export function createRoundRobinBalancer(upstreams: readonly Upstream[]): Balancer {
  const score = new Float64Array(upstreams.length);
  const inSet = new Uint8Array(upstreams.length);
  return {
    pick(input: BalancerInput): number {
      inSet.fill(0);
      let total = 0;
      let best = -1;
      let bestScore = -Infinity;
      for (const i of input.eligible) {
        inSet[i] = 1;
        const w = upstreams[i]?.weight ?? 0;
        total += w;
        const s = (score[i] ?? 0) + w;
        score[i] = s;
        if (s > bestScore) {
          bestScore = s;
          best = i;
        }
      }
      for (let i = 0; i < score.length; i++) if (inSet[i] === 0) score[i] = 0;
      score[best] = bestScore - total;
      return best;
    },
  };
}
