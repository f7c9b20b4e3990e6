/**
 * A real `svc run` process for tests (`bin/svc`, as an operator starts it, with its gRPC data broker
 * on a free port instead of the default 127.0.0.1:5443 so that tests run side by side): resolves once it logs
 * `listening` with its port; `stop` sends SIGTERM and waits for the exit. Standard error is
 * inherited (shown with the test output); standard output is kept for assertions.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

export const SVC = join(import.meta.dirname, '../../bin/svc');

export interface SvcProcess {
  readonly child: ChildProcess;
  /** The port of the `listening` line. */
  readonly port: number;
  /** Everything written to standard output so far. */
  stdout(): string;
  /** SIGTERM, then the exit (at once when it already exited). */
  stop(): Promise<void>;
}

/** Starts `svc run -config <configPath> --workers <workers> <args…>`. */
export async function startSvcProcess(configPath: string, options: { readonly workers: number; readonly args?: readonly string[] }): Promise<SvcProcess> {
  // No shutdown delay unless a test asks for one: `stop` would wait 5 s for nothing.
  const child = spawn(process.execPath, [SVC, 'run', '--grpc-listen', '127.0.0.1:0', '-config', configPath, '--workers', String(options.workers), '--shutdown-delay', '0', ...(options.args ?? [])], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  const port = await new Promise<number>((resolve, reject) => {
    const listening = new RegExp(`"msg":"listening","workers":${options.workers},"port":(\\d+)`);
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = listening.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`svc exited with ${code}: ${out}`)));
  });
  return {
    child,
    port,
    stdout: () => out,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** A `svc run` child whose stops a test drives itself (signals, drains): its exit is awaited, not asked for. */
export interface SignalledSvc {
  readonly child: ChildProcess;
  /** The port of the `listening` line. */
  readonly port: number;
  /** Everything written to standard output so far. */
  out(): string;
  /** The exit code; 128 for an exit by a signal svc did not handle. */
  readonly exited: Promise<number | null>;
}

/**
 * Starts `svc run -config <configPath> --listen 127.0.0.1:0 <args…>` with its gRPC listener on a free
 * port; `group`: in a process group of its own (as a terminal runs it), so a signal can reach every
 * process; `plan`: `svc run <configPath>`, which serves a plan file as is (`-config` compiles).
 * Resolves once it logs `listening` (one process or a primary with workers).
 */
export async function spawnSvc(configPath: string, args: readonly string[], options: { readonly group?: boolean; readonly plan?: boolean } = {}): Promise<SignalledSvc> {
  const file = options.plan === true ? [configPath] : ['-config', configPath];
  const child = spawn(process.execPath, [SVC, 'run', '--grpc-listen', '127.0.0.1:0', ...file, '--listen', '127.0.0.1:0', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env['PATH'] ?? '' }, detached: options.group === true });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.resume();
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code, signal) => resolve(code ?? (signal ? 128 : null))));
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.on('data', () => {
      const m = /"msg":"listening",(?:"address":"127\.0\.0\.1:(\d+)"|"workers":\d+,"port":(\d+))/.exec(out);
      if (m) resolve(Number(m[1] ?? m[2]));
    });
    void exited.then((code) => reject(new Error(`svc exited with ${code}: ${out}`)));
  });
  return { child, port, out: () => out, exited };
}

/** One of the `svc run` processes a test starts side by side on one config, told apart by `env`. */
export interface EnvSvc {
  readonly child: ChildProcess;
  /** Everything written to standard output and standard error so far. */
  out(): string;
  /** SIGTERM, then the exit (at once when it already exited). */
  stop(): Promise<void>;
}

/**
 * Starts `svc run --shutdown-delay 0 -config <configPath> <args…>` with `env` over the test's own
 * (`ADDRESS`, `METRICS_ADDRESS`: two instances on one port at different loopback addresses) and its
 * gRPC listener on a free port; resolves once it logs `listening`, rejects if it exits first.
 */
export async function startSvcWithEnv(configPath: string, args: readonly string[], env: Readonly<Record<string, string>>): Promise<EnvSvc> {
  const child = spawn(process.execPath, [SVC, 'run', '--shutdown-delay', '0', '--grpc-listen', '127.0.0.1:0', '-config', configPath, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const onData = (c: Buffer) => {
      out += c.toString();
      if (/"msg":"listening"/.test(out)) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`svc exited with ${code}: ${out}`)));
  });
  return {
    child,
    out: () => out,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
