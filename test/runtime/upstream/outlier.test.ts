import { describe, expect, it } from 'vitest';
import { createUpstreamSet, type UpstreamEvent, type UpstreamSet } from '../../../runtime/upstream/index.ts';
import { OutlierDetector, outcomeStatus } from '../../../runtime/upstream/outlier.ts';
import type { OutlierDetection } from '../../../compiler/plan/types.ts';
import { manualClock, outlier, route, upstreams } from './fixtures.ts';

/** Sends `n` requests to upstream `index` (picking until it comes up) and releases them with `status`. */
function hit(set: UpstreamSet, index: number, n: number, outcome: { status?: number; error?: 'connect' | 'timeout' | 'reset' }): void {
  for (let sent = 0, tries = 0; sent < n; tries++) {
    if (tries > 1000) throw new Error(`upstream ${index} is never picked`);
    const p = set.pick({ hashKey: undefined });
    if (!p) throw new Error('no upstream');
    if (p.index === index) {
      p.release(outcome);
      sent++;
    } else p.release({ status: 200 });
  }
}

function detector(config: Partial<OutlierDetection>, hosts: number, random = () => 0) {
  const events: string[] = [];
  const d = new OutlierDetector(outlier(config), hosts, random, {
    onEject: (i, reason, until) => events.push(`eject ${i} ${reason} ${until}`),
    onUneject: (i) => events.push(`return ${i}`),
  });
  return { d, events };
}

describe('outlier detection: consecutive 5xx', () => {
  it('ejects after 5 consecutive 5xx; the host gets no traffic until it returns', () => {
    const clock = manualClock();
    const events: UpstreamEvent[] = [];
    const set = createUpstreamSet(route({ upstreams: upstreams([1, 1]), outlierDetection: outlier({ maxEjectionPercent: 50 }) }), {
      now: clock.now,
      onChange: (e) => events.push(e),
    });
    hit(set, 0, 4, { status: 503 });
    expect(set.snapshot()[0]).toMatchObject({ ejected: false, consecutive5xx: 4 });
    hit(set, 0, 1, { status: 500 });
    expect(set.snapshot()[0]).toMatchObject({ ejected: true, ejections: 1, ejectedUntilMs: clock.now() + 30_000, eligible: false });
    expect(events).toEqual([expect.objectContaining({ kind: 'ejected', index: 0, reason: 'consecutive_5xx', ejections: 1 })]);
    for (let i = 0; i < 50; i++) expect(set.pick({ hashKey: undefined })?.index).toBe(1);
  });

  it('does not eject when a success breaks the run', () => {
    const { d } = detector({}, 1);
    for (const status of [500, 500, 500, 500, 200, 500, 500, 500, 500]) d.record(0, { status }, 0);
    expect(d.state(0, 0)).toMatchObject({ ejected: false, consecutive5xx: 4 });
  });

  it('counts connect, timeout and reset errors as 5xx; an outcome with neither says nothing', () => {
    const { d } = detector({ maxEjectionPercent: 100 }, 1);
    d.record(0, { error: 'connect' }, 0);
    d.record(0, { error: 'timeout' }, 0);
    d.record(0, {}, 0);
    d.record(0, { error: 'reset' }, 0);
    expect(d.state(0, 0).consecutive5xx).toBe(3);
    expect(outcomeStatus({ error: 'connect' })).toBe(503);
    expect(outcomeStatus({ error: 'timeout' })).toBe(504);
    expect(outcomeStatus({ error: 'reset' })).toBe(503);
    expect(outcomeStatus({})).toBeUndefined();
  });

  it('returns the host after the base ejection time, and ejects longer the second time', () => {
    const clock = manualClock();
    const events: string[] = [];
    const set = createUpstreamSet(route({ upstreams: upstreams([1, 1]), outlierDetection: outlier({ maxEjectionPercent: 50, baseEjectionTimeMs: 10_000 }) }), {
      now: clock.now,
      onChange: (e) => events.push(`${e.kind} ${e.index}`),
    });
    hit(set, 0, 5, { status: 500 });
    clock.advance(9_999);
    expect(set.snapshot()[0]?.ejected).toBe(true);
    clock.advance(1);
    expect(set.snapshot()[0]?.ejected).toBe(false);
    expect(events).toEqual(['ejected 0', 'unejected 0']);
    const start = clock.now();
    hit(set, 0, 5, { status: 502 });
    expect(set.snapshot()[0]).toMatchObject({ ejected: true, ejections: 2, ejectedUntilMs: start + 20_000 });
    clock.advance(19_999);
    expect(set.snapshot()[0]?.ejected).toBe(true);
    clock.advance(1);
    expect(set.snapshot()[0]?.ejected).toBe(false);
  });

  it('caps the ejection time at max_ejection_time', () => {
    const { d } = detector({ baseEjectionTimeMs: 10_000, maxEjectionTimeMs: 25_000 }, 1);
    let t = 0;
    const durations: number[] = [];
    for (let round = 0; round < 4; round++) {
      for (let i = 0; i < 5; i++) d.record(0, { status: 500 }, t);
      const until = d.state(0, t).ejectedUntilMs!;
      durations.push(until - t);
      t = until;
    }
    expect(durations).toEqual([10_000, 20_000, 25_000, 25_000]);
  });

  it('lets the multiplier decay while the host stays in service', () => {
    const { d } = detector({ baseEjectionTimeMs: 10_000, intervalMs: 10_000 }, 1);
    for (let i = 0; i < 5; i++) d.record(0, { status: 500 }, 0);
    for (let i = 0; i < 5; i++) d.record(0, { status: 500 }, 10_000);
    expect(d.state(0, 10_000)).toMatchObject({ backoff: 2, ejectedUntilMs: 30_000 });
    // Back at 30 s; in service for base time (40 s) → one decay tick, then one per interval.
    expect(d.state(0, 39_999).backoff).toBe(2);
    expect(d.state(0, 40_000).backoff).toBe(1);
    expect(d.state(0, 50_000).backoff).toBe(0);
    for (let i = 0; i < 5; i++) d.record(0, { status: 500 }, 60_000);
    expect(d.state(0, 60_000).ejectedUntilMs).toBe(70_000);
  });

  it('enforces with probability enforcing_consecutive_5xx %', () => {
    const never = detector({ enforcingConsecutive5xx: 0 }, 1);
    for (let i = 0; i < 50; i++) never.d.record(0, { status: 500 }, 0);
    expect(never.d.state(0, 0).ejected).toBe(false);
    const samples = [0.7, 0.2];
    const half = detector({ enforcingConsecutive5xx: 50 }, 1, () => samples.shift() ?? 0.99);
    for (let i = 0; i < 5; i++) half.d.record(0, { status: 500 }, 0);
    expect(half.d.state(0, 0).ejected).toBe(false); // 70 ≥ 50: detected, not enforced; counter reset
    for (let i = 0; i < 4; i++) half.d.record(0, { status: 500 }, 0);
    expect(half.d.state(0, 0).ejected).toBe(false);
    half.d.record(0, { status: 500 }, 0);
    expect(half.d.state(0, 0).ejected).toBe(true); // 20 < 50
  });
});

describe('outlier detection: ejection cap', () => {
  it('never ejects more than max_ejection_percent of hosts', () => {
    const clock = manualClock();
    const set = createUpstreamSet(route({ upstreams: upstreams([1, 1, 1, 1]), outlierDetection: outlier({ maxEjectionPercent: 50 }) }), { now: clock.now });
    for (let i = 0; i < 200; i++) set.pick({ hashKey: undefined })?.release({ status: 500 });
    expect(set.snapshot().filter((s) => s.ejected)).toHaveLength(2);
    expect(set.pick({ hashKey: undefined })).toBeDefined();
  });

  it('with the default 10 % ejects nothing on a route of fewer than ten upstreams (Envoy)', () => {
    const { d } = detector({ maxEjectionPercent: 10 }, 4);
    for (let i = 0; i < 10; i++) d.record(0, { status: 500 }, 0);
    expect(d.state(0, 0).ejected).toBe(false);
    const ten = detector({ maxEjectionPercent: 10 }, 10);
    for (let i = 0; i < 5; i++) ten.d.record(0, { status: 500 }, 0);
    for (let i = 0; i < 5; i++) ten.d.record(1, { status: 500 }, 0);
    expect([ten.d.state(0, 0).ejected, ten.d.state(1, 0).ejected]).toEqual([true, false]);
  });

  it('at 100 % may eject every host; pick then fails closed', () => {
    const clock = manualClock();
    const set = createUpstreamSet(route({ upstreams: upstreams([1, 1]), outlierDetection: outlier({ maxEjectionPercent: 100 }) }), { now: clock.now });
    for (let i = 0; i < 10; i++) set.pick({ hashKey: undefined })?.release({ status: 500 });
    expect(set.snapshot().every((s) => s.ejected)).toBe(true);
    expect(set.pick({ hashKey: undefined })).toBeUndefined();
    clock.advance(30_000);
    expect(set.pick({ hashKey: undefined })).toBeDefined();
  });
});

describe('outlier detection: consecutive gateway failures', () => {
  it('ejects after N 502/503/504 or connect errors when configured; other 5xx reset it', () => {
    const { d, events } = detector({ consecutive5xx: 100, consecutiveGatewayFailure: 3 }, 1);
    d.record(0, { status: 502 }, 0);
    d.record(0, { status: 504 }, 0);
    d.record(0, { status: 500 }, 0);
    expect(d.state(0, 0)).toMatchObject({ consecutiveGatewayFailures: 0, consecutive5xx: 3 });
    d.record(0, { status: 503 }, 0);
    d.record(0, { error: 'connect' }, 0);
    d.record(0, { status: 502 }, 0);
    expect(d.state(0, 0).ejected).toBe(true);
    expect(events).toEqual(['eject 0 consecutive_gateway_failure 30000']);
  });

  it('is off when not configured', () => {
    const { d } = detector({ consecutive5xx: 100, consecutiveGatewayFailure: null }, 1);
    for (let i = 0; i < 20; i++) d.record(0, { status: 503 }, 0);
    expect(d.state(0, 0)).toMatchObject({ ejected: false, consecutiveGatewayFailures: 20 });
  });
});
