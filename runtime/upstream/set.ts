/**
 * The upstream set of one forward route for one plan generation: which upstream takes the next
 * request (`pick`), how requests ended (`release`), active health checks (`start`/`stop`) and
 * outlier ejection. Built once per route per plan generation; the plan is only read.
 *
 * Eligibility. An upstream may be picked when its active health checks pass (always, without
 * `health_checks`) and outlier detection has not ejected it. The balancer only ever sees eligible
 * upstreams, so a pick never lands on an unhealthy or ejected one.
 *
 * Startup (our choice, Envoy-like). With health checks, an upstream is `pending` until its first
 * check completes and is not counted as healthy (Envoy starts hosts as failed until the first
 * check passes). To keep a freshly loaded route from refusing everything for the first check
 * interval, there is a startup grace: when no upstream is eligible, pending upstreams that are
 * not ejected are used instead. An upstream whose check has failed never gets grace traffic; the
 * grace ends for each upstream with its first verdict.
 *
 * No panic mode (our choice, unlike Envoy's 50 % panic threshold): apart from the startup grace,
 * when every upstream is unhealthy or ejected, `pick` returns undefined and the proxy answers 503
 * "no healthy upstream". Failing closed keeps traffic off hosts known to be broken.
 */
import type { HealthCheck, Route, Upstream } from '../../compiler/plan/types.ts';
import { upstreamAddress } from './address.ts';
import { createBalancer } from './balancers/index.ts';
import { isPrime, MAX_MAGLEV_TABLE_SIZE } from './balancers/maglev.ts';
import { UpstreamConfigError } from './errors.ts';
import { createProber, type ProbeTls, type Prober } from './health/index.ts';
import { HealthMonitor } from './health/monitor.ts';
import { OutlierDetector } from './outlier.ts';
import type { Clock, Random, RequestOutcome, Timers, UpstreamEvent, UpstreamSnapshot } from './types.ts';

/** Options of {@link createUpstreamSet}; every one has a production default. */
export interface UpstreamSetOptions {
  /** Clock for outlier ejection times (default `Date.now`). */
  readonly now?: Clock;
  /** Timers for health checks (default: global timers, unref'd so they never hold the process). */
  readonly timers?: Timers;
  /** Randomness for balancing, jitter and enforcement percentages (default `Math.random`). */
  readonly random?: Random;
  /**
   * Told about health transitions, ejections and returns. Must not throw (an exception is caught
   * and reported with `process.emitWarning`).
   */
  readonly onChange?: (event: UpstreamEvent) => void;
  /**
   * TLS for health checks of `https` upstreams, resolved from the route's `tls_*` fields by the
   * caller (files read, secrets resolved). Default: `tls_skip_verify` and `tls_server_name` from
   * the route, and an inline `tls_custom_ca`.
   */
  readonly tls?: ProbeTls;
  /**
   * Builds the prober of one health check of one upstream (default: the HTTP, TCP or gRPC probe
   * for the check's kind). For tests and for callers with their own transport.
   */
  readonly createProber?: (upstream: Upstream, check: HealthCheck['check']) => Prober;
}

/** One request's upstream, from {@link UpstreamSet.pick}. */
export interface UpstreamPick {
  /** Position of the upstream in the route's `to` list. */
  readonly index: number;
  readonly upstream: Upstream;
  /**
   * Reports how the request ended. Call exactly once, when the request is over; later calls are
   * ignored. Ends the request's share of the upstream's active count (LEAST_REQUEST) and feeds
   * outlier detection.
   */
  release(outcome?: RequestOutcome): void;
}

/** What the proxy hands a request: its hash key for RING_HASH and MAGLEV, if any. */
export interface PickRequest {
  readonly hashKey: string | undefined;
}

/** The upstream set of a forward route; see the module comment. */
export interface UpstreamSet {
  readonly route: Route;
  readonly upstreams: readonly Upstream[];
  /**
   * The upstream for the next request per the route's `lb_policy`, counted as active until its
   * `release`; undefined when no upstream is eligible (the proxy answers 503).
   */
  pick(request: PickRequest): UpstreamPick | undefined;
  /** Begins active health checks (no-op without `health_checks`, after `stop`, or if started). */
  start(): void;
  /** Ends health checks for good (timers cleared, sockets and channels closed). Picks still work. */
  stop(): void;
  /** Every upstream's state now, in `to` order, for metrics and logs. */
  snapshot(): readonly UpstreamSnapshot[];
}

const defaultTimers: Timers = {
  setTimeout(callback, ms) {
    const t = setTimeout(callback, ms);
    t.unref();
    return t;
  },
  clearTimeout(handle) {
    clearTimeout(handle as ReturnType<typeof setTimeout>);
  },
};

/**
 * Builds the upstream set of `route` (a forward route). Throws `UpstreamConfigError` for a
 * redirect route (`SVC_ERR_UPSTREAM_NOT_FORWARD`) or settings the runtime cannot use
 * (`SVC_ERR_UPSTREAM_CONFIG`: a weight below 1, a Maglev table size that is not a prime up to
 * 5000011, ring sizes out of order, a TCP payload that is not hex). Health checks wait for
 * `start()`.
 */
export function createUpstreamSet(route: Route, options: UpstreamSetOptions = {}): UpstreamSet {
  if (route.action.kind !== 'forward') {
    throw new UpstreamConfigError('SVC_ERR_UPSTREAM_NOT_FORWARD', `route \`${route.id}\` redirects; it has no upstreams`);
  }
  const upstreams = route.action.upstreams;
  validate(route, upstreams);
  const now = options.now ?? Date.now;
  const random = options.random ?? Math.random;
  const timers = options.timers ?? defaultTimers;
  const tls = options.tls ?? routeTls(route);
  const emit = (event: UpstreamEvent): void => {
    if (!options.onChange) return;
    try {
      options.onChange(event);
    } catch (err) {
      process.emitWarning(`upstream onChange listener threw: ${String(err)}`, 'UpstreamSetWarning');
    }
  };
  const upstreamAt = (index: number): Upstream => upstreams[index] as Upstream;

  const balancer = createBalancer(route.lb, upstreams, random);
  const active = new Array<number>(upstreams.length).fill(0);
  const monitor =
    route.healthChecks.length > 0
      ? new HealthMonitor(upstreams, route.healthChecks, {
          timers,
          random,
          createProber: options.createProber ?? ((u, check) => createProber(u, check, tls)),
          onTransition: (index, healthy, failure) => emit({ kind: 'health', index, upstream: upstreamAt(index), healthy, failure }),
        })
      : undefined;
  const outlier = route.outlierDetection
    ? new OutlierDetector(route.outlierDetection, upstreams.length, random, {
        onEject: (index, reason, untilMs, ejections) => emit({ kind: 'ejected', index, upstream: upstreamAt(index), reason, untilMs, ejections }),
        onUneject: (index) => emit({ kind: 'unejected', index, upstream: upstreamAt(index) }),
      })
    : undefined;

  /** Every upstream: the eligible list of a set without health checks or outlier detection (never changes). */
  const everyUpstream: readonly number[] = Object.freeze(upstreams.map((_, i) => i));
  /** Eligible indices at `t`: healthy and not ejected; else the startup grace; else none. */
  const eligibleAt = (t: number): readonly number[] => {
    if (monitor === undefined && outlier === undefined) return everyUpstream;
    outlier?.refresh(t);
    const healthy: number[] = [];
    const pending: number[] = [];
    for (let i = 0; i < upstreams.length; i++) {
      if (outlier?.isEjected(i, t)) continue;
      const status = monitor ? monitor.status(i) : 'healthy';
      if (status === 'healthy') healthy.push(i);
      else if (status === 'pending') pending.push(i);
    }
    // INVARIANT (fail-closed): only known-healthy upstreams, or not-yet-checked ones when no
    // upstream is known healthy (startup grace); never one that failed or is ejected.
    return healthy.length > 0 ? healthy : pending;
  };

  return {
    route,
    upstreams,
    pick(request: PickRequest): UpstreamPick | undefined {
      const eligible = eligibleAt(monitor === undefined && outlier === undefined ? 0 : now());
      if (eligible.length === 0) return undefined;
      const index = balancer.pick({ eligible, hashKey: request.hashKey, active });
      active[index] = (active[index] ?? 0) + 1;
      let released = false;
      return {
        index,
        upstream: upstreamAt(index),
        release(outcome: RequestOutcome = {}): void {
          if (released) return;
          released = true;
          active[index] = (active[index] ?? 1) - 1;
          outlier?.record(index, outcome, now());
        },
      };
    },
    start(): void {
      monitor?.start();
    },
    stop(): void {
      monitor?.stop();
    },
    snapshot(): readonly UpstreamSnapshot[] {
      const t = now();
      const eligible = new Set(eligibleAt(t));
      return upstreams.map((u, index) => {
        const health = monitor ? monitor.status(index) : 'healthy';
        const o = outlier?.state(index, t);
        return {
          index,
          url: u.url,
          address: upstreamAddress(u),
          weight: u.weight,
          health,
          healthy: health === 'healthy',
          ejected: o?.ejected ?? false,
          ejectedUntilMs: o?.ejectedUntilMs ?? null,
          ejections: o?.ejections ?? 0,
          active: active[index] ?? 0,
          eligible: eligible.has(index),
          consecutive5xx: o?.consecutive5xx ?? 0,
          consecutiveGatewayFailures: o?.consecutiveGatewayFailures ?? 0,
          lastCheckFailure: monitor ? monitor.lastFailure(index) : null,
        };
      });
    },
  };
}

/** The TLS a route's own fields give health checks when the caller passes none. */
function routeTls(route: Route): ProbeTls {
  const ca = route.tls.customCa && 'pem' in route.tls.customCa ? route.tls.customCa.pem : undefined;
  return {
    rejectUnauthorized: !route.tls.skipVerify,
    ...(route.tls.serverName !== null ? { servername: route.tls.serverName } : {}),
    ...(ca !== undefined ? { ca } : {}),
  };
}

function validate(route: Route, upstreams: readonly Upstream[]): void {
  const fail = (message: string): never => {
    throw new UpstreamConfigError('SVC_ERR_UPSTREAM_CONFIG', `route \`${route.id}\`: ${message}`);
  };
  for (const u of upstreams) if (!Number.isInteger(u.weight) || u.weight < 1) fail(`upstream \`${u.url}\` has weight ${u.weight}; weights are integers ≥ 1`);
  const { ringHash, maglev, leastRequest } = route.lb;
  if (ringHash && !(ringHash.minimumRingSize >= 1 && ringHash.minimumRingSize <= ringHash.maximumRingSize)) {
    fail(`ring sizes ${ringHash.minimumRingSize}..${ringHash.maximumRingSize} are out of order`);
  }
  if (maglev && !(isPrime(maglev.tableSize) && maglev.tableSize <= MAX_MAGLEV_TABLE_SIZE)) {
    fail(`maglev table size ${maglev.tableSize} is not a prime up to ${MAX_MAGLEV_TABLE_SIZE}`);
  }
  if (leastRequest && !(leastRequest.choiceCount >= 1 && leastRequest.activeRequestBias >= 0)) {
    fail('least_request_lb_config needs choice_count ≥ 1 and active_request_bias ≥ 0');
  }
  for (const hc of route.healthChecks) {
    if (!(hc.intervalMs > 0 && hc.timeoutMs > 0 && hc.healthyThreshold >= 1 && hc.unhealthyThreshold >= 1)) {
      fail('health checks need interval and timeout above 0 and thresholds ≥ 1');
    }
  }
}
