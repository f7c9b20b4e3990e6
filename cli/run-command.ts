/**
 * `svc run PLAN` or `svc run -config FILE`: serve until SIGINT/SIGTERM, reloading on change.
 * Logs are JSON lines on standard output (pino); the first plan failing to load exits 1 with the
 * diagnostics.
 */
import { pino } from 'pino';
import { run, RunError } from '../runtime/run/run.ts';

export interface RunCommandOptions {
  readonly config?: string;
  /** `host:port` overriding the plan's `address` (tests, trying svc out). */
  readonly listen?: string;
  /** Test mode: name the plan checksum in every response (`x-svc-plan-checksum`). */
  readonly exposeChecksum?: boolean;
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
  const logger = pino({ base: { service: 'svc' } });
  try {
    const running = await run({
      ...(planPath !== undefined ? { planPath } : {}),
      ...(opts.config !== undefined ? { configPath: opts.config } : {}),
      ...(listen ? { listen } : {}),
      ...(opts.exposeChecksum ? { exposeChecksum: true } : {}),
      log: (entry) => logger.info(entry),
    });
    const a = running.listening.address;
    logger.info({ msg: 'listening', address: `${a.host}:${a.port}`, checksum: running.store.current.plan.checksum, routes: running.store.current.plan.body.routes.length });
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
