/**
 * A log that writes one entry per key per interval: a misconfigured peer calling many times a
 * second leaves one line a minute, not a flood (the refusal is still counted in the metrics).
 */
const DEFAULT_INTERVAL_MS = 60_000;
/** Keys remembered at most; past it the oldest are forgotten (bounded memory). */
const MAX_KEYS = 1_000;

export class RateLimitedLog {
  readonly #log: ((entry: Record<string, unknown>) => void) | undefined;
  readonly #intervalMs: number;
  readonly #last = new Map<string, number>();

  constructor(log: ((entry: Record<string, unknown>) => void) | undefined, intervalMs = DEFAULT_INTERVAL_MS) {
    this.#log = log;
    this.#intervalMs = intervalMs;
  }

  /** Writes `entry` unless an entry with `key` was written less than the interval ago. */
  log(key: string, entry: Record<string, unknown>): void {
    if (this.#log === undefined) return;
    const now = Date.now();
    const last = this.#last.get(key);
    if (last !== undefined && now - last < this.#intervalMs) return;
    this.#last.delete(key);
    this.#last.set(key, now);
    if (this.#last.size > MAX_KEYS) this.#last.delete(this.#last.keys().next().value!);
    this.#log(entry);
  }
}
