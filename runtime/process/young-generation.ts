/**
 * The size of V8's young generation in svc's worker processes (docs/running.md "Memory").
 *
 * V8 sizes the young generation by the machine's memory, and under proxy load it grows to its
 * largest (two 32 MiB semi-spaces on a 64-bit machine): most of a worker's resident memory beyond
 * its live heap. A request's objects die young whatever the size, so 16 MiB semi-spaces cost
 * little: scavenges come about three times as often and each is shorter, about 1 µs of CPU per
 * request in all, while a worker holds about 65 MiB less under load (docs/benchmarks.md). An
 * operator's own setting wins: `--max-semi-space-size` on the command line or in `NODE_OPTIONS`.
 */

/** MiB per semi-space for a worker, unless the operator chose a size. */
export const WORKER_SEMI_SPACE_MIB = 16;

/** Whether `args` set the semi-space size (V8 reads `-` and `_` alike in flag names). */
function setsSemiSpace(args: readonly string[]): boolean {
  return args.some((a) => /^--max[-_]semi[-_]space[-_]size(=|$)/.test(a));
}

/**
 * The Node options a worker is started with: the primary's own (`execArgv`, as node:cluster passes
 * them on), and the young generation's size unless the primary's options or `NODE_OPTIONS` (which
 * a worker inherits with the environment) already set one.
 */
export function workerExecArgv(execArgv: readonly string[], nodeOptions: string | undefined): string[] {
  const fromEnv = (nodeOptions ?? '').split(/\s+/).filter((a) => a !== '');
  if (setsSemiSpace(execArgv) || setsSemiSpace(fromEnv)) return [...execArgv];
  return [...execArgv, `--max-semi-space-size=${WORKER_SEMI_SPACE_MIB}`];
}
