/**
 * Shared types of the upstream set: what the proxy reports back about a request, the injected
 * clock, timers and randomness, and what the set reports to metrics and logs.
 */
import type { Upstream } from '../../compiler/plan/types.ts';

/** A source of uniform samples in [0, 1). Injected so that tests are deterministic. */
export type Random = () => number;

/** Milliseconds on a monotonic-enough clock (`Date.now` by default). */
export type Clock = () => number;

/** An opaque timer handle, as returned by {@link Timers.setTimeout}. */
export type TimerHandle = unknown;

/** The timer functions the health checks schedule with; injectable for tests. */
export interface Timers {
  setTimeout(callback: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

/**
 * How one forwarded request ended, as the proxy reports it in `release`. `status` is the upstream's
 * HTTP status when a response came; `error` is a transport failure when none did. Neither (e.g. the
 * client went away first) says nothing about the upstream and is ignored by outlier detection.
 */
export interface RequestOutcome {
  readonly status?: number;
  readonly error?: 'connect' | 'timeout' | 'reset';
}

/** Why outlier detection ejected a host. */
export type EjectionReason = 'consecutive_5xx' | 'consecutive_gateway_failure';

/** What a route's upstream set tells its `onChange` listener. */
export type UpstreamEvent =
  | {
      /** Active health checks moved the upstream in or out of service. */
      readonly kind: 'health';
      readonly index: number;
      readonly upstream: Upstream;
      readonly healthy: boolean;
      /** Code of the failed check that made it unhealthy; null when it became healthy. */
      readonly failure: string | null;
    }
  | {
      readonly kind: 'ejected';
      readonly index: number;
      readonly upstream: Upstream;
      readonly reason: EjectionReason;
      /** When the ejection ends (clock milliseconds). */
      readonly untilMs: number;
      /** How many times this host has been ejected so far, this one included. */
      readonly ejections: number;
    }
  | {
      /** The ejection time passed (noticed at the next pick or snapshot, see outlier.ts). */
      readonly kind: 'unejected';
      readonly index: number;
      readonly upstream: Upstream;
    };

/** Active-health-check state of one upstream. */
export type HealthStatus =
  /** Checks pass (or the route has no health checks). */
  | 'healthy'
  /** A check failed `unhealthy_threshold` times in a row, or its first check failed. */
  | 'unhealthy'
  /** Health checks are configured but none has completed yet (startup). */
  | 'pending';

/** One upstream as seen by metrics and logs. */
export interface UpstreamSnapshot {
  readonly index: number;
  readonly url: string;
  /** `host:port` (see `upstreamAddress`). */
  readonly address: string;
  readonly weight: number;
  readonly health: HealthStatus;
  /** `health === 'healthy'`. */
  readonly healthy: boolean;
  readonly ejected: boolean;
  readonly ejectedUntilMs: number | null;
  /** Ejections so far in this plan generation. */
  readonly ejections: number;
  /** Requests picked and not yet released. */
  readonly active: number;
  /** The upstream may be picked now (healthy or in startup grace, and not ejected). */
  readonly eligible: boolean;
  readonly consecutive5xx: number;
  readonly consecutiveGatewayFailures: number;
  /** Code of the latest failed health check (a `HealthCheckError` code), null if none failed. */
  readonly lastCheckFailure: string | null;
}
