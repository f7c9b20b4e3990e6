/**
 * The one reload path (docs/architecture.md §1, §5 "Generations") of the single process, the cluster primary
 * and its workers: load the plan → check the listener shape and the autocert settings (both fixed
 * at start) → build the next generation fully → (a worker: wait for the primary's decision) → swap
 * once; the old generation is cleaned up after its last request (runtime/generation/plan-store.ts). Any
 * failure keeps the plan in service and says why.
 *
 * An unchanged checksum swaps no plan (`config unchanged; plan <checksum> kept`), but it is still
 * prepared as a renewal: TLS files renewed in place are read again (docs/running.md "TLS"), and a cluster's
 * workers do the same. A renewal that finds the files as they were keeps the generation in service,
 * number included; only renewed TLS material makes a new one.
 *
 * What "build the next generation" means is the caller's `prepare`: this process's provisioners
 * (runtime/generation/generation.ts), or, on the cluster primary, every worker's (runtime/process/cluster.ts),
 * which commits only when every worker has accepted.
 *
 * INVARIANT (one-reload-at-a-time): reloads run one after the other, in the order they were asked
 * for, so a burst of changes ends on the last file contents and a generation is always prepared
 * against the one that is still in service when it is committed.
 */
import type { PlanEnvelope } from '../../compiler/plan/types.ts';
import { SvcError } from '../core/errors.ts';
import type { Prepared } from './generation.ts';
import { grpcChange, listenerChange } from './restart-checks.ts';
import { storageChange } from '../databroker/open-store.ts';
import { autocertChange } from '../tls/acme/start.ts';

export type ReloadResult = { readonly ok: true; readonly result: 'swapped' | 'unchanged'; readonly checksum: string } | { readonly ok: false; readonly error: string };

export interface ReloadSteps {
  /** Loads the next plan: compiles the config, reads a plan file (`loadForRun`). Throws to fail. */
  load(): PlanEnvelope | Promise<PlanEnvelope>;
  /** The plan in service. */
  current(): PlanEnvelope;
  /** Builds the next generation without serving it. Throws (a coded error) to refuse the plan. */
  prepare(plan: PlanEnvelope): Promise<Prepared>;
  readonly log?: (entry: Record<string, unknown>) => void;
}

export interface ReloadCall {
  /** Loads this plan instead of `steps.load` (a worker: the plan text the primary sent). */
  readonly load?: () => PlanEnvelope | Promise<PlanEnvelope>;
  /**
   * Asked once the generation is built: resolve true to swap it in, false to drop it (a worker
   * waits for the primary's commit or abort here). Without it, a built generation is swapped in.
   */
  readonly decide?: (plan: PlanEnvelope) => Promise<boolean>;
}

export interface Reloader {
  reload(call?: ReloadCall): Promise<ReloadResult>;
  /** The last reload's outcome (for `config_last_reload_success`). */
  last(): ReloadResult | undefined;
}

/** The error of a reload the primary aborted because another worker refused the plan. */
export const ABORTED = 'the reload was aborted: another worker refused the plan';

/** Creates the reload of one process. */
export function createReloader(steps: ReloadSteps): Reloader {
  let chain: Promise<unknown> = Promise.resolve();
  let last: ReloadResult | undefined;
  const once = async (call: ReloadCall): Promise<ReloadResult> => {
    let prepared: Prepared | undefined;
    try {
      const plan = await (call.load ?? steps.load)();
      const current = steps.current();
      const change =
        listenerChange(current.body.settings, plan.body.settings) ?? storageChange(current.body.settings, plan.body.settings) ?? autocertChange(current.body.settings, plan.body.settings) ?? grpcChange(current.body.settings, plan.body.settings);
      if (change !== undefined) throw new SvcError('SVC_ERR_RESTART_REQUIRED', change);
      prepared = await steps.prepare(plan);
      if (call.decide && !(await call.decide(plan))) {
        prepared.abort();
        return { ok: false, error: ABORTED };
      }
      prepared.commit();
      const result = plan.checksum === current.checksum ? 'unchanged' : 'swapped';
      if (result === 'swapped') steps.log?.({ msg: 'reload', result, checksum: plan.checksum });
      // The generation is kept unless TLS files renewed in place were read (a plan file served as is).
      else steps.log?.({ msg: `config unchanged; plan ${plan.checksum} kept`, result, checksum: plan.checksum, ...(prepared.changed ? { tlsRenewed: true } : {}) });
      return { ok: true, result, checksum: plan.checksum };
    } catch (e) {
      prepared?.abort();
      const code = (e as { code?: unknown }).code;
      steps.log?.({ msg: 'reload failed; keeping the current plan', error: (e as Error).message, ...(typeof code === 'string' ? { code } : {}), checksum: steps.current().checksum });
      return { ok: false, error: (e as Error).message };
    }
  };
  return {
    reload: (call = {}) => {
      const next = chain.then(() => once(call)).then((r) => (last = r));
      chain = next;
      return next;
    },
    last: () => last,
  };
}
