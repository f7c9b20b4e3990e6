/**
 * The contract of a load-balancing policy: given the upstreams that may take the request now,
 * choose one. A balancer never sees unhealthy or ejected upstreams, so it cannot pick one.
 */

/** What a balancer chooses from. */
export interface BalancerInput {
  /**
   * Indices (into the route's upstream list) that may be chosen: ascending, never empty. A hash
   * balancer rebuilds its table when this set changes, as Envoy rebuilds over the healthy hosts.
   */
  readonly eligible: readonly number[];
  /** The request's hash key for RING_HASH and MAGLEV; undefined → they choose at random. */
  readonly hashKey: string | undefined;
  /** In-flight requests per upstream index (LEAST_REQUEST). */
  readonly active: readonly number[];
}

/** A load-balancing policy instance, one per upstream set (it may keep state between picks). */
export interface Balancer {
  /** Chooses one of `input.eligible`; always returns a member of it. */
  pick(input: BalancerInput): number;
}
