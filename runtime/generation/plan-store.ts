/**
 * The plan store (docs/architecture.md §1): one reference to the current generation (runtime/generation/provision.ts).
 * A request reads it once (`acquire`) and uses that snapshot to the end (`release`), so a reload
 * never changes a request in flight. `swap` replaces the reference in one assignment with a
 * generation built fully beforehand; the old generation is retired once its last request has finished.
 *
 * INVARIANT (one-snapshot): nothing reads `current` twice for one request.
 */
import type { Generation } from './provision.ts';

export interface StoreOptions<P extends object> {
  /** Called once a replaced generation has no request left, with the generation that replaced it. */
  retire(generation: Generation<P>, next: Generation<P>): void;
}

export class PlanStore<P extends object = Record<never, never>> {
  #current: Generation<P>;
  readonly #inFlight = new Map<Generation<P>, number>();
  /** Replaced generations in the order they were replaced, each with its successor. */
  readonly #retiring: { readonly g: Generation<P>; readonly next: Generation<P> }[] = [];

  constructor(
    first: Generation<P>,
    private readonly options: StoreOptions<P>,
  ) {
    this.#current = first;
  }

  /** The generation new requests use. For a request, call `acquire` instead. */
  get current(): Generation<P> {
    return this.#current;
  }

  /** Takes the current generation for one request; `release` it exactly once when the request ends. */
  acquire(): Generation<P> {
    const g = this.#current;
    this.#inFlight.set(g, (this.#inFlight.get(g) ?? 0) + 1);
    return g;
  }

  release(g: Generation<P>): void {
    const n = (this.#inFlight.get(g) ?? 0) - 1;
    if (n > 0) {
      this.#inFlight.set(g, n);
      return;
    }
    this.#inFlight.delete(g);
    this.#drain();
  }

  /**
   * Retires replaced generations, oldest first, while the oldest has no request left.
   *
   * INVARIANT (retire-in-order): a generation is retired only after every older one. A part taken
   * over by generation n from n-1 and dropped by n+1 is released when n retires; were n retired
   * while n-1 still served a request, that request would lose the part (a closed pool).
   */
  #drain(): void {
    while (this.#retiring.length > 0 && (this.#inFlight.get(this.#retiring[0]!.g) ?? 0) === 0) {
      const { g, next } = this.#retiring.shift()!;
      this.options.retire(g, next);
    }
  }

  /**
   * Makes `next` current in one assignment. The replaced generation retires when its requests are
   * done. `next` must have been built after the current one (its parts may be taken over from it).
   */
  swap(next: Generation<P>): void {
    const old = this.#current;
    if (next === old) return;
    this.#current = next;
    this.#retiring.push({ g: old, next });
    this.#drain();
  }

  /** Requests in flight per generation number (for tests and metrics). */
  inFlight(): ReadonlyMap<number, number> {
    return new Map([...this.#inFlight].map(([g, n]) => [g.number, n]));
  }
}
