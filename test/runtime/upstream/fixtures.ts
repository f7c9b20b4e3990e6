/** Hand-built forward routes for the upstream-set tests (no compiler in the loop). */
import type { HealthCheck, OutlierDetection, Route, Upstream } from '../../../compiler/plan/types.ts';
import type { Random, TimerHandle, Timers } from '../../../runtime/upstream/index.ts';

/** An `http` upstream on `host:port` with `weight`. */
export function upstream(port: number, weight = 1, host = '127.0.0.1', scheme: Upstream['scheme'] = 'http'): Upstream {
  return { url: `${scheme}://${host}:${port}/`, scheme, host, port, path: scheme === 'tcp' ? '' : '/', weight };
}

/** `n` upstreams on ports 9001… with the given weights (default 1 each). */
export function upstreams(weights: readonly number[]): Upstream[] {
  return weights.map((w, i) => upstream(9001 + i, w, `10.0.0.${i + 1}`));
}

export interface RouteParts {
  readonly upstreams: readonly Upstream[];
  readonly lb?: Partial<Route['lb']>;
  readonly healthChecks?: readonly HealthCheck[];
  readonly outlierDetection?: OutlierDetection | null;
}

/** A forward route with everything but the upstream settings at neutral values. */
export function route(parts: RouteParts): Route {
  return {
    id: 'test-route',
    index: 0,
    name: null,
    from: { url: 'https://app.example.com', scheme: 'https', host: 'app.example.com', port: null },
    match: { kind: 'any' },
    action: { kind: 'forward', upstreams: parts.upstreams },
    policy: { rules: [] },
    public: true,
    rewrite: { prefixRewrite: null, regex: null },
    host: { kind: 'upstream' },
    requestHeaders: { set: {}, remove: [] },
    responseHeaders: { set: {}, rewrite: [] },
    timeoutMs: 30_000,
    idleTimeoutMs: 300_000,
    passIdentityHeaders: false,
    tls: { skipVerify: false, serverName: null, customCa: null, downstreamClientCa: null, clientCert: null, clientKey: null },
    allowWebsockets: false,
    allowSpdy: false,
    allowEncodedPathCharacters: false,
    allowPathParameters: false,
    pathCase: 'sensitive',
    allowUnderscoresInHeaders: false,
    lb: { policy: 'ROUND_ROBIN', leastRequest: null, ringHash: null, maglev: null, ...parts.lb },
    healthChecks: parts.healthChecks ?? [],
    outlierDetection: parts.outlierDetection ?? null,
    hostedcloudServerlessAuthentication: false,
    orchestratorServiceAccountToken: null,
  };
}

/** Outlier detection with Envoy's defaults, overridden by `o`. */
export function outlier(o: Partial<OutlierDetection> = {}): OutlierDetection {
  return {
    consecutive5xx: 5,
    consecutiveGatewayFailure: null,
    intervalMs: 10_000,
    baseEjectionTimeMs: 30_000,
    maxEjectionTimeMs: 300_000,
    maxEjectionPercent: 100,
    enforcingConsecutive5xx: 100,
    ...o,
  };
}

/** A health check with short test timings around `check`. */
export function healthCheck(check: HealthCheck['check'], o: Partial<Omit<HealthCheck, 'check'>> = {}): HealthCheck {
  return { timeoutMs: 1000, intervalMs: 25, initialJitterMs: 0, intervalJitterMs: 0, unhealthyThreshold: 2, healthyThreshold: 2, check, ...o };
}

/** A seeded PRNG (mulberry32): deterministic samples in [0, 1). */
export function seeded(seed: number): Random {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A settable clock. */
export function manualClock(start = 1_000_000): { now: () => number; advance: (ms: number) => void; set: (t: number) => void } {
  let t = start;
  return { now: () => t, advance: (ms) => (t += ms), set: (v) => (t = v) };
}

/** Timers that never fire unless `fire` is called; counts what is pending. */
export function manualTimers(): Timers & { pending(): number; fireAll(): void } {
  let next = 0;
  const pending = new Map<number, () => void>();
  return {
    setTimeout(callback: () => void): TimerHandle {
      const id = ++next;
      pending.set(id, callback);
      return id;
    },
    clearTimeout(handle: TimerHandle): void {
      pending.delete(handle as number);
    },
    pending: () => pending.size,
    fireAll(): void {
      const due = [...pending.entries()];
      pending.clear();
      for (const [, fn] of due) fn();
    },
  };
}

/** Counts picks per upstream index over `n` picks with `key(i)` as the hash key. */
export function tally(pick: (i: number) => number | undefined, n: number, size: number): number[] {
  const counts = new Array<number>(size).fill(0);
  for (let i = 0; i < n; i++) {
    const index = pick(i);
    if (index !== undefined) counts[index] = (counts[index] ?? 0) + 1;
  }
  return counts;
}
