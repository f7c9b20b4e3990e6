/** forEachBounded: every item once, never more than `limit` at once, stops on abort, errors reported. */
import { describe, expect, it } from 'vitest';
import { forEachBounded } from '../../../runtime/sessions/bounded.ts';

async function* items(n: number): AsyncIterable<number> {
  for (let i = 0; i < n; i++) yield i;
}

describe('forEachBounded', () => {
  it('runs each item once with at most `limit` in flight', async () => {
    let inFlight = 0;
    let most = 0;
    const seen: number[] = [];
    await forEachBounded(items(25), 3, async (i) => {
      inFlight++;
      most = Math.max(most, inFlight);
      await new Promise((r) => setTimeout(r, i % 4));
      seen.push(i);
      inFlight--;
    }, new AbortController().signal, () => undefined);
    expect(seen.sort((a, b) => a - b)).toEqual(Array.from({ length: 25 }, (_, i) => i));
    expect(most).toBe(3);
  });

  it('stops taking items after abort, and reports a failing task without stopping the others', async () => {
    const abort = new AbortController();
    const seen: number[] = [];
    const errors: unknown[] = [];
    await forEachBounded(items(100), 2, async (i) => {
      seen.push(i);
      if (i === 3) throw new Error('boom');
      if (i === 9) abort.abort();
      await Promise.resolve();
    }, abort.signal, (e) => errors.push(e));
    expect(errors).toHaveLength(1);
    expect(seen.length).toBeLessThan(12);
    expect(seen).toContain(9);
  });

  it('refuses a limit below one', async () => {
    await expect(forEachBounded(items(1), 0, async () => undefined, new AbortController().signal, () => undefined)).rejects.toThrow(RangeError);
  });
});
