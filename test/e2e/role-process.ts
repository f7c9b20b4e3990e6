/**
 * `svc run` processes of a split deployment for end-to-end tests: one per role, from one config file
 * (the role from `SERVICES` or the file), started with `bin/svc` as an operator does, and plain
 * HTTP requests to them by host name on loopback.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { SVC } from './svc-process.ts';

export function get(port: number, host: string, cookie: string, path = '/'): Promise<{ status: number; body: string; headers: import('node:http').IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false, headers: { host, cookie, accept: 'text/html' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    });
    req.setTimeout(15_000, () => req.destroy(new Error('no answer in 15 s')));
    req.on('error', reject);
    req.end();
  });
}

export async function until(check: () => Promise<boolean> | boolean, timeoutMs: number): Promise<void> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A `svc run` child process and everything it printed. */
export interface Svc {
  readonly child: ChildProcess;
  readonly log: () => string;
}

/** Starts `svc run` on the config with `env`; resolves once it says it listens. */
export async function startSvc(configPath: string, env: Record<string, string>, args: readonly string[] = [], workers = 1): Promise<Svc> {
  let log = '';
  const child = spawn(process.execPath, [SVC, 'run', '--shutdown-delay', '0', '-config', configPath, '--workers', String(workers), ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env['PATH'] ?? '', ...env } });
  await new Promise<void>((resolve, reject) => {
    const onData = (c: Buffer) => {
      log += c.toString();
      if (/"msg":"listening"/.test(log)) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`svc exited with ${code}: ${log}`)));
  });
  return { child, log: () => log };
}

export async function stopSvc(svc: Svc | undefined, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (!svc || svc.child.exitCode !== null || svc.child.signalCode !== null) return;
  const exited = new Promise((r) => svc.child.once('exit', r));
  svc.child.kill(signal);
  await exited;
}

