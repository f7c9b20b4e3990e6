/**
 * LEAST_REQUEST, as Envoy does it.
 *
 * - All eligible weights equal: power of `choiceCount` choices: sample `choiceCount` eligible
 *   upstreams uniformly (with replacement) and take the one with the fewest active requests
 *   (the first sampled on ties).
 * - Weights differ: each eligible upstream gets the effective weight
 *   `weight / (active + 1) ^ activeRequestBias` and one is drawn in proportion to it. Envoy feeds
 *   the same effective weights to an EDF scheduler; a weighted draw gives the same long-run shares
 *   without a scheduler to rebuild whenever an active count moves.
 */
import type { Route, Upstream } from '../../../compiler/plan/types.ts';
import type { Random } from '../types.ts';
import { weightedRandom } from './random.ts';
import type { Balancer, BalancerInput } from './types.ts';

/** Envoy's default `least_request_lb_config.choice_count`. */
const DEFAULT_CHOICE_COUNT = 2;
/** Envoy's default `least_request_lb_config.active_request_bias`. */
const DEFAULT_ACTIVE_REQUEST_BIAS = 1;

/** LEAST_REQUEST over `upstreams` with the route's `least_request_lb_config` (null → defaults). */
export function createLeastRequestBalancer(upstreams: readonly Upstream[], config: Route['lb']['leastRequest'], random: Random): Balancer {
  const choiceCount = Math.max(1, config?.choiceCount ?? DEFAULT_CHOICE_COUNT);
  const bias = config?.activeRequestBias ?? DEFAULT_ACTIVE_REQUEST_BIAS;
  const weight = (i: number): number => upstreams[i]?.weight ?? 0;
  return {
    pick(input: BalancerInput): number {
      const { eligible, active } = input;
      if (eligible.length === 1) return eligible[0] as number;
      const first = weight(eligible[0] as number);
      if (eligible.every((i) => weight(i) === first)) {
        let best = -1;
        let bestActive = Infinity;
        for (let c = 0; c < choiceCount; c++) {
          const i = eligible[Math.min(eligible.length - 1, Math.floor(random() * eligible.length))] as number;
          const a = active[i] ?? 0;
          if (a < bestActive) {
            bestActive = a;
            best = i;
          }
        }
        return best;
      }
      const effective = (i: number): number => weight(i) / Math.pow((active[i] ?? 0) + 1, bias);
      return weightedRandom(eligible, effective, random);
    },
  };
}
