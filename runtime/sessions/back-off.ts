/**
 * Exponential back-off with jitter toward one identity provider (docs/authentication.md "Keeping
 * sessions fresh"): after a failure no request goes to the provider before {@link BackOff.readyAtMs};
 * each consecutive failure doubles the delay (from `baseMs` to at most `maxMs`), a random jitter
 * spreads processes that failed together, a `Retry-After` from the provider is a lower bound, and a
 * success resets it. Never hammer a provider that is down or rate-limiting.
 */

export interface BackOffOptions {
  /** First delay (default 1 000 ms). */
  readonly baseMs?: number;
  /** Largest delay (default 300 000 ms). */
  readonly maxMs?: number;
  /** Clock in ms (default `Date.now`). */
  readonly now?: () => number;
  /** A number in [0, 1) (default `Math.random`): the jitter. */
  readonly random?: () => number;
}

export class BackOff {
  readonly #baseMs: number;
  readonly #maxMs: number;
  readonly #now: () => number;
  readonly #random: () => number;
  #failures = 0;
  #readyAtMs = 0;

  /** @throws {RangeError} when `baseMs` or `maxMs` is not positive, or `maxMs < baseMs`. */
  constructor(options: BackOffOptions = {}) {
    this.#baseMs = options.baseMs ?? 1_000;
    this.#maxMs = options.maxMs ?? 300_000;
    if (!(this.#baseMs > 0) || !(this.#maxMs >= this.#baseMs)) throw new RangeError('back-off needs 0 < baseMs <= maxMs');
    this.#now = options.now ?? Date.now;
    this.#random = options.random ?? Math.random;
  }

  /** Consecutive failures since the last success. */
  get failures(): number {
    return this.#failures;
  }

  /** When the provider may be asked again (ms since the epoch); 0 when not backing off. */
  get readyAtMs(): number {
    return this.#readyAtMs;
  }

  /** True while backing off: no request may go to the provider now. */
  blocked(): boolean {
    return this.#now() < this.#readyAtMs;
  }

  /**
   * Records a failure: the next request waits `min(maxMs, baseMs·2^(n-1))` scaled by a jitter in
   * [0.5, 1), and at least `retryAfterMs` (the provider's own word). Returns the delay in ms.
   */
  failed(retryAfterMs?: number): number {
    this.#failures++;
    const exponential = Math.min(this.#maxMs, this.#baseMs * 2 ** Math.min(this.#failures - 1, 30));
    const delay = Math.max(Math.round(exponential * (0.5 + this.#random() / 2)), retryAfterMs ?? 0);
    this.#readyAtMs = this.#now() + delay;
    return delay;
  }

  /** Records a success: no more waiting. */
  succeeded(): void {
    this.#failures = 0;
    this.#readyAtMs = 0;
  }
}
