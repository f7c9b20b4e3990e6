/**
 * One Z3 context per process (the WebAssembly build takes about a second to start), and its stop:
 * the solver's worker threads keep the process alive until `stopZ3` ends them.
 */
import type { Z3 } from './encode.ts';

let started: Promise<{ z: Z3; stop: () => void }> | undefined;

/** The shared context, started on first use. */
export async function z3(): Promise<Z3> {
  started ??= import('z3-solver').then(async ({ init }) => {
    const { Context, em } = await init();
    return { z: Context('main') as Z3, stop: () => em.PThread.terminateAllThreads() };
  });
  return (await started).z;
}

/** Ends the solver's threads, if it was started; the next `z3()` starts a new one. */
export async function stopZ3(): Promise<void> {
  if (!started) return;
  const s = await started;
  started = undefined;
  s.stop();
}
