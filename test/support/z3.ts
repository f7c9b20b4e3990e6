/**
 * The solver for a test file: started before its tests (about a second: WebAssembly), its threads
 * ended after them (they keep the process alive otherwise). Returns the context's getter.
 */
import { afterAll, beforeAll } from 'vitest';
import type { Z3 } from '../../cli/diff/exact/encode.ts';
import { stopZ3, z3 } from '../../cli/diff/exact/z3.ts';

export function useZ3(): () => Z3 {
  let z: Z3 | undefined;
  beforeAll(async () => {
    z = await z3();
  }, 30_000);
  afterAll(async () => {
    await stopZ3();
  });
  return () => {
    if (!z) throw new Error('bug: the solver is used before beforeAll started it');
    return z;
  };
}
