/**
 * The identity manager's figures as they are counted (docs/observability.md "Metric reference"; read through {@link
 * IdentityFiguresCounter.figures} by the metrics exporter). Counters only grow; a timestamp is the
 * clock's time of the last event of its kind.
 */
import { NO_IDENTITY_FIGURES, type IdentityManagerFigures } from '../core/identity-figures.ts';

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** The kinds of refresh counted: a session's tokens, a user's profile, a user's groups. */
export type RefreshKind = 'session' | 'user' | 'userGroup';

export class IdentityFiguresCounter {
  readonly #now: () => number;
  readonly #f: Mutable<IdentityManagerFigures> = { ...NO_IDENTITY_FIGURES };

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** A snapshot (a new frozen object each call). */
  figures(): IdentityManagerFigures {
    return Object.freeze({ ...this.#f });
  }

  /** One refresh of `kind` ended, well or not. */
  count(kind: RefreshKind, ok: boolean): void {
    const now = this.#now();
    if (ok) {
      this.#f[`${kind}RefreshSuccess`]++;
      this.#f[`${kind}RefreshSuccessMs`] = now;
    } else {
      this.#f[`${kind}RefreshError`]++;
      this.#f[`${kind}RefreshErrorMs`] = now;
    }
  }

  /** A directory refresh run ended (`last_refresh_timestamp`). */
  runEnded(): void {
    this.#f.lastRefreshMs = this.#now();
  }
}
