/**
 * Active health checking of a route's upstreams: runs every configured check against every
 * upstream on its own schedule and turns results into a per-upstream status.
 *
 * Schedule (Envoy): the first run of a check comes after a random delay in
 * [0, `initialJitterMs`); each next run `intervalMs` + a random delay in [0, `intervalJitterMs`)
 * after the previous one finished. A run that has no verdict after `timeoutMs` is aborted and
 * counts as a failure.
 *
 * Thresholds (Envoy): a check starts `pending`. Its first verdict decides at once (one success
 * → healthy, one failure → unhealthy; Envoy likewise needs a single success at startup). After
 * that, `unhealthyThreshold` failures in a row make it unhealthy and `healthyThreshold` successes
 * in a row make it healthy again. An upstream is healthy when all its checks are, unhealthy when
 * any is, pending otherwise.
 */
import type { HealthCheck, Upstream } from '../../../compiler/plan/types.ts';
import { HealthCheckError } from '../errors.ts';
import type { HealthStatus, Random, TimerHandle, Timers } from '../types.ts';
import type { Prober } from './types.ts';

/** The state of one check of one upstream. */
export interface CheckState {
  readonly status: HealthStatus;
  /** Consecutive successes / failures, counting toward the thresholds. */
  readonly successes: number;
  readonly failures: number;
  /** Code of the latest failure, null if none yet. */
  readonly lastFailure: string | null;
}

/** A check's state before its first verdict. */
export const PENDING: CheckState = { status: 'pending', successes: 0, failures: 0, lastFailure: null };

/**
 * The state after one verdict (`failure` undefined: the check passed). Pure; the threshold rules
 * of the module comment live here.
 */
export function nextCheckState(
  state: CheckState,
  failure: string | undefined,
  thresholds: Pick<HealthCheck, 'healthyThreshold' | 'unhealthyThreshold'>,
): CheckState {
  if (failure === undefined) {
    const successes = state.successes + 1;
    const healthy = state.status === 'pending' || state.status === 'healthy' || successes >= thresholds.healthyThreshold;
    return { status: healthy ? 'healthy' : 'unhealthy', successes, failures: 0, lastFailure: state.lastFailure };
  }
  const failures = state.failures + 1;
  const unhealthy = state.status === 'pending' || state.status === 'unhealthy' || failures >= thresholds.unhealthyThreshold;
  return { status: unhealthy ? 'unhealthy' : 'healthy', successes: 0, failures, lastFailure: failure };
}

/** The upstream's status from its checks' states (all healthy → healthy; any unhealthy → unhealthy). */
function combineStatus(states: readonly CheckState[]): HealthStatus {
  if (states.some((s) => s.status === 'unhealthy')) return 'unhealthy';
  if (states.some((s) => s.status === 'pending')) return 'pending';
  return 'healthy';
}

/** What a monitor needs from its set. */
export interface HealthMonitorDeps {
  readonly timers: Timers;
  readonly random: Random;
  /** Builds the prober of one check of one upstream (called at construction). */
  readonly createProber: (upstream: Upstream, check: HealthCheck['check']) => Prober;
  /** Called when an upstream's status moves between healthy and unhealthy (pending excluded). */
  readonly onTransition: (index: number, healthy: boolean, failure: string | null) => void;
}

interface Runner {
  readonly index: number;
  readonly check: HealthCheck;
  readonly prober: Prober;
  state: CheckState;
  timer: TimerHandle | undefined;
  inflight: AbortController | undefined;
}

/** The health checks of one upstream set. `start` begins them, `stop` ends them for good. */
export class HealthMonitor {
  private readonly runners: Runner[][];
  private started = false;
  private stopped = false;

  constructor(
    upstreams: readonly Upstream[],
    checks: readonly HealthCheck[],
    private readonly deps: HealthMonitorDeps,
  ) {
    this.runners = upstreams.map((u, index) =>
      checks.map((check) => ({ index, check, prober: deps.createProber(u, check.check), state: PENDING, timer: undefined, inflight: undefined })),
    );
  }

  /** The upstream's status; `healthy` when the route has no health checks. */
  status(index: number): HealthStatus {
    return combineStatus((this.runners[index] ?? []).map((r) => r.state));
  }

  /** Code of the upstream's latest failed check, null if none failed. */
  lastFailure(index: number): string | null {
    let last: string | null = null;
    for (const r of this.runners[index] ?? []) if (r.state.lastFailure !== null) last = r.state.lastFailure;
    return last;
  }

  /** Schedules every check's first run. Idempotent; does nothing after `stop`. */
  start(): void {
    if (this.started || this.stopped) return;
    this.started = true;
    for (const runner of this.runners.flat()) this.schedule(runner, jitter(this.deps.random, runner.check.initialJitterMs));
  }

  /** Cancels pending runs, aborts running ones and closes probers. Final. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    for (const runner of this.runners.flat()) {
      if (runner.timer !== undefined) this.deps.timers.clearTimeout(runner.timer);
      runner.timer = undefined;
      runner.inflight?.abort(new HealthCheckError('SVC_ERR_HEALTH_CHECK_TIMEOUT', 'health checks stopped'));
      runner.prober.close();
    }
  }

  private schedule(runner: Runner, delayMs: number): void {
    runner.timer = this.deps.timers.setTimeout(() => {
      runner.timer = undefined;
      void this.run(runner);
    }, delayMs);
  }

  private async run(runner: Runner): Promise<void> {
    if (this.stopped) return;
    const controller = new AbortController();
    runner.inflight = controller;
    const timeout = this.deps.timers.setTimeout(() => {
      controller.abort(new HealthCheckError('SVC_ERR_HEALTH_CHECK_TIMEOUT', `health check timed out after ${runner.check.timeoutMs} ms`));
    }, runner.check.timeoutMs);
    let failure: string | undefined;
    try {
      await probeWithin(runner.prober, controller.signal);
    } catch (err) {
      failure = err instanceof HealthCheckError ? err.code : 'SVC_ERR_HEALTH_CHECK_RESET';
    } finally {
      this.deps.timers.clearTimeout(timeout);
      runner.inflight = undefined;
    }
    if (this.stopped) return;
    this.record(runner, failure);
    this.schedule(runner, runner.check.intervalMs + jitter(this.deps.random, runner.check.intervalJitterMs));
  }

  private record(runner: Runner, failure: string | undefined): void {
    const before = this.status(runner.index);
    runner.state = nextCheckState(runner.state, failure, runner.check);
    const after = this.status(runner.index);
    if (after !== before && after !== 'pending') {
      this.deps.onTransition(runner.index, after === 'healthy', after === 'healthy' ? null : this.lastFailure(runner.index));
    }
  }
}

function jitter(random: Random, maxMs: number): number {
  return maxMs > 0 ? Math.floor(random() * maxMs) : 0;
}

/** The probe's verdict, or the abort's if the probe does not honour its signal in time. */
function probeWithin(prober: Prober, signal: AbortSignal): Promise<void> {
  const aborted = new Promise<never>((_, reject) => {
    const fail = (): void => reject(signal.reason instanceof Error ? signal.reason : new HealthCheckError('SVC_ERR_HEALTH_CHECK_TIMEOUT', 'health check aborted'));
    if (signal.aborted) fail();
    else signal.addEventListener('abort', fail, { once: true });
  });
  aborted.catch(() => {});
  return Promise.race([prober.probe(signal), aborted]);
}
