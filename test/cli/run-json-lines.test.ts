/**
 * `svc run` with JSON logs (the default) writes nothing but JSON lines, from its first line on
 * (docs/security.md S46): the compiler's warnings are JSON lines among svc's own on standard output
 * (`{level, code, name, at: "file:line:col", msg}`), not multi-line text on standard error that a
 * log shipper parsing every line would choke on; with `svc_debug` they stay human text.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { configDir } from '../e2e/support.ts';

const SVC = join(import.meta.dirname, '../../bin/svc');

interface Started {
  /** Every line svc wrote, per stream, until it said it listens. */
  readonly stdout: string[];
  readonly stderr: string[];
}

describe('svc run: JSON from the first line', () => {
  const cfg = configDir();
  let child: ChildProcess | undefined;

  afterAll(() => cfg.remove());
  afterEach(async () => {
    const c = child;
    child = undefined;
    if (c && c.exitCode === null) {
      const exited = new Promise((resolve) => c.once('exit', resolve));
      c.kill('SIGTERM');
      await exited;
    }
  });

  /** Starts `svc run -config` and collects its lines until the `listening` line (or it exits). */
  function start(): Promise<Started> {
    const stdout: string[] = [];
    const stderr: string[] = [];
    const c = spawn(process.execPath, [SVC, 'run', '--shutdown-delay', '0', '-config', cfg.path, '--listen', '127.0.0.1:0', '--grpc-listen', '127.0.0.1:0', '--workers', '1'], { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env['PATH'] ?? '' } });
    child = c;
    return new Promise((resolve, reject) => {
      const lines = (into: string[], ready: (line: string) => boolean) => {
        let rest = '';
        return (chunk: Buffer) => {
          rest += chunk.toString();
          const parts = rest.split('\n');
          rest = parts.pop()!;
          for (const line of parts) {
            into.push(line);
            if (ready(line)) resolve({ stdout, stderr });
          }
        };
      };
      c.stdout!.on('data', lines(stdout, (l) => /"msg":"listening"|INFO: listening/.test(l)));
      c.stderr!.on('data', lines(stderr, () => false));
      c.once('exit', (code) => reject(new Error(`svc exited with ${code}: ${stderr.join('\n')}`)));
    });
  }

  // A route that skips upstream TLS verification: the compiler warns (SVC3514), and svc still runs.
  const routes = [{ from: 'https://app.example.com', to: 'https://127.0.0.1:9', tls_skip_verify: true, allow_public_unauthenticated_access: true }];

  it('JSON logs: every line on standard output and standard error is one JSON object, the warnings included', async () => {
    cfg.write({ address: '127.0.0.1:8443' }, routes);
    const { stdout, stderr } = await start();
    const all = [...stdout, ...stderr];
    for (const line of all) expect(() => JSON.parse(line), `not JSON: ${line}`).not.toThrow();
    const parsed = stdout.map((l) => JSON.parse(l) as Record<string, unknown>);
    const warning = parsed.find((l) => l['code'] === 'SVC3514');
    expect(warning).toMatchObject({ level: 'warn', service: 'svc', name: 'route-tls-skip-verify', msg: expect.any(String) });
    expect(String(warning!['at'])).toMatch(new RegExp(`^${cfg.path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:\\d+:\\d+$`));
    // The warnings come before svc says it listens.
    expect(parsed.findIndex((l) => l['code'] === 'SVC3514')).toBeLessThan(parsed.findIndex((l) => l['msg'] === 'listening'));
    expect(stderr).toEqual([]);
  });

  it('a taken gRPC port: the complaint of grpc-js is a JSON line too, before svc says why it cannot start', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    try {
      cfg.write({ address: '127.0.0.1:8443', grpc_address: `127.0.0.1:${(taken.address() as AddressInfo).port}` }, routes);
      const c = spawn(process.execPath, [SVC, 'run', '--shutdown-delay', '0', '-config', cfg.path, '--listen', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env['PATH'] ?? '' } });
      let out = '';
      let err = '';
      c.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
      c.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
      const code = await new Promise<number | null>((resolve) => c.once('exit', resolve));
      expect(code).not.toBe(0);
      expect(err).toBe('');
      const lines = out.split('\n').filter((l) => l !== '');
      for (const line of lines) expect(() => JSON.parse(line), `not JSON: ${line}`).not.toThrow();
      const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(parsed.find((l) => l['msg'] === 'grpc-js')).toMatchObject({ level: 'warn', detail: expect.stringMatching(/No address added/) });
      expect(parsed.at(-1)).toMatchObject({ level: 'error', msg: 'svc cannot start', error: expect.stringMatching(/^grpc_address: cannot listen for gRPC/) });
    } finally {
      taken.close();
    }
  });

  it('svc_debug: the warnings stay human text on standard error', async () => {
    cfg.write({ address: '127.0.0.1:8443', svc_debug: true }, routes);
    const { stderr } = await start();
    expect(stderr.join('\n')).toMatch(/config\.yaml:\d+:\d+: warning SVC3514 route-tls-skip-verify: /);
  });
});
