/** Back-off toward the provider: doubling, capped, jittered, Retry-After respected, reset on success. */
import { describe, expect, it } from 'vitest';
import { BackOff } from '../../../runtime/sessions/back-off.ts';

describe('BackOff', () => {
  it('doubles from baseMs up to maxMs, scaled by a jitter in [0.5, 1)', () => {
    let now = 0;
    const low = new BackOff({ baseMs: 1_000, maxMs: 8_000, now: () => now, random: () => 0 });
    expect([1, 2, 3, 4, 5, 6].map(() => low.failed())).toEqual([500, 1_000, 2_000, 4_000, 4_000, 4_000]);
    const high = new BackOff({ baseMs: 1_000, maxMs: 8_000, now: () => now, random: () => 0.999_999 });
    expect([1, 2, 3, 4, 5].map(() => high.failed())).toEqual([1_000, 2_000, 4_000, 8_000, 8_000]);
  });

  it('blocks until readyAtMs, honours Retry-After as a floor, and resets on success', () => {
    let now = 10_000;
    const b = new BackOff({ baseMs: 1_000, maxMs: 60_000, now: () => now, random: () => 0 });
    expect(b.blocked()).toBe(false);
    expect(b.failed(30_000)).toBe(30_000);
    expect(b.readyAtMs).toBe(40_000);
    now = 39_999;
    expect(b.blocked()).toBe(true);
    now = 40_000;
    expect(b.blocked()).toBe(false);
    expect(b.failures).toBe(1);
    b.failed();
    expect(b.blocked()).toBe(true);
    b.succeeded();
    expect(b.blocked()).toBe(false);
    expect(b.failures).toBe(0);
    expect(b.failed()).toBe(500);
  });

  it('refuses nonsensical bounds', () => {
    expect(() => new BackOff({ baseMs: 0 })).toThrow(RangeError);
    expect(() => new BackOff({ baseMs: 10, maxMs: 5 })).toThrow(RangeError);
  });
});
