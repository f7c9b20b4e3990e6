/**
 * The CA's `Retry-After` on a rate limit (RFC 8555 §6.6): acme-client retries a 429 itself (a few
 * times, waiting what the header says) and then throws the problem detail without the header, so
 * the header of each 429 answer is noted here, per CA origin, and the manager waits at least until
 * then before it asks that CA again (manager.ts).
 */

const notBefore = new Map<string, number>();

/** The time a `Retry-After` value (delay in seconds, or an HTTP date) names, or undefined when it names none. */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return now + Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : at;
}

/** Notes a 429 answer of the CA at `origin` with its `Retry-After` header. */
export function noteRateLimit(origin: string, retryAfter: string | undefined, now: number): void {
  const at = parseRetryAfter(retryAfter, now);
  if (at !== undefined && at > (notBefore.get(origin) ?? 0)) notBefore.set(origin, at);
}

/** When the CA at `origin` last said to come back, if that is still ahead of `now`. */
export function retryAfterOf(origin: string, now: number): number | undefined {
  const at = notBefore.get(origin);
  return at !== undefined && at > now ? at : undefined;
}

/** The wait after a rate-limited failure: the back-off, or longer when the CA said so. */
export function rateLimitWaitMs(backoffMs: number, retryAfter: number | undefined, now: number): number {
  return retryAfter === undefined ? backoffMs : Math.max(backoffMs, retryAfter - now);
}
