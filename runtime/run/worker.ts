/**
 * One `svc run --workers` worker (the primary is runtime/run/cluster.ts): waits for its first plan
 * from the primary, serves it, and swaps on every later one after checking it again (schema,
 * checksum, supported settings, listener shape, TLS material). It imports runtime code only, never
 * the compiler, so a worker holds no more than it serves with.
 */
import type { PlanEnvelope } from '../../compiler/plan/types.ts';
import { WorkerStore } from '../databroker/ipc-store.ts';
import type { ForwardState } from '../http/handler.ts';
import { assertSupported } from '../plan/capabilities.ts';
import { parsePlan } from '../plan/load.ts';
import { PlanStore } from '../plan/store.ts';
import type { RunOptions } from './run.ts';
import { listenerChange, serve } from './serve.ts';
import { forwardStateHooks } from './state.ts';

/** Messages from the primary to a worker. */
export type ToWorker = { readonly type: 'plan'; readonly text: string };
/** Messages from a worker to the primary. */
export type ToPrimary = { readonly type: 'ready' } | { readonly type: 'listening'; readonly port: number } | { readonly type: 'swapped'; readonly checksum: string } | { readonly type: 'refused'; readonly error: string };

/** Runs one worker: waits for its first plan, serves it, swaps on every later plan. */
export async function runWorker(options: Omit<RunOptions, 'configPath' | 'planPath'>): Promise<void> {
  let store: PlanStore<ForwardState> | undefined;
  let listening: Awaited<ReturnType<typeof serve>> | undefined;
  let chain: Promise<unknown> = Promise.resolve();
  const first = new Promise<PlanEnvelope>((resolve) => {
    process.on('message', (m: ToWorker) => {
      if (m.type !== 'plan') return;
      // Plans are applied one at a time, in the order the primary sent them.
      chain = chain.then(async () => {
        try {
          const plan = parsePlan(m.text, 'plan from the primary');
          assertSupported(plan); // the primary refused it already: checked again, like the checksum
          if (!store || !listening) return resolve(plan);
          const change = listenerChange(store.current.plan.body.settings, plan.body.settings);
          if (change !== undefined) throw new Error(change);
          const publishTls = await listening.prepareTls(plan.body);
          if (store.swap(plan) === 'swapped') {
            publishTls();
            options.onPlan?.(plan);
          }
          process.send?.({ type: 'swapped', checksum: plan.checksum } satisfies ToPrimary);
        } catch (e) {
          process.send?.({ type: 'refused', error: (e as Error).message } satisfies ToPrimary);
        }
      });
    });
  });
  process.send?.({ type: 'ready' } satisfies ToPrimary);
  const plan = await first;
  store = new PlanStore<ForwardState>(plan, forwardStateHooks({ onUpstreamEvent: (route, event) => options.log?.({ msg: 'upstream', route, event }) }));
  options.onPlan?.(plan);
  // Sessions live in the primary's one store (spec 2.6); this worker reaches it over IPC.
  const sessionStore = new WorkerStore();
  const l = await serve(store, { ...options, workerId: process.pid, sessionStore });
  listening = l;
  process.send?.({ type: 'listening', port: l.address.port } satisfies ToPrimary);
  process.once('SIGTERM', () => {
    void l
      .close()
      .then(() => sessionStore.close())
      .then(() => process.exit(0));
  });
}
