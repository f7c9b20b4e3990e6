/**
 * When a certificate is renewed, and how long to wait after a failure.
 */

/** Renew at two thirds of the lifetime (Let's Encrypt's 90 days: at 60 days, 30 days left). */
export function renewalTime(notBefore: number, notAfter: number): number {
  return notBefore + ((notAfter - notBefore) * 2) / 3;
}

export interface BackoffPolicy {
  readonly minMs: number;
  readonly maxMs: number;
}

/** One minute, doubling, capped at one day; a rate limit waits at least an hour. */
export const DEFAULT_BACKOFF: BackoffPolicy = { minMs: 60_000, maxMs: 86_400_000 };

/** The wait after the `failures`-th failure in a row (1 = first). */
export function backoffMs(policy: BackoffPolicy, failures: number, rateLimited: boolean): number {
  const base = Math.min(policy.maxMs, policy.minMs * 2 ** Math.max(0, Math.min(30, failures - 1)));
  return rateLimited ? Math.min(policy.maxMs, Math.max(base, 60 * policy.minMs)) : base;
}
