/**
 * `svc run FILE` (a config or a plan, told apart as `svc explain` and `svc diff` do) or
 * `svc run -config FILE`: serve until SIGINT/SIGTERM, reloading on change. Logs are JSON lines on
 * standard output (cli/run-log.ts), following the plan's log settings; the compiler's warnings go
 * to standard error as text. A first plan that fails to load, or uses a setting svc run does not
 * implement, exits 1 with the diagnostics.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { pino } from 'pino';
import type { PlanEnvelope } from '../compiler/plan/types.ts';
import { partialUses } from '../runtime/plan/capabilities.ts';
import { createRunLog } from './run-log.ts';

export interface RunCommandOptions {
  readonly config?: string;
  /** `host:port` overriding the plan's `address` (tests, trying svc out). */
  readonly listen?: string;
  /** Test mode: name the plan checksum in every response (`x-svc-plan-checksum`). */
  readonly exposeChecksum?: boolean;
  /** Worker processes sharing the listener; default one per core; 1 serves in this process. */
  readonly workers?: string;
}

/** Runs svc; resolves with the exit code once it stops. */
export async function runCommand(file: string | undefined, opts: RunCommandOptions, io: { out: (s: string) => void; err: (s: string) => void }): Promise<number> {
  if ((file === undefined) === (opts.config === undefined)) {
    io.err('error: give a config or plan file, or -config FILE (not both)\n');
    return 2;
  }
  let listen: { host: string; port: number } | undefined;
  if (opts.listen !== undefined) {
    const m = /^(.*):(\d{1,5})$/.exec(opts.listen);
    if (!m || Number(m[2]) > 65535) {
      io.err(`error: --listen \`${opts.listen}\` is not host:port\n`);
      return 2;
    }
    listen = { host: m[1]!.replace(/^\[(.*)\]$/, '$1'), port: Number(m[2]) };
  }
  const workers = opts.workers === undefined ? availableParallelism() : Number(opts.workers);
  if (!Number.isInteger(workers) || workers < 1 || workers > 256) {
    io.err(`error: --workers \`${opts.workers}\` is not a number of processes (1-256)\n`);
    return 2;
  }
  // Buffered, asynchronous writes (4 KiB): one write(2) per request line would cost more than the
  // proxying itself. Flushed when svc stops.
  const destination = pino.destination({ dest: 1, sync: false, minLength: 4096 });
  const logs = createRunLog(destination, { color: process.stdout.isTTY === true && !process.env['NO_COLOR'] });
  process.once('exit', () => destination.flushSync());
  // Lines never wait more than half a second, and startup lines go out at once (announce).
  setInterval(() => destination.flush(), 500).unref();
  const worker = process.env['SVC_CLUSTER_WORKER'] === '1';
  // Log settings follow the plan served; what a plan's settings do only partly is said once, by the
  // process that loads plans (not by every worker).
  const said = new Set<string>();
  const onPlan = (plan: PlanEnvelope) => {
    logs.apply(plan.body.settings.logging);
    if (worker) return;
    for (const entry of partialUses(plan)) {
      const key = JSON.stringify(entry);
      if (said.has(key)) continue;
      said.add(key);
      logs.log(entry);
    }
  };
  const common = { ...(listen ? { listen } : {}), ...(opts.exposeChecksum ? { exposeChecksum: true } : {}), log: logs.log, onPlan };
  if (worker) {
    // A worker loads runtime code only (no compiler): it serves plans the primary compiled.
    const { runWorker } = await import('../runtime/run/worker.ts');
    await runWorker(common);
    await new Promise<never>(() => undefined); // serves until the primary stops it
  }

  let source: { planPath: string } | { configPath: string };
  if (opts.config !== undefined) source = { configPath: opts.config };
  else {
    let text: string;
    try {
      text = readFileSync(file!, 'utf8');
    } catch (e) {
      io.err(`error: cannot read \`${file}\`: ${(e as Error).message}\n`);
      return 2;
    }
    const { looksLikePlan } = await import('./plan-input.ts');
    source = looksLikePlan(text) ? { planPath: file! } : { configPath: file! };
  }
  // The compiler's warnings, at start and whenever a recompiled config warns differently.
  let warned = '';
  const onWarnings = (text: string) => {
    if (text !== warned && text !== '') io.err(text);
    warned = text;
  };

  const { run, RunError } = await import('../runtime/run/run.ts');
  try {
    if (workers > 1) {
      const { runPrimary } = await import('../runtime/run/cluster.ts');
      const primary = await runPrimary({ ...source, ...common, onWarnings, workers }, process.argv.slice(2));
      logs.announce({ msg: 'listening', workers, port: primary.port });
      await new Promise<void>((resolve) => {
        process.once('SIGINT', () => resolve());
        process.once('SIGTERM', () => resolve());
      });
      await primary.stop();
      return 0;
    }
    const running = await run({ ...source, ...common, onWarnings });
    const a = running.listening.address;
    logs.announce({ msg: 'listening', address: `${a.host}:${a.port}`, checksum: running.store.current.plan.checksum, routes: running.store.current.plan.body.routes.length });
    await new Promise<void>((resolve) => {
      const stop = () => resolve();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
    await running.close();
    return 0;
  } catch (e) {
    if (e instanceof RunError) {
      io.err(`${e.message.replace(/\n?$/, '\n')}error ${e.code}: svc cannot start\n`);
      return 1;
    }
    io.err(`error: ${(e as Error).message}\n`);
    return 2;
  }
}
