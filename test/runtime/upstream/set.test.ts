import { describe, expect, it } from 'vitest';
import type { HealthCheck, Upstream } from '../../../compiler/plan/types.ts';
import { nextCheckState, PENDING } from '../../../runtime/upstream/health/monitor.ts';
import { createUpstreamSet, HealthCheckError, UpstreamConfigError, upstreamAddress, type Prober, type UpstreamEvent } from '../../../runtime/upstream/index.ts';
import { healthCheck, manualTimers, outlier, route, upstream, upstreams } from './fixtures.ts';

/** Probers whose verdicts the test sets per upstream port: true passes, false fails. */
function scriptedProbers() {
  const verdict = new Map<number, boolean>();
  let closed = 0;
  const create = (u: Upstream): Prober => ({
    probe: () => (verdict.get(u.port) ? Promise.resolve() : Promise.reject(new HealthCheckError('SVC_ERR_HEALTH_CHECK_STATUS', 'scripted failure'))),
    close: () => {
      closed++;
    },
  });
  return { verdict, create, closed: () => closed };
}

const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Runs every scheduled check once and lets the results land. */
async function round(timers: ReturnType<typeof manualTimers>): Promise<void> {
  timers.fireAll();
  await flush();
}

const HTTP_CHECK: HealthCheck['check'] = { kind: 'http', host: null, path: '/health', expectedStatuses: [], codec: 'HTTP1' };

describe('createUpstreamSet', () => {
  it('refuses a redirect route and unusable settings with coded errors', () => {
    const redirect = { ...route({ upstreams: upstreams([1]) }), action: { kind: 'redirect' as const, redirect: { httpsRedirect: true, scheme: null, host: null, port: null, path: null, prefixRewrite: null, responseCode: 301, stripQuery: false } } };
    expect(() => createUpstreamSet(redirect)).toThrow(expect.objectContaining({ code: 'SVC_ERR_UPSTREAM_NOT_FORWARD' }));
    const bad = [
      route({ upstreams: upstreams([1, 0]) }),
      route({ upstreams: upstreams([1]), lb: { policy: 'MAGLEV', maglev: { tableSize: 65_536 } } }),
      route({ upstreams: upstreams([1]), lb: { policy: 'RING_HASH', ringHash: { minimumRingSize: 10, maximumRingSize: 5, hashFunction: 'XX_HASH' } } }),
      route({ upstreams: upstreams([1]), healthChecks: [healthCheck({ kind: 'tcp', send: 'zz', receive: [] })] }),
    ];
    for (const r of bad) {
      let caught: unknown;
      try {
        createUpstreamSet(r);
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(UpstreamConfigError);
      expect((caught as UpstreamConfigError).code).toBe('SVC_ERR_UPSTREAM_CONFIG');
    }
  });

  it('counts active requests and ignores a second release', () => {
    const set = createUpstreamSet(route({ upstreams: upstreams([1]) }));
    const a = set.pick({ hashKey: undefined })!;
    const b = set.pick({ hashKey: undefined })!;
    expect(set.snapshot()[0]?.active).toBe(2);
    a.release({ status: 200 });
    a.release({ status: 200 });
    expect(set.snapshot()[0]?.active).toBe(1);
    b.release();
    expect(set.snapshot()[0]).toMatchObject({ active: 0, healthy: true, health: 'healthy', eligible: true, ejected: false, address: '10.0.0.1:9001' });
  });

  it('formats addresses, bracketing IPv6', () => {
    expect(upstreamAddress(upstream(8080, 1, '[::1]'))).toBe('[::1]:8080');
    expect(upstreamAddress({ host: '::1', port: 80 })).toBe('[::1]:80');
    expect(upstreamAddress(upstream(443, 1, 'example.com', 'https'))).toBe('example.com:443');
  });
});

describe('health state and startup grace', () => {
  it('serves pending upstreams only while none is known healthy, never a failed one', async () => {
    const timers = manualTimers();
    const probers = scriptedProbers();
    const events: UpstreamEvent[] = [];
    const ups = upstreams([1, 1, 1]);
    const set = createUpstreamSet(route({ upstreams: ups, healthChecks: [healthCheck(HTTP_CHECK)] }), {
      timers,
      createProber: probers.create,
      onChange: (e) => events.push(e),
    });
    // Before any check: all pending, startup grace spreads traffic over all three.
    expect(set.snapshot().map((s) => s.health)).toEqual(['pending', 'pending', 'pending']);
    expect(new Set(Array.from({ length: 9 }, () => set.pick({ hashKey: undefined })?.index))).toEqual(new Set([0, 1, 2]));
    set.start();
    expect(timers.pending()).toBe(3);
    probers.verdict.set(9001, false);
    probers.verdict.set(9002, true);
    probers.verdict.set(9003, true);
    await round(timers);
    expect(set.snapshot().map((s) => s.health)).toEqual(['unhealthy', 'healthy', 'healthy']);
    expect(set.snapshot()[0]?.lastCheckFailure).toBe('SVC_ERR_HEALTH_CHECK_STATUS');
    for (let i = 0; i < 20; i++) expect(set.pick({ hashKey: undefined })?.index).not.toBe(0);
    expect(events.map((e) => (e.kind === 'health' ? `${e.index} ${e.healthy}` : e.kind)).sort()).toEqual(['0 false', '1 true', '2 true']);
    set.stop();
  });

  it('a failed upstream is not served by the grace even when the others are still pending', async () => {
    const timers = manualTimers();
    const never: Prober = { probe: () => new Promise(() => {}), close: () => {} };
    const failing: Prober = { probe: () => Promise.reject(new HealthCheckError('SVC_ERR_HEALTH_CHECK_CONNECT', 'refused')), close: () => {} };
    const set = createUpstreamSet(route({ upstreams: upstreams([1, 1]), healthChecks: [healthCheck(HTTP_CHECK, { timeoutMs: 1_000_000 })] }), {
      timers,
      createProber: (u) => (u.port === 9001 ? failing : never),
    });
    set.start();
    await round(timers);
    expect(set.snapshot().map((s) => s.health)).toEqual(['unhealthy', 'pending']);
    for (let i = 0; i < 10; i++) expect(set.pick({ hashKey: undefined })?.index).toBe(1);
    set.stop();
  });

  it('goes unhealthy after unhealthy_threshold failures and back after healthy_threshold successes', async () => {
    const timers = manualTimers();
    const probers = scriptedProbers();
    const set = createUpstreamSet(route({ upstreams: upstreams([1]), healthChecks: [healthCheck(HTTP_CHECK, { unhealthyThreshold: 3, healthyThreshold: 2 })] }), {
      timers,
      createProber: probers.create,
    });
    set.start();
    probers.verdict.set(9001, true);
    await round(timers);
    expect(set.snapshot()[0]?.health).toBe('healthy');
    probers.verdict.set(9001, false);
    const seen: string[] = [];
    for (let i = 0; i < 3; i++) {
      await round(timers);
      seen.push(set.snapshot()[0]!.health);
    }
    expect(seen).toEqual(['healthy', 'healthy', 'unhealthy']);
    expect(set.pick({ hashKey: undefined })).toBeUndefined();
    probers.verdict.set(9001, true);
    seen.length = 0;
    for (let i = 0; i < 2; i++) {
      await round(timers);
      seen.push(set.snapshot()[0]!.health);
    }
    expect(seen).toEqual(['unhealthy', 'healthy']);
    expect(set.pick({ hashKey: undefined })?.index).toBe(0);
    set.stop();
  });

  it('needs every check of an upstream to pass', async () => {
    const timers = manualTimers();
    const set = createUpstreamSet(
      route({ upstreams: upstreams([1]), healthChecks: [healthCheck(HTTP_CHECK), healthCheck({ kind: 'tcp', send: null, receive: [] })] }),
      {
        timers,
        createProber: (_u, check) =>
          check.kind === 'tcp' ? { probe: () => Promise.reject(new HealthCheckError('SVC_ERR_HEALTH_CHECK_CONNECT', 'x')), close: () => {} } : { probe: () => Promise.resolve(), close: () => {} },
      },
    );
    set.start();
    await round(timers);
    expect(set.snapshot()[0]).toMatchObject({ health: 'unhealthy', lastCheckFailure: 'SVC_ERR_HEALTH_CHECK_CONNECT' });
    set.stop();
  });

  it('times out a probe that never answers', async () => {
    const timers = manualTimers();
    const set = createUpstreamSet(route({ upstreams: upstreams([1]), healthChecks: [healthCheck(HTTP_CHECK)] }), {
      timers,
      createProber: () => ({ probe: () => new Promise(() => {}), close: () => {} }),
    });
    set.start();
    timers.fireAll(); // starts the probe, arms its timeout
    await flush();
    await round(timers); // fires the timeout
    expect(set.snapshot()[0]).toMatchObject({ health: 'unhealthy', lastCheckFailure: 'SVC_ERR_HEALTH_CHECK_TIMEOUT' });
    set.stop();
  });

  it('stop clears every timer, closes probers and is final', async () => {
    const timers = manualTimers();
    const probers = scriptedProbers();
    const set = createUpstreamSet(route({ upstreams: upstreams([1, 1]), healthChecks: [healthCheck(HTTP_CHECK)] }), { timers, createProber: probers.create });
    set.start();
    set.start();
    expect(timers.pending()).toBe(2);
    set.stop();
    expect(timers.pending()).toBe(0);
    expect(probers.closed()).toBe(2);
    set.start();
    expect(timers.pending()).toBe(0);
    expect(set.pick({ hashKey: undefined })).toBeDefined();
  });

  it('start is a no-op without health checks', () => {
    const timers = manualTimers();
    const set = createUpstreamSet(route({ upstreams: upstreams([1]), outlierDetection: outlier() }), { timers });
    set.start();
    expect(timers.pending()).toBe(0);
    set.stop();
  });

  it('applies the threshold rules (pure)', () => {
    const t = { healthyThreshold: 2, unhealthyThreshold: 2 };
    const first = nextCheckState(PENDING, undefined, t);
    expect(first.status).toBe('healthy');
    expect(nextCheckState(PENDING, 'X', t).status).toBe('unhealthy');
    const once = nextCheckState(first, 'X', t);
    expect(once).toMatchObject({ status: 'healthy', failures: 1, lastFailure: 'X' });
    const twice = nextCheckState(once, 'X', t);
    expect(twice.status).toBe('unhealthy');
    expect(nextCheckState(twice, undefined, t).status).toBe('unhealthy');
    expect(nextCheckState(nextCheckState(twice, undefined, t), undefined, t).status).toBe('healthy');
  });
});
