/**
 * Outlier detection (`outlier_detection`), Envoy's consecutive-error detectors.
 *
 * - Every released request reports an outcome. A transport error counts as the status Envoy maps
 *   it to (connect failure → 503, timeout → 504, reset → 503), so it is both a 5xx and a gateway
 *   failure. An outcome with neither status nor error says nothing and changes nothing.
 * - `consecutive5xx`: 5xx outcomes in a row; any non-5xx resets it. When it reaches the
 *   threshold it resets, and the host is ejected with probability `enforcingConsecutive5xx` %.
 * - `consecutiveGatewayFailure` (null: off): 502/503/504 in a row; any other status resets it.
 *   The plan has no enforcing percentage for it, so configuring it means enforcing it (100 %).
 * - Ejection cap (Envoy ≥ 1.27 without `always_eject_one_host`): a host is ejected only if
 *   (ejected + 1) / hosts ≤ `maxEjectionPercent` %. With the default 10 % a route needs at least
 *   ten upstreams before anything is ejected; set `max_ejection_percent` for small routes.
 * - Ejection time: `baseEjectionTimeMs` × the host's backoff multiplier, capped at
 *   `maxEjectionTimeMs`. The multiplier grows by one per ejection (while below
 *   max/base + 1) and shrinks by one for every `intervalMs` tick the host stays in service once
 *   it has been back for `baseEjectionTimeMs` (Envoy's decay).
 * - No timer: expiry and decay are computed from the injected clock when the set next looks
 *   (a pick, a release, a snapshot). Envoy returns hosts on its interval tick; here a host returns
 *   exactly when its time is up, which is deterministic under an injected clock.
 * - Outcomes of requests that finish while their host is ejected still count, but cannot eject
 *   it again until it has returned (Envoy ignores detections for an ejected host).
 */
import type { OutlierDetection } from '../../compiler/plan/types.ts';
import type { EjectionReason, Random, RequestOutcome } from './types.ts';

/** The per-host state of the detector, for snapshots. */
export interface HostOutlierState {
  readonly consecutive5xx: number;
  readonly consecutiveGatewayFailures: number;
  readonly ejected: boolean;
  readonly ejectedUntilMs: number | null;
  readonly ejections: number;
  readonly backoff: number;
}

/** What the detector tells its owner. */
export interface OutlierListener {
  onEject(index: number, reason: EjectionReason, untilMs: number, ejections: number): void;
  onUneject(index: number): void;
}

interface Host {
  consecutive5xx: number;
  consecutiveGatewayFailures: number;
  ejectedUntilMs: number | null;
  ejections: number;
  backoff: number;
  /** When the host last came back (its ejection end), for the backoff decay. */
  returnedAtMs: number | null;
}

/** The HTTP status Envoy maps a transport error to for outlier detection. */
export function outcomeStatus(outcome: RequestOutcome): number | undefined {
  if (outcome.status !== undefined) return outcome.status;
  switch (outcome.error) {
    case 'connect':
    case 'reset':
      return 503;
    case 'timeout':
      return 504;
    case undefined:
      return undefined;
  }
}

function isGatewayFailure(status: number): boolean {
  return status === 502 || status === 503 || status === 504;
}

/** Consecutive-error outlier detection over `hosts` upstreams; see the module comment. */
export class OutlierDetector {
  private readonly hosts: Host[];

  constructor(
    private readonly config: OutlierDetection,
    hostCount: number,
    private readonly random: Random,
    private readonly listener: OutlierListener,
  ) {
    this.hosts = Array.from({ length: hostCount }, () => ({
      consecutive5xx: 0,
      consecutiveGatewayFailures: 0,
      ejectedUntilMs: null,
      ejections: 0,
      backoff: 0,
      returnedAtMs: null,
    }));
  }

  /** Counts one request's outcome on host `index` at time `now`; may eject the host. */
  record(index: number, outcome: RequestOutcome, now: number): void {
    const host = this.hosts[index];
    const status = outcomeStatus(outcome);
    if (!host || status === undefined) return;
    this.refresh(now);
    if (status < 500 || status > 599) {
      host.consecutive5xx = 0;
      host.consecutiveGatewayFailures = 0;
      return;
    }
    const gatewayThreshold = this.config.consecutiveGatewayFailure;
    if (isGatewayFailure(status)) {
      host.consecutiveGatewayFailures++;
      if (gatewayThreshold !== null && gatewayThreshold > 0 && host.consecutiveGatewayFailures === gatewayThreshold) {
        host.consecutiveGatewayFailures = 0;
        this.eject(index, 'consecutive_gateway_failure', now);
      }
    } else host.consecutiveGatewayFailures = 0;
    host.consecutive5xx++;
    if (this.config.consecutive5xx > 0 && host.consecutive5xx === this.config.consecutive5xx) {
      host.consecutive5xx = 0;
      if (this.random() * 100 < this.config.enforcingConsecutive5xx) this.eject(index, 'consecutive_5xx', now);
    }
  }

  /** Whether host `index` is ejected at `now` (pure: `refresh` emits the returns). */
  isEjected(index: number, now: number): boolean {
    const until = this.hosts[index]?.ejectedUntilMs ?? null;
    return until !== null && now < until;
  }

  /** Returns every host whose ejection has ended by `now`. */
  refresh(now: number): void {
    this.hosts.forEach((host, index) => {
      if (host.ejectedUntilMs !== null && now >= host.ejectedUntilMs) {
        host.returnedAtMs = host.ejectedUntilMs;
        host.ejectedUntilMs = null;
        this.listener.onUneject(index);
      }
    });
  }

  /** Host `index`'s counters and ejection state at `now`. */
  state(index: number, now: number): HostOutlierState {
    this.refresh(now);
    const h = this.hosts[index];
    if (!h) throw new RangeError(`no upstream ${index}`);
    return {
      consecutive5xx: h.consecutive5xx,
      consecutiveGatewayFailures: h.consecutiveGatewayFailures,
      ejected: h.ejectedUntilMs !== null,
      ejectedUntilMs: h.ejectedUntilMs,
      ejections: h.ejections,
      backoff: this.decayedBackoff(h, now),
    };
  }

  private eject(index: number, reason: EjectionReason, now: number): void {
    const host = this.hosts[index];
    if (!host || host.ejectedUntilMs !== null) return;
    const ejectedNow = this.hosts.filter((h) => h.ejectedUntilMs !== null).length;
    // INVARIANT (max-ejection-percent): never more than max_ejection_percent of hosts ejected.
    if (((ejectedNow + 1) * 100) / this.hosts.length > this.config.maxEjectionPercent) return;
    const base = this.config.baseEjectionTimeMs;
    const max = this.config.maxEjectionTimeMs;
    host.backoff = this.decayedBackoff(host, now);
    if (host.backoff * base < max + base) host.backoff++;
    host.ejections++;
    host.returnedAtMs = null;
    host.ejectedUntilMs = now + Math.min(base * host.backoff, Math.max(max, base));
    this.listener.onEject(index, reason, host.ejectedUntilMs, host.ejections);
  }

  /** The backoff multiplier after the decay ticks between the host's return and `now`. */
  private decayedBackoff(host: Host, now: number): number {
    if (host.returnedAtMs === null || host.backoff === 0) return host.backoff;
    const inService = now - host.returnedAtMs - this.config.baseEjectionTimeMs;
    if (inService < 0) return host.backoff;
    const interval = Math.max(1, this.config.intervalMs);
    return Math.max(0, host.backoff - (Math.floor(inService / interval) + 1));
  }
}
