/**
 * `svc run PLAN` or `svc run -config FILE`: serve until SIGINT/SIGTERM, reloading on change.
 * Logs are JSON lines on standard output (pino); the first plan failing to load exits 1 with the
 * diagnostics.
 */
import { availableParallelism } from 'node:os';
import { pino } from 'pino';
import { isRequestEntry, requestLine } from './access-line.ts';

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
export async function runCommand(planPath: string | undefined, opts: RunCommandOptions, io: { out: (s: string) => void; err: (s: string) => void }): Promise<number> {
  if ((planPath === undefined) === (opts.config === undefined)) {
    io.err('error: give either a plan file or -config FILE\n');
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
  const logger = pino({ base: { service: 'svc' } }, destination);
  process.once('exit', () => destination.flushSync());
  // Lines never wait more than half a second, and startup lines go out at once (below).
  setInterval(() => destination.flush(), 500).unref();
  // The per-request line is formatted by hand in pino's format (cli/access-line.ts); the rest by pino.
  const log = (entry: Record<string, unknown>) => {
    if (isRequestEntry(entry) && logger.isLevelEnabled('info')) destination.write(requestLine(entry, Date.now()));
    else logger.info(entry);
  };
  const announce = (entry: Record<string, unknown>) => {
    logger.info(entry);
    destination.flush();
  };
  const common = { ...(listen ? { listen } : {}), ...(opts.exposeChecksum ? { exposeChecksum: true } : {}), log };
  if (process.env['SVC_CLUSTER_WORKER'] === '1') {
    // A worker loads runtime code only (no compiler): it serves plans the primary compiled.
    const { runWorker } = await import('../runtime/run/worker.ts');
    await runWorker(common);
    await new Promise<never>(() => undefined); // serves until the primary stops it
  }
  const { run, RunError } = await import('../runtime/run/run.ts');
  try {
    if (workers > 1) {
      const { runPrimary } = await import('../runtime/run/cluster.ts');
      const primary = await runPrimary(
        { ...(planPath !== undefined ? { planPath } : {}), ...(opts.config !== undefined ? { configPath: opts.config } : {}), ...common, workers },
        process.argv.slice(2),
      );
      announce({ msg: 'listening', workers, port: primary.port });
      await new Promise<void>((resolve) => {
        process.once('SIGINT', () => resolve());
        process.once('SIGTERM', () => resolve());
      });
      await primary.stop();
      return 0;
    }
    const running = await run({
      ...(planPath !== undefined ? { planPath } : {}),
      ...(opts.config !== undefined ? { configPath: opts.config } : {}),
      ...(listen ? { listen } : {}),
      ...(opts.exposeChecksum ? { exposeChecksum: true } : {}),
      log,
    });
    const a = running.listening.address;
    announce({ msg: 'listening', address: `${a.host}:${a.port}`, checksum: running.store.current.plan.checksum, routes: running.store.current.plan.body.routes.length });
    await new Promise<void>((resolve) => {
      const stop = () => resolve();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
    await running.close();
    return 0;
  } catch (e) {
    if (e instanceof RunError) {
      io.err(`${e.message}\nerror ${e.code}: svc cannot start\n`);
      return 1;
    }
    io.err(`error: ${(e as Error).message}\n`);
    return 2;
  }
}
