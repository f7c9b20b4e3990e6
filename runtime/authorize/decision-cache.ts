/**
 * The proxy's cache of the authorize service's answers (docs/distributed.md "The proxy's decision cache"): a short-lived,
 * bounded map from what a route's policy reads of a request (policy-reads.ts) to the verdict.
 *
 * INVARIANTS:
 * - keyed by the route's digest (route-digest.ts), so a plan whose route changed never reads an
 *   answer given for the old route, and by the session id, so another user's answer is never used;
 * - a change to a session (sign-out, refresh, revocation: the store's `onChange`) drops every answer
 *   given for it, and a store flush (its change feed was lost) drops everything;
 * - an entry answers for at most `ttlMs`; a verdict that depends on the clock is never stored.
 */
import type { Verdict } from '../core/types.ts';

/** One answer of the authorize service. */
export interface PolicyAnswer {
  readonly verdict: Verdict;
  readonly reasons: readonly string[];
}

interface Entry {
  readonly answer: PolicyAnswer;
  readonly sessionId: string;
  readonly until: number;
}

const DEFAULT_DECISION_TTL_MS = 30_000;
const DEFAULT_DECISION_ENTRIES = 100_000;

export class DecisionCache {
  readonly #entries = new Map<string, Entry>();
  /** Session id → keys answered for it. */
  readonly #bySession = new Map<string, Set<string>>();
  readonly #ttlMs: number;
  readonly #max: number;

  constructor(options: { readonly ttlMs?: number; readonly maxEntries?: number } = {}) {
    this.#ttlMs = options.ttlMs ?? DEFAULT_DECISION_TTL_MS;
    this.#max = options.maxEntries ?? DEFAULT_DECISION_ENTRIES;
  }

  /** The fresh answer stored under `key`, or undefined. */
  get(key: string, nowMs: number): PolicyAnswer | undefined {
    const e = this.#entries.get(key);
    if (e === undefined) return undefined;
    if (e.until <= nowMs) {
      this.#drop(key, e);
      return undefined;
    }
    return e.answer;
  }

  set(key: string, sessionId: string, answer: PolicyAnswer, nowMs: number): void {
    const old = this.#entries.get(key);
    if (old !== undefined) this.#drop(key, old);
    if (this.#entries.size >= this.#max) {
      // The oldest entry goes (Map order is insertion order).
      const first = this.#entries.entries().next().value;
      if (first !== undefined) this.#drop(first[0], first[1]);
    }
    this.#entries.set(key, { answer, sessionId, until: nowMs + this.#ttlMs });
    let keys = this.#bySession.get(sessionId);
    if (keys === undefined) this.#bySession.set(sessionId, (keys = new Set()));
    keys.add(key);
  }

  /** Drops every answer given for `sessionId`. */
  forgetSession(sessionId: string): void {
    const keys = this.#bySession.get(sessionId);
    if (keys === undefined) return;
    this.#bySession.delete(sessionId);
    for (const k of keys) this.#entries.delete(k);
  }

  clear(): void {
    this.#entries.clear();
    this.#bySession.clear();
  }

  get size(): number {
    return this.#entries.size;
  }

  #drop(key: string, e: Entry): void {
    this.#entries.delete(key);
    const keys = this.#bySession.get(e.sessionId);
    keys?.delete(key);
    if (keys?.size === 0) this.#bySession.delete(e.sessionId);
  }
}
