/**
 * Generations built by provisioners (docs/architecture.md §5 "Generations"), the way Caddy provisions a
 * config: each part of a generation (route index, authentication state, TLS material, upstream
 * sets and pools, …) is made by one provisioner from the plan and the part it replaces. The whole
 * next generation is built before anything is swapped; a provisioner that cannot use the plan
 * throws a coded error and the plan is refused, with the parts already built cleaned up. A part is
 * cleaned up after the last request of its generation, told which part stays in service so that
 * what was taken over (warm pools, health state) is not closed.
 *
 * INVARIANT (build-fully-then-swap): `provisionGeneration` returns a complete generation or
 * throws; nothing it builds is visible to a request before the store swaps it in.
 */
import type { PlanEnvelope } from '../../compiler/plan/types.ts';
import { buildIndex, type PlanIndex } from '../plan/index.ts';
import { SvcError } from '../core/errors.ts';

/** What every generation has, whatever its parts. */
export interface GenerationHead {
  readonly plan: PlanEnvelope;
  readonly index: PlanIndex;
  /** Counts from 1 at the first generation of the process. */
  readonly number: number;
}

/** One generation: the plan, its route index, and one part per provisioner (`gen.forward`, `gen.auth`, …). */
export type Generation<P extends object = Record<never, never>> = GenerationHead & Readonly<P>;

export interface ProvisionContext {
  /**
   * The plan is the one the previous generation serves (same checksum): this generation exists to
   * read files the plan refers to again (certificates renewed in place, docs/running.md "TLS"). A part that
   * reads no such file returns `previous` as it is.
   */
  readonly renewal: boolean;
}

/** Makes one part of a generation and cleans it up. */
export interface Provisioner<T> {
  /** Names the part in logs and refusals. */
  readonly name: string;
  /**
   * Builds the part for `plan`. `previous` is the part of the generation in service (undefined for
   * the first generation of the process): what is unchanged is taken over from it, never mutated.
   * Throws a coded error (`code`) when the plan cannot be served: the plan is refused.
   */
  provision(plan: PlanEnvelope, index: PlanIndex, previous: T | undefined, context: ProvisionContext): T | Promise<T>;
  /**
   * Releases what `part` holds and `keep` does not: called once the part's generation has served
   * its last request (`keep` is the next generation's part, undefined at shutdown), or when a
   * generation built for a refused or aborted plan is dropped (`keep` is the part still in service).
   */
  cleanup(part: T, keep: T | undefined): void | Promise<void>;
  /**
   * Acts on the running process once the part is in service (the listener's default certificate,
   * the names autocert manages): called right after the swap of a generation whose part is not the
   * one it replaces (a part taken over unchanged has nothing to apply), never for a generation that
   * is dropped. The only way a reload reaches what lives outside generations. The first generation
   * of the process replaces nothing (`replaced` undefined): each of its parts goes into service as
   * soon as it is built, so the log settings, first in the list, govern the lines of the others.
   */
  afterSwap?(part: T, replaced: T | undefined): void;
}

/** The provisioners of a generation, one per part; they run in the order of the keys. */
export type Provisioners<P extends object> = { readonly [K in keyof P]: Provisioner<P[K]> };

/** A plan refused while its generation was built: the provisioner's coded error is the `cause`. */
export class PlanRefusedError extends SvcError<'SVC_ERR_PLAN_REFUSED'> {
  constructor(
    /** The provisioner that refused (`auth`, `tls`, `forward`, …). */
    readonly part: string,
    cause: unknown,
  ) {
    super('SVC_ERR_PLAN_REFUSED', cause instanceof Error ? cause.message : String(cause), { cause });
    this.name = 'PlanRefusedError';
  }
}

/** The route index part: compiled matchers and programs of the plan (runtime/plan/index.ts). */
export const indexProvisioner: Provisioner<PlanIndex> = {
  name: 'index',
  provision: (plan, _index, previous, context) => (context.renewal && previous ? previous : buildIndex(plan.body)),
  cleanup: () => undefined,
};

/**
 * Builds the generation of `plan` after `previous`: the route index, then every provisioner in
 * order. Throws `PlanRefusedError` (after cleaning up the parts already built) when one refuses.
 */
export async function provisionGeneration<P extends object>(provisioners: Provisioners<P>, plan: PlanEnvelope, previous: Generation<P> | undefined): Promise<Generation<P>> {
  const context: ProvisionContext = { renewal: previous !== undefined && previous.plan.checksum === plan.checksum };
  const index = indexProvisioner.provision(plan, undefined as never, previous?.index, context) as PlanIndex;
  const parts: Partial<Record<keyof P, unknown>> = {};
  const built: (keyof P)[] = [];
  for (const key of Object.keys(provisioners) as (keyof P)[]) {
    const p = provisioners[key];
    try {
      parts[key] = await p.provision(plan, index, previous?.[key], context);
      built.push(key);
      if (previous === undefined) p.afterSwap?.(parts[key] as P[typeof key], undefined);
    } catch (e) {
      for (const k of built.reverse()) await settle(provisioners[k].cleanup(parts[k] as P[typeof k], previous?.[k]));
      throw new PlanRefusedError(p.name, e);
    }
  }
  return { ...(parts as P), plan, index, number: (previous?.number ?? 0) + 1 } as Generation<P>;
}

/**
 * Cleans up every part of `generation` that `keep` (the generation that stays or follows) does not
 * hold, in the reverse order of provisioning. Never throws: a failed cleanup is reported to `onError`.
 */
export async function cleanupGeneration<P extends object>(provisioners: Provisioners<P>, generation: Generation<P>, keep: Generation<P> | undefined, onError?: (part: string, e: unknown) => void): Promise<void> {
  for (const key of (Object.keys(provisioners) as (keyof P)[]).reverse()) {
    const p = provisioners[key];
    try {
      await p.cleanup(generation[key], keep?.[key]);
    } catch (e) {
      onError?.(p.name, e);
    }
  }
}

/**
 * Runs the after-swap hook of every part of `next` that `replaced` (the generation it replaced)
 * does not hold, in the order of provisioning. Never throws: a failed hook is reported to `onError`.
 */
export function afterSwap<P extends object>(provisioners: Provisioners<P>, next: Generation<P>, replaced: Generation<P>, onError?: (part: string, e: unknown) => void): void {
  for (const key of Object.keys(provisioners) as (keyof P)[]) {
    const p = provisioners[key];
    if (!p.afterSwap || next[key] === replaced[key]) continue;
    try {
      p.afterSwap(next[key], replaced[key]);
    } catch (e) {
      onError?.(p.name, e);
    }
  }
}

async function settle(v: void | Promise<void>): Promise<void> {
  try {
    await v;
  } catch {
    // A cleanup that fails while a refusal is reported does not hide the refusal.
  }
}
