/**
 * The highest version of each session key this process has seen (read, written, or heard of on the
 * change channel), and whether that version revoked the session (docs/scale-out.md "What a Redis
 * writer can and cannot do"). The Redis store refuses a value older than this: a sealed value saved
 * before a sign-out or a group change and written back to Redis is never served again here.
 *
 * Memory stays bounded by the live sessions: an entry is dropped when the record it is about would
 * have expired (after which every value of that record is refused as expired anyway), lazily on
 * access and by a sweep every {@link SWEEP_EVERY} updates. About 300 bytes per session, key name included.
 */

/** What this process knows of one key. */
export interface Seen {
  readonly version: number;
  readonly revoked: boolean;
  /** When the record would have expired (ms): the entry is kept until then. */
  readonly exp: number;
}

const SWEEP_EVERY = 4096;

export class SeenVersions {
  readonly #entries = new Map<string, Seen>();
  #updates = 0;

  /** What is known of `key`, unless it lapsed before `now`. */
  get(key: string, now: number): Seen | undefined {
    const e = this.#entries.get(key);
    if (e !== undefined && e.exp <= now) {
      this.#entries.delete(key);
      return undefined;
    }
    return e;
  }

  /**
   * Records that `key` was seen at `version`. Never lowers what is known: an older version changes
   * nothing, and a revocation stays until the latest expiry heard of.
   */
  raise(key: string, version: number, revoked: boolean, exp: number, now = Date.now()): void {
    const e = this.get(key, now);
    if (e !== undefined && (version < e.version || (version === e.version && (e.revoked || !revoked) && exp <= e.exp))) return;
    const next: Seen = e === undefined ? { version, revoked, exp } : { version, revoked: version > e.version ? revoked : e.revoked || revoked, exp: Math.max(e.exp, exp) };
    this.#entries.set(key, next);
    if (++this.#updates % SWEEP_EVERY === 0) this.#sweep(now);
  }

  /** Keys tracked (for tests and figures). */
  get size(): number {
    return this.#entries.size;
  }

  #sweep(now: number): void {
    for (const [k, e] of this.#entries) if (e.exp <= now) this.#entries.delete(k);
  }
}
