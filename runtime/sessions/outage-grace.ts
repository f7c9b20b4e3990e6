/**
 * The session-store outage grace (docs/scale-out.md "Failure behaviour"): what one process knows of
 * its session store's reachability, and the bookkeeping of the sessions it serves from its cache
 * while the store cannot be reached (`svc run --store-outage-grace`, default 30 s, 0: off).
 *
 * A Redis outage or a Sentinel failover (10–30 s) used to answer 503 to every signed-in request
 * whose cache entry had expired. With a grace, a session this process verified is served for up to
 * the grace after its cache entry stopped being fresh (session-cache.ts keeps the entry that long),
 * only when the store lookup for it has just failed as unreachable.
 *
 * INVARIANT (bounded grace): a session is served from the grace only
 * - after its own store lookup failed as unreachable (never instead of asking the store), and
 * - while its cache entry holds it: at most `graceMs` after it stopped being fresh, never past the
 *   session's expiry, never after a change or revocation heard from the store, a cache flush, a
 *   sign-out in this process, or the store answering "no session" for it;
 * so a session revoked on another instance during the outage (whose change this process could not
 *   hear) stays usable here for at most the cache's lifetime plus the grace, as it would without the
 *   grace for the cache's lifetime alone.
 * A sign-in never uses it: the store must answer for a new session (service.ts `#signIn`).
 *
 * What is known of the store at once, without asking it ({@link OutageGrace.unreachable}): its own
 * state when it has one (the Redis store's connection: runtime/databroker/redis-store.ts
 * `unreachable`), else what this process's last lookups found: a lookup that failed as unreachable,
 * with none answered since, for {@link OBSERVED_OUTAGE_MS}. That window makes the knowledge expire, so
 * a store that came back is asked again even by a process that sends only sign-ins its way.
 */
import type { GraceObserver } from '../core/session-store.ts';

export type { GraceObserver };

/** The default grace: `--store-outage-grace 30`. */
export const DEFAULT_STORE_OUTAGE_GRACE_MS = 30_000;
/** The largest grace `--store-outage-grace` accepts (10 minutes): a longer one is a revocation delay, not an outage grace. */
export const MAX_STORE_OUTAGE_GRACE_MS = 600_000;
/** How long a failed lookup (with none answered since) says the store is unreachable. */
export const OBSERVED_OUTAGE_MS = 5_000;
/** `Retry-After` (seconds) of a sign-in refused because the store is unreachable. */
export const STORE_RETRY_AFTER_SECONDS = 5;

export interface OutageGraceOptions {
  /** How long past its freshness a cached session may stand in for an unreachable store (0: off). */
  readonly graceMs: number;
  /** The store's own knowledge, read at once: true while it knows it cannot reach its backend. */
  readonly storeUnreachable?: () => boolean;
  readonly observer?: GraceObserver;
  readonly log?: (entry: Record<string, unknown>) => void;
}

/** One process's view of its store's outages, and of the requests it serves from the grace. */
export class OutageGrace {
  readonly graceMs: number;
  readonly #storeUnreachable: () => boolean;
  readonly #observer: GraceObserver | undefined;
  readonly #log: ((entry: Record<string, unknown>) => void) | undefined;
  /** When a lookup last failed as unreachable / last got an answer (ms since the epoch). */
  #failedAt = Number.NEGATIVE_INFINITY;
  #answeredAt = Number.NEGATIVE_INFINITY;
  /** Requests served from the grace in the outage under way (0: the grace is not in use). */
  #served = 0;
  #total = 0;

  constructor(options: OutageGraceOptions) {
    if (!Number.isFinite(options.graceMs) || options.graceMs < 0 || options.graceMs > MAX_STORE_OUTAGE_GRACE_MS) {
      throw new RangeError(`the store outage grace must be 0 to ${MAX_STORE_OUTAGE_GRACE_MS} ms`);
    }
    this.graceMs = options.graceMs;
    this.#storeUnreachable = options.storeUnreachable ?? (() => false);
    this.#observer = options.observer;
    this.#log = options.log;
  }

  /** Requests served from the grace since start (tests). */
  get servedTotal(): number {
    return this.#total;
  }

  /** A lookup reached the store and got its answer: an outage in which the grace was used ends. */
  answered(nowMs: number): void {
    this.#answeredAt = Math.max(this.#answeredAt, nowMs);
    if (this.#served === 0) return;
    this.#log?.({ msg: 'session store answers again: sessions are verified again; the outage grace ends', servedFromGrace: this.#served });
    this.#served = 0;
  }

  /** A lookup failed because the store could not be reached. */
  failed(nowMs: number): void {
    this.#failedAt = Math.max(this.#failedAt, nowMs);
  }

  /** A request was served from the grace: counted, and the first of an outage logged (warn). */
  served(): void {
    this.#total++;
    if (this.#served++ === 0) {
      this.#log?.({
        level: 'warn',
        msg: 'session store unreachable: serving sessions this process verified recently from the outage grace',
        graceMs: this.graceMs,
        impact: `signed-in users whose session this process had cached keep working for up to ${Math.round(this.graceMs / 1000)} s past the cache entry; a session revoked elsewhere meanwhile stays usable here that long; sign-ins answer 503`,
      });
    }
    try {
      this.#observer?.servedStale();
    } catch {
      // A metric must never fail a request.
    }
  }

  /** True when the store is known unreachable now, without asking it (see the module comment). */
  unreachable(nowMs: number): boolean {
    if (this.#storeUnreachable()) return true;
    return this.#failedAt > this.#answeredAt && nowMs - this.#failedAt < OBSERVED_OUTAGE_MS;
  }
}
