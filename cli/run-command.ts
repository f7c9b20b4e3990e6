/**
 * `svc run FILE` (a config or a plan, told apart as `svc explain` and `svc diff` do) or
 * `svc run -config FILE`: serve until SIGINT/SIGTERM, reloading on change. Logs are JSON lines on
 * standard output (runtime/observe/log/run-log.ts), following the plan's log settings; spans go to
 * the plan's tracing provider (runtime/observe/trace/tracing.ts); the compiler's warnings are JSON
 * lines among them (run-diagnostics.ts), or text on standard error with `svc_debug`, at start and on
 * each reload that compiles the config. A first plan that fails to load, or uses a setting svc run
 * does not implement, exits 1 with the diagnostics as JSON lines (`{level, code, name, at, msg}`,
 * then `svc cannot start`), or as text on standard error at a terminal or with `SVC_DEBUG`; a config
 * file that cannot be read exits 2, as `svc compile` does (docs/running.md, "Exit codes").
 *
 * Stopping (runtime/process/stop-signals.ts): the first SIGTERM/SIGINT turns readiness to 503 `draining`,
 * keeps accepting connections for `--shutdown-delay` seconds (default 5), then drains (up to
 * `--drain-timeout` seconds, default 25), closes tunnels, flushes logs and spans and exits 0; a
 * second exits at once. With `--workers N` the primary asks every worker to stop and waits for them.
 * SIGHUP reloads (the same path as a file change); a worker ignores it (the primary reloads).
 *
 * `--shadow FILE`: a candidate plan (or config, compiled) that decides every request a second time;
 * where it differs, the access line says so (`shadow`) and `svc_shadow_decisions_total` counts it;
 * only the served plan's decision acts. Reloaded with the plan; a candidate that fails to load never
 * stops svc (docs/running.md "Shadow plans"). All-in-one only: refused in the other roles.
 *
 * `--store-outage-grace` seconds (default 30, 0: off): while the session store cannot be reached, a
 * session this process verified is still served for that long past its cache entry
 * (runtime/sessions/outage-grace.ts, docs/scale-out.md "Failure behaviour"). An operational knob like
 * `--shutdown-delay`, not a config key; each worker reads it from the arguments the primary passes on.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import type { Diagnostic } from '../compiler/index.ts';
import type { PlanEnvelope, PlanSettings } from '../compiler/plan/types.ts';
import { SvcError } from '../runtime/core/errors.ts';
import { partialUses } from '../runtime/plan/capabilities.ts';
import { chunkedDestination } from '../runtime/observe/log/chunked-destination.ts';
import { createRunLog } from '../runtime/observe/log/run-log.ts';
import { loadGrpcModule, logGrpcLibraryThrough } from '../runtime/grpc/library-log.ts';
import { createTracingSwitch } from '../runtime/observe/trace/tracing.ts';
import { DEFAULT_DRAIN_TIMEOUT_MS, DEFAULT_SHUTDOWN_DELAY_MS, onReloadSignal, onStopSignals } from '../runtime/process/stop-signals.ts';
import { DEFAULT_STORE_OUTAGE_GRACE_MS, MAX_STORE_OUTAGE_GRACE_MS } from '../runtime/sessions/outage-grace.ts';

export interface RunCommandOptions {
  readonly config?: string;
  /** `host:port` overriding the plan's `address` (tests, trying svc out). */
  readonly listen?: string;
  /** `host:port` overriding the plan's `grpc_address` (tests: port 0). */
  readonly grpcListen?: string;
  /** Test mode: name the plan checksum in every response (`x-svc-plan-checksum`). */
  readonly exposeChecksum?: boolean;
  /** Worker processes sharing the listener; default one per core; 1 serves in this process. */
  readonly workers?: string;
  /** Seconds requests in flight may take to finish on SIGTERM/SIGINT (default 25). */
  readonly drainTimeout?: string;
  /** Seconds svc keeps accepting connections, readiness failing, after SIGTERM/SIGINT and before the drain (default 5; 0: none). */
  readonly shutdownDelay?: string;
  /** Seconds a session this process verified is still served past its cache entry while the session store is unreachable (default 30; 0: off). */
  readonly storeOutageGrace?: string;
  /** A candidate plan or config decided beside the served plan, never enforced (docs/running.md "Shadow plans"). */
  readonly shadow?: string;
}

/** Runs svc; resolves with the exit code once it stops. */
export async function runCommand(file: string | undefined, opts: RunCommandOptions, io: { out: (s: string) => void; err: (s: string) => void }): Promise<number> {
  if ((file === undefined) === (opts.config === undefined)) {
    io.err('error: give a config or plan file, or -config FILE (not both)\n');
    return 2;
  }
  const hostPort = (flag: string, value: string | undefined): { host: string; port: number } | undefined | null => {
    if (value === undefined) return undefined;
    const m = /^(.*):(\d{1,5})$/.exec(value);
    if (!m || Number(m[2]) > 65535) {
      io.err(`error: ${flag} \`${value}\` is not host:port\n`);
      return null;
    }
    return { host: m[1]!.replace(/^\[(.*)\]$/, '$1'), port: Number(m[2]) };
  };
  const listen = hostPort('--listen', opts.listen);
  const grpcListen = hostPort('--grpc-listen', opts.grpcListen);
  if (listen === null || grpcListen === null) return 2;
  const workers = opts.workers === undefined ? availableParallelism() : Number(opts.workers);
  if (!Number.isInteger(workers) || workers < 1 || workers > 256) {
    io.err(`error: --workers \`${opts.workers}\` is not a number of processes (1-256)\n`);
    return 2;
  }
  const drainTimeoutMs = opts.drainTimeout === undefined ? DEFAULT_DRAIN_TIMEOUT_MS : Number(opts.drainTimeout) * 1000;
  if (!Number.isFinite(drainTimeoutMs) || drainTimeoutMs < 0 || drainTimeoutMs > 3_600_000) {
    io.err(`error: --drain-timeout \`${opts.drainTimeout}\` is not a number of seconds (0-3600)\n`);
    return 2;
  }
  const shutdownDelayMs = opts.shutdownDelay === undefined ? DEFAULT_SHUTDOWN_DELAY_MS : Number(opts.shutdownDelay) * 1000;
  if (opts.shutdownDelay?.trim() === '' || !Number.isFinite(shutdownDelayMs) || shutdownDelayMs < 0 || shutdownDelayMs > 3_600_000) {
    io.err(`error: --shutdown-delay \`${opts.shutdownDelay}\` is not a number of seconds (0-3600)\n`);
    return 2;
  }
  const storeOutageGraceMs = opts.storeOutageGrace === undefined ? DEFAULT_STORE_OUTAGE_GRACE_MS : Number(opts.storeOutageGrace) * 1000;
  if (opts.storeOutageGrace?.trim() === '' || !Number.isFinite(storeOutageGraceMs) || storeOutageGraceMs < 0 || storeOutageGraceMs > MAX_STORE_OUTAGE_GRACE_MS) {
    io.err(`error: --store-outage-grace \`${opts.storeOutageGrace}\` is not a number of seconds (0-${MAX_STORE_OUTAGE_GRACE_MS / 1000})\n`);
    return 2;
  }
  // Buffered, asynchronous writes (16 KiB chunks): one write(2) per request line would cost more
  // than the proxying itself. Flushed on a timer and when svc stops.
  const destination = chunkedDestination(1);
  const logs = createRunLog(destination, { color: process.stdout.isTTY === true && !process.env['NO_COLOR'] });
  process.once('exit', () => logs.flushSync());
  logGrpcLibraryThrough(logs.log);
  // SIGHUP reloads; until svc serves (and in a worker) it must not kill the process (Node's default).
  const onHangup = onReloadSignal(() => logs.log({ level: 'warn', msg: 'SIGHUP before svc serves a plan: ignored' }));
  // Set by the first stop signal: a SIGHUP during the stop reloads nothing.
  let stopping = false;
  const reloadOnHangup = (reload: () => Promise<unknown>) => () => {
    if (stopping) return logs.log({ level: 'warn', msg: 'SIGHUP while stopping: ignored' });
    logs.log({ msg: 'SIGHUP: reloading the configuration' });
    // The reload logs its outcome itself (`reload`, or `reload failed; keeping the current plan`).
    void reload().catch((e: unknown) => logs.log({ level: 'error', msg: 'reload failed; keeping the current plan', error: (e as Error).message }));
  };
  // Every line handed to the destination written, in order: a synchronous flush while an
  // asynchronous write is in flight would put the buffered lines before it.
  const written = () => new Promise<void>((resolve) => destination.flush(() => resolve()));
  const tracing = createTracingSwitch(logs.log);
  // Lines never wait more than half a second, and startup lines go out at once (announce).
  setInterval(() => destination.flush(), 500).unref();
  const worker = process.env['SVC_CLUSTER_WORKER'] === '1';
  // Log settings follow the plan served; what a plan's settings do only partly is said once, by the
  // process that loads plans (not by every worker).
  const said = new Set<string>();
  // Whether no plan has been served yet (the compiler's first warnings come before it).
  let noPlanYet = true;
  const logSettings = {
    apply: (settings: PlanSettings) => {
      noPlanYet = false;
      logs.apply(settings);
    },
  };
  const notices = (plan: PlanEnvelope) => {
    for (const entry of partialUses(plan)) {
      const key = JSON.stringify(entry);
      if (said.has(key)) continue;
      said.add(key);
      logs.log(entry);
    }
  };
  const common = { storeOutageGraceMs, ...(opts.shadow !== undefined ? { shadow: opts.shadow } : {}), ...(listen ? { listen } : {}), ...(grpcListen ? { grpcListen } : {}), ...(opts.exposeChecksum ? { exposeChecksum: true } : {}), log: logs.log, access: logs.access, tracing, logSettings, ...(worker ? {} : { notices }) };
  // What a graceful stop ends with, in every process: the spans not yet sent, then the logs.
  const flush = async () => {
    await tracing.shutdown().catch(() => undefined);
    // The lines in flight first: a synchronous flush cannot wait for them (chunked-destination.ts).
    await written();
    logs.flushSync();
  };
  if (worker) {
    // A worker loads runtime code only (no compiler): it serves plans the primary compiled. It
    // stops when the primary asks (IPC) or on a signal of its own (a Ctrl-C reaches it too).
    const { runWorker } = await import('../runtime/process/worker.ts');
    // The primary loads, checks and hands out every plan: a worker never reloads on its own.
    onHangup(() => logs.log({ level: 'warn', msg: 'SIGHUP ignored by a worker: send it to the primary, which reloads and hands the plan to every worker', primary: process.ppid }));
    let serving: { drain(ms: number, delayMs: number): Promise<void> } | undefined;
    const stopper = onStopSignals(
      async () => {
        await serving?.drain(drainTimeoutMs, shutdownDelayMs);
        await flush();
      },
      () => logs.flushSync(),
    );
    serving = await runWorker({ ...common, onStop: (how) => (how === 'stop' ? stopper.stop() : stopper.now()) });
    await new Promise<never>(() => undefined); // serves until stopped
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
    const { looksLikePlan } = await import('../compiler/plan/plan-text.ts');
    source = looksLikePlan(text) ? { planPath: file! } : { configPath: file! };
  }
  // The compiler's warnings, at start and on each reload that compiles the config: with JSON logs
  // (the default) one JSON line each among svc's own lines on standard output, so that every line
  // svc writes parses as JSON; as text on standard error only with `svc_debug` (docs/logging.md).
  // Only a compiled config has diagnostics: `svc run plan.json` loads no compiler code for them.
  const diagnostics = 'configPath' in source ? await import('./run-diagnostics.ts') : undefined;
  const onWarnings = (text: string, warnings: readonly Diagnostic[], plan: PlanEnvelope) => {
    if (text === '') return;
    if (plan.body.settings.logging.debug) {
      io.err(text);
      return;
    }
    // The first plan's log settings (level, service label) are not applied yet: apply them first.
    if (noPlanYet) logs.apply(plan.body.settings);
    for (const d of warnings) logs.announce(diagnostics?.diagnosticEntry(d) ?? { code: d.code, msg: d.message });
  };

  const { run } = await import('../runtime/process/run.ts');
  const { RunError, loadForRun } = await import('../runtime/process/load-plan.ts');
  try {
    // Loaded once: it chooses the role, and the role serves it as it is (`plan`). Its warnings are
    // told once it is known to be served (a refused plan says only why it is refused).
    const warned: Parameters<typeof onWarnings>[] = [];
    const first = await loadForRun({ ...source, onWarnings: (...w) => void warned.push(w) });
    // The role decides the process shape: the data broker and authorize roles serve gRPC only, in
    // this process; their modules (and gRPC) are loaded for that role only.
    const services = first.body.settings.mode.services;
    const grpcRole = services === 'authorize' || services === 'databroker' ? services : undefined;
    // Only a process that decides requests itself runs a shadow plan: refused in the other roles.
    const { refuseShadowOutsideAllInOne } = await import('../runtime/process/load-plan.ts');
    refuseShadowOutsideAllInOne(opts.shadow, first);
    if (grpcRole === 'databroker' && opts.storeOutageGrace !== undefined) {
      // The data broker serves the session store; the grace is for the roles that read it. A flag
      // this role would ignore is refused rather than accepted silently.
      throw new SvcError('SVC_ERR_FLAG_WITHOUT_EFFECT', '--store-outage-grace has no effect in the databroker role, which serves the session store itself (the authorize, authenticate and proxy roles read it and apply the grace): remove the flag here');
    }
    for (const w of warned) onWarnings(...w);
    if (grpcRole !== undefined) {
      const start = grpcRole === 'authorize' ? (await loadGrpcModule(() => import('../runtime/process/authorize-run.ts'))).runAuthorize : (await loadGrpcModule(() => import('../runtime/process/databroker-run.ts'))).runDatabroker;
      const role = await start({ ...source, ...common, onWarnings, plan: first });
      const g = role.grpc.address;
      logs.announce({ msg: 'listening', services: grpcRole, grpcAddress: `${g.host}:${g.port}`, checksum: role.plan().checksum });
      onHangup(reloadOnHangup(() => role.reload()));
      return await stopped(
        async () => {
          logs.announce({ msg: 'stopping', shutdownDelayMs, drainTimeoutMs });
          await role.drain(drainTimeoutMs, shutdownDelayMs);
        },
        () => undefined,
      );
    }
    if (workers > 1) {
      const { runPrimary } = await import('../runtime/process/cluster.ts');
      const primary = await runPrimary({ ...source, ...common, onWarnings, workers, plan: first }, process.argv.slice(2));
      logs.announce({ msg: 'listening', workers, port: primary.port, ...(primary.grpcAddress ? { grpcAddress: primary.grpcAddress } : {}) });
      onHangup(reloadOnHangup(() => primary.reload()));
      return await stopped(
        async () => {
          // Each worker waits the shutdown delay itself, then drains; the primary refuses new
          // connections once no worker takes them.
          logs.announce({ msg: 'stopping', shutdownDelayMs, drainTimeoutMs });
          await primary.stop();
        },
        () => primary.now(),
      );
    }
    const running = await run({ ...source, ...common, onWarnings, plan: first });
    const a = running.listening.address;
    const g = running.grpc?.address;
    logs.announce({ msg: 'listening', address: `${a.host}:${a.port}`, ...(g ? { grpcAddress: `${g.host}:${g.port}` } : {}), checksum: running.store.current.plan.checksum, routes: running.store.current.plan.body.routes.length });
    onHangup(reloadOnHangup(() => running.reload()));
    return await stopped(
      async () => {
        logs.announce({ msg: 'stopping', shutdownDelayMs, drainTimeoutMs });
        await running.drain(drainTimeoutMs, shutdownDelayMs);
      },
      () => undefined,
    );
  } catch (e) {
    if (e instanceof RunError) {
      // Why svc cannot start: text for a person at a terminal (or with SVC_DEBUG), otherwise JSON
      // lines like every other line svc run writes, so a log shipper reads the failure too.
      if (textWanted()) {
        io.err(`${e.message.replace(/\n?$/, '\n')}error ${e.code}: svc cannot start\n`);
      } else {
        const entries = (diagnostics && e.details.diagnostics?.map(diagnostics.diagnosticEntry)) ?? e.details.refused ?? [];
        for (const entry of entries) logs.log(entry);
        logs.log({ level: 'error', code: e.code, msg: 'svc cannot start', ...(entries.length === 0 ? { detail: e.message } : {}) });
        await written();
      }
      // As `svc compile`: 2 when the config file itself cannot be read (I/O), 1 for errors in it.
      return e.details.diagnostics?.some((d) => d.code === 'SVC5002') ? 2 : 1;
    }
    if (textWanted()) io.err(`error: ${(e as Error).message}\n`);
    else {
      // A refused plan's provisioner error is its cause: its code says what failed (SVC_ERR_FEATURE_UNAVAILABLE, …).
      const cause = (e as Error).cause instanceof SvcError ? { cause: ((e as Error).cause as SvcError).code } : {};
      logs.log({ level: 'error', msg: 'svc cannot start', error: (e as Error).message, ...((e as NodeJS.ErrnoException).code !== undefined ? { code: (e as NodeJS.ErrnoException).code } : {}), ...cause });
      await written();
    }
    return 2;
  }

  /**
   * Serves until the first SIGTERM/SIGINT, then stops gracefully (`graceful`, then spans and logs
   * flushed) and resolves 0; a second signal runs `immediate`, flushes the logs and exits 1 at once.
   */
  function stopped(graceful: () => Promise<void>, immediate: () => void): Promise<number> {
    return new Promise<number>((resolve) => {
      onStopSignals(
        async () => {
          stopping = true;
          await graceful();
          await flush();
          logs.announce({ msg: 'stopped' });
        },
        () => {
          immediate();
          logs.log({ level: 'warn', msg: 'second signal: stopping at once' });
          logs.flushSync();
        },
        (code) => (code === 0 ? resolve(0) : process.exit(code)),
      );
    });
  }
}

/** Whether `svc run`'s start failures are written as text: at a terminal, or with `SVC_DEBUG` set. */
function textWanted(): boolean {
  return process.stderr.isTTY === true || /^(true|1)$/i.test(process.env['SVC_DEBUG'] ?? '');
}
