/**
 * The plan store (DESIGN.md §1): one reference to the current generation `{plan, index, …}`.
 * A request reads it once (`acquire`) and uses that snapshot to the end (`release`), so a reload
 * never changes a request in flight. `swap` replaces the reference in one assignment; the old
 * generation is retired once its last request has finished.
 *
 * INVARIANT (one-snapshot): nothing reads `current` twice for one request.
 */
import type { PlanEnvelope } from '../../compiler/plan/types.ts';
import { buildIndex, type PlanIndex } from './index.ts';

/** One loaded plan with everything derived from it. */
export interface Generation<Extra = unknown> {
  readonly plan: PlanEnvelope;
  readonly index: PlanIndex;
  /** Runtime state built per generation (upstream sets, pools); retired with it. */
  readonly extra: Extra;
  /** Counts from 1 at the first plan. */
  readonly number: number;
}

export interface StoreHooks<Extra> {
  /** Builds the per-generation runtime state; `previous` lets unchanged parts be reused. */
  build(plan: PlanEnvelope, index: PlanIndex, previous: Generation<Extra> | undefined): Extra;
  /** Called once a retired generation has no request left. */
  retire(generation: Generation<Extra>, next: Generation<Extra>): void;
}

export type SwapResult = 'swapped' | 'unchanged';

export class PlanStore<Extra = unknown> {
  #current: Generation<Extra>;
  readonly #inFlight = new Map<Generation<Extra>, number>();
  readonly #retiring = new Map<Generation<Extra>, Generation<Extra>>();

  constructor(
    plan: PlanEnvelope,
    private readonly hooks: StoreHooks<Extra>,
  ) {
    const index = buildIndex(plan.body);
    this.#current = { plan, index, extra: hooks.build(plan, index, undefined), number: 1 };
  }

  /** The generation new requests use. For a request, call `acquire` instead. */
  get current(): Generation<Extra> {
    return this.#current;
  }

  /** Takes the current generation for one request; `release` it exactly once when the request ends. */
  acquire(): Generation<Extra> {
    const g = this.#current;
    this.#inFlight.set(g, (this.#inFlight.get(g) ?? 0) + 1);
    return g;
  }

  release(g: Generation<Extra>): void {
    const n = (this.#inFlight.get(g) ?? 0) - 1;
    if (n > 0) {
      this.#inFlight.set(g, n);
      return;
    }
    this.#inFlight.delete(g);
    const next = this.#retiring.get(g);
    if (next) {
      this.#retiring.delete(g);
      this.hooks.retire(g, next);
    }
  }

  /**
   * Makes `plan` current unless its checksum is the current one. The new generation is built fully
   * before the one assignment that publishes it; the old one retires when its requests are done.
   */
  swap(plan: PlanEnvelope): SwapResult {
    const old = this.#current;
    if (plan.checksum === old.plan.checksum) return 'unchanged';
    const index = buildIndex(plan.body);
    const next: Generation<Extra> = { plan, index, extra: this.hooks.build(plan, index, old), number: old.number + 1 };
    this.#current = next;
    if ((this.#inFlight.get(old) ?? 0) === 0) this.hooks.retire(old, next);
    else this.#retiring.set(old, next);
    return 'swapped';
  }

  /** Requests in flight per generation number (for tests and metrics). */
  inFlight(): ReadonlyMap<number, number> {
    return new Map([...this.#inFlight].map(([g, n]) => [g.number, n]));
  }
}
