/**
 * The solver's context is used by one thread at a time: releases of garbage-collected terms
 * (`*_dec_ref`, from z3-solver's FinalizationRegistry on the main thread) wait while a check runs on
 * its worker thread, and are made, in order, once none runs (cli/diff/exact/z3.ts).
 */
import { describe, expect, it } from 'vitest';
import { holdReleasesDuringChecks, stopZ3, z3 } from '../../../../cli/diff/exact/z3.ts';

/** A stand-in for z3-solver's module: threaded calls finish when the test says so. */
function fakeSolver() {
  const calls: string[] = [];
  const finishers: (() => void)[] = [];
  const em = {
    async_call: (name: unknown) =>
      new Promise<unknown>((resolve) => {
        calls.push(`start ${String(name)}`);
        finishers.push(() => {
          calls.push(`end ${String(name)}`);
          resolve(name);
        });
      }),
  };
  const api: Record<string, unknown> = {
    dec_ref: (_c: number, a: number) => void calls.push(`dec_ref ${a}`),
    solver_dec_ref: (_c: number, s: number) => void calls.push(`solver_dec_ref ${s}`),
    mk_true: () => void calls.push('mk_true'),
  };
  return { em, api, calls, finish: () => finishers.shift()!() };
}

describe('holdReleasesDuringChecks', () => {
  it('makes a release at once when no check runs', () => {
    const f = fakeSolver();
    holdReleasesDuringChecks(f.em, f.api);
    (f.api['dec_ref'] as (c: number, a: number) => void)(1, 7);
    expect(f.calls).toEqual(['dec_ref 7']);
  });

  it('holds releases while a check runs and makes them, in order, when the last one ends', async () => {
    const f = fakeSolver();
    const guard = holdReleasesDuringChecks(f.em, f.api);
    const first = f.em.async_call('check-a');
    const second = f.em.async_call('check-b');
    (f.api['dec_ref'] as (c: number, a: number) => void)(1, 1);
    (f.api['solver_dec_ref'] as (c: number, s: number) => void)(1, 2);
    (f.api['mk_true'] as () => void)(); // not a release: never held
    expect(guard.held()).toBe(2);
    f.finish();
    await first;
    expect(f.calls).not.toContain('dec_ref 1'); // check-b still runs
    f.finish();
    await second;
    expect(f.calls).toEqual(['start check-a', 'start check-b', 'mk_true', 'end check-a', 'end check-b', 'dec_ref 1', 'solver_dec_ref 2']);
    expect(guard.running()).toBe(0);
    expect(guard.held()).toBe(0);
  });

  it('makes the held releases even when the check fails', async () => {
    const f = fakeSolver();
    const failing = { async_call: () => Promise.reject(new Error('check failed')) };
    holdReleasesDuringChecks(failing, f.api);
    const check = failing.async_call();
    (f.api['dec_ref'] as (c: number, a: number) => void)(1, 3);
    await expect(check).rejects.toThrow('check failed');
    expect(f.calls).toEqual(['dec_ref 3']);
  });
});

describe('the shared context', () => {
  it('still answers checks with the guard in place', async () => {
    const z = await z3();
    try {
      const x = z.Int.const('x');
      const solver = new z.Solver();
      solver.add(x.gt(2), x.lt(4));
      expect(await solver.check()).toBe('sat');
      expect(solver.model().eval(x).toString()).toBe('3');
      const none = new z.Solver();
      none.add(x.gt(2), x.lt(3));
      expect(await none.check()).toBe('unsat');
    } finally {
      await stopZ3();
    }
  }, 30_000);
});
