/** The balancer for a route's `lb_policy`. */
import type { Route, Upstream } from '../../../compiler/plan/types.ts';
import type { Random } from '../types.ts';
import { createLeastRequestBalancer } from './least-request.ts';
import { createMaglevBalancer } from './maglev.ts';
import { createRandomBalancer } from './random.ts';
import { createRingHashBalancer } from './ring-hash.ts';
import { createRoundRobinBalancer } from './round-robin.ts';
import type { Balancer } from './types.ts';

export type { Balancer, BalancerInput } from './types.ts';

/** A fresh balancer for `lb` over `upstreams`; `random` drives every random choice it makes. */
export function createBalancer(lb: Route['lb'], upstreams: readonly Upstream[], random: Random): Balancer {
  switch (lb.policy) {
    case 'ROUND_ROBIN':
      return createRoundRobinBalancer(upstreams);
    case 'LEAST_REQUEST':
      return createLeastRequestBalancer(upstreams, lb.leastRequest, random);
    case 'RANDOM':
      return createRandomBalancer(upstreams, random);
    case 'RING_HASH':
      return createRingHashBalancer(upstreams, lb.ringHash, random);
    case 'MAGLEV':
      return createMaglevBalancer(upstreams, lb.maglev, random);
  }
}
