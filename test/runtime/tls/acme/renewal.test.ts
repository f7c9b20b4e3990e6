import { describe, expect, it } from 'vitest';
import { backoffMs, renewalTime } from '../../../../runtime/tls/acme/renewal.ts';
import { classify } from '../../../../runtime/tls/acme/problems.ts';
import { parseStored } from '../../../../runtime/tls/acme/manager.ts';

describe('renewal and back-off', () => {
  it('renews at two thirds of the lifetime', () => {
    expect(renewalTime(0, 90)).toBe(60);
  });

  it('doubles the wait after each failure up to the cap; a rate limit waits longer', () => {
    const p = { minMs: 1_000, maxMs: 100_000 };
    expect([1, 2, 3, 4].map((n) => backoffMs(p, n, false))).toEqual([1_000, 2_000, 4_000, 8_000]);
    expect(backoffMs(p, 50, false)).toBe(100_000);
    expect(backoffMs(p, 1, true)).toBe(60_000);
  });

  it('names rate limits, failed challenges and refused accounts', () => {
    expect(classify('a', 'order', new Error('Error creating new order :: too many certificates already issued'), false).kind).toBe('rate-limited');
    expect(classify('a', 'challenge', new Error('Connection refused'), false).kind).toBe('challenge-failed');
    expect(classify('a', 'account', new Error('invalid EAB MAC'), true).kind).toBe('account-refused');
    expect(classify('a', 'account', new Error('connect ECONNREFUSED 127.0.0.1:14000'), true).kind).toBe('ca-error');
  });

  it('refuses a stored bundle that is not for the name or not a certificate', () => {
    expect(parseStored('a.test', 'garbage')).toBeUndefined();
  });
});
