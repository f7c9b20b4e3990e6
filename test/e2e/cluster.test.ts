/**
 * `svc run --workers 2` as operators start it (a real child process, real node:cluster workers):
 * both workers answer on the shared listener, a reload reaches every worker, a worker that dies is
 * replaced, and SIGTERM stops everything.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE_SETTINGS } from '../support/compile-text.ts';
import { configDir, echo, startUpstream, type Upstream } from './support.ts';

const SVC = join(import.meta.dirname, '../../bin/svc');

function get(port: number): Promise<{ status: number; worker: string; checksum: string; version: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/', agent: false, headers: { host: 'app.example.com' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => {
        const version = res.statusCode === 200 ? ((JSON.parse(body) as { headers: Record<string, string> }).headers['x-version'] ?? '') : '';
        resolve({ status: res.statusCode ?? 0, worker: String(res.headers['x-svc-worker']), checksum: String(res.headers['x-svc-plan-checksum']), version });
      });
    });
    req.setTimeout(3000, () => req.destroy(new Error('no answer in 3 s')));
    req.on('error', reject);
    req.end();
  });
}

describe('svc run --workers 2', () => {
  let up: Upstream;
  let child: ChildProcess;
  let port = 0;
  const cfg = configDir();
  const write = (version: number) =>
    cfg.writeRaw(stringify({ ...BASE_SETTINGS, address: '127.0.0.1:8443', routes: [{ from: 'https://app.example.com', to: up.url, allow_public_unauthenticated_access: true, set_request_headers: { 'X-Version': String(version) } }] }));

  beforeAll(async () => {
    up = await startUpstream(echo);
    write(1);
    child = spawn(process.execPath, [SVC, 'run', '--shutdown-delay', '0', '--grpc-listen', '127.0.0.1:0', '-config', cfg.path, '--listen', '127.0.0.1:0', '--workers', '2', '--expose-checksum'], { stdio: ['ignore', 'pipe', 'inherit'] });
    port = await new Promise<number>((resolve, reject) => {
      let out = '';
      child.stdout!.on('data', (c: Buffer) => {
        out += c.toString();
        const m = /"msg":"listening","workers":2,"port":(\d+)/.exec(out);
        if (m) resolve(Number(m[1]));
      });
      child.once('exit', (code) => reject(new Error(`svc exited with ${code}: ${out}`)));
    });
  }, 60_000); // two workers each load tsx and the compiler: slow on a busy CI machine

  afterAll(async () => {
    if (child && child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
    await up?.close();
    cfg.remove();
  });

  it('answers from both workers', async () => {
    const workers = new Set<string>();
    for (let i = 0; i < 20; i++) {
      const r = await get(port);
      expect(r.status).toBe(200);
      workers.add(r.worker);
    }
    expect(workers.size).toBe(2);
  });

  it('a reload reaches every worker', async () => {
    const before = (await get(port)).checksum;
    write(2);
    await expect
      .poll(
        async () => {
          const rs = await Promise.all(Array.from({ length: 10 }, () => get(port)));
          return rs.every((r) => r.version === '2' && r.checksum !== before);
        },
        { timeout: 15_000, interval: 100 },
      )
      .toBe(true);
  });

  it('replaces a worker that dies', async () => {
    const victim = (await get(port)).worker;
    process.kill(Number(victim), 'SIGKILL');
    await expect
      .poll(
        async () => {
          const seen = new Set<string>();
          for (let i = 0; i < 10; i++) {
            const r = await get(port).catch(() => undefined);
            if (r?.status === 200) seen.add(r.worker);
          }
          return seen.size === 2 && !seen.has(victim);
        },
        { timeout: 20_000, interval: 200 },
      )
      .toBe(true);
    // The replacement serves the current plan, not the first one.
    const rs = await Promise.all(Array.from({ length: 10 }, () => get(port)));
    expect(rs.every((r) => r.version === '2')).toBe(true);
  });

  it('stops on SIGTERM', async () => {
    child.kill('SIGTERM');
    const code = await new Promise<number | null>((r) => child.once('exit', r));
    expect(code).toBe(0);
    await expect(get(port)).rejects.toThrow();
  });
});

describe('svc run --workers 2: a worker refuses a plan', () => {
  let up: Upstream;
  let child: ChildProcess;
  let port = 0;
  let out = '';
  const cfg = configDir();
  const write = (version: number) =>
    cfg.writeRaw(stringify({ ...BASE_SETTINGS, address: '127.0.0.1:8443', routes: [{ from: 'https://app.example.com', to: up.url, allow_public_unauthenticated_access: true, set_request_headers: { 'X-Version': String(version) } }] }));

  beforeAll(async () => {
    up = await startUpstream(echo);
    write(1);
    // No file or setting makes one worker refuse what its sibling accepts: worker 1 is told to
    // refuse every new plan by the test-only switch (runtime/process/worker.ts, NODE_ENV=test only).
    child = spawn(process.execPath, [SVC, 'run', '--shutdown-delay', '0', '--grpc-listen', '127.0.0.1:0', '-config', cfg.path, '--listen', '127.0.0.1:0', '--workers', '2', '--expose-checksum'], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, NODE_ENV: 'test', SVC_TEST_WORKER_REFUSES_RELOAD: '1' },
    });
    child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    port = await new Promise<number>((resolve, reject) => {
      child.stdout!.on('data', () => {
        const m = /"msg":"listening","workers":2,"port":(\d+)/.exec(out);
        if (m) resolve(Number(m[1]));
      });
      child.once('exit', (code) => reject(new Error(`svc exited with ${code}: ${out}`)));
    });
  }, 60_000);

  afterAll(async () => {
    if (child && child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
    await up?.close();
    cfg.remove();
  });

  it('keeps every worker on the old plan, and the reload fails naming the worker and its reason', async () => {
    const before = await Promise.all(Array.from({ length: 10 }, () => get(port)));
    const checksum = before[0]!.checksum;
    expect(before.every((r) => r.status === 200 && r.version === '1' && r.checksum === checksum)).toBe(true);
    write(2);
    await expect.poll(() => /"msg":"reload failed; keeping the current plan"[^\n]*worker \d+ refused the plan: SVC_TEST_WORKER_REFUSES_RELOAD/.test(out), { timeout: 15_000, interval: 100 }).toBe(true);
    const workers = new Set<string>();
    for (let i = 0; i < 20; i++) {
      const r = await get(port);
      expect({ version: r.version, checksum: r.checksum }).toEqual({ version: '1', checksum });
      workers.add(r.worker);
    }
    expect(workers.size).toBe(2);
    expect(out).not.toMatch(/"msg":"reload","result":"swapped"/);
  }, 30_000);
});
