/**
 * One Z3 context per process (the WebAssembly build takes about a second to start), and its stop:
 * the solver's worker threads keep the process alive until `stopZ3` ends them.
 *
 * CONTRACT (one thread in the context at a time): Z3 is not thread-safe within a context, and
 * z3-solver runs each check (`solver.check()`) on a worker thread while its FinalizationRegistry
 * releases garbage-collected terms, models and solvers (`Z3.*_dec_ref`) on the main thread whenever
 * the event loop turns, which it does while a check is awaited. A release during a check corrupts
 * the solver's heap: the search then fails with "memory access out of bounds" on its thread, which
 * z3-solver rethrows on the main thread, where nothing can catch it. {@link holdReleasesDuringChecks}
 * keeps those releases until no check runs, then makes them in order.
 */
import type { Z3 } from './encode.ts';

let started: Promise<{ z: Z3; stop: () => void }> | undefined;

/** The shared context, started on first use. */
export async function z3(): Promise<Z3> {
  started ??= import('z3-solver').then(async ({ init }) => {
    const api = await init();
    holdReleasesDuringChecks(api.em as AsyncCaller, api.Z3 as unknown as Record<string, unknown>);
    return { z: api.Context('main') as Z3, stop: () => api.em.PThread.terminateAllThreads() };
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

/** The part of z3-solver's Emscripten module every call made on a worker thread goes through. */
interface AsyncCaller {
  async_call: (...args: unknown[]) => Promise<unknown>;
}

/**
 * Makes the low-level API hold every `*_dec_ref` call while a call on a worker thread (a check, a
 * simplification, …) is running, and make the held ones once none is (see the file's CONTRACT).
 * Both the high-level API and this wrapper reach these functions through the same objects, looked
 * up at each call, so the wrapping covers every release and every threaded call.
 */
export function holdReleasesDuringChecks(em: AsyncCaller, api: Record<string, unknown>): { readonly running: () => number; readonly held: () => number } {
  let running = 0;
  const held: (() => void)[] = [];
  const release = () => {
    // A release may itself run while another check starts: only what is held when none runs goes.
    while (running === 0 && held.length > 0) held.shift()!();
  };
  for (const name of Object.keys(api)) {
    const f = api[name];
    if (!name.endsWith('dec_ref') || typeof f !== 'function') continue;
    api[name] = (...args: unknown[]) => {
      if (running === 0) return (f as (...a: unknown[]) => unknown)(...args);
      held.push(() => (f as (...a: unknown[]) => unknown)(...args));
      return undefined;
    };
  }
  const call = em.async_call.bind(em);
  em.async_call = async (...args: unknown[]) => {
    running++;
    try {
      return await call(...args);
    } finally {
      running--;
      release();
    }
  };
  return { running: () => running, held: () => held.length };
}
