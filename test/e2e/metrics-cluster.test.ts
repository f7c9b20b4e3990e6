/**
 * `svc run --workers 2` with a metrics listener (a real child process, real node:cluster workers):
 * one scrape of the primary's listener returns the whole tree's figures. Requests spread over both
 * workers all appear in one scrape's totals, never one worker's share.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE_SETTINGS } from '../support/compile-text.ts';
import { freePort, sample, scrape, series } from './metrics-support.ts';
import { configDir, echo, startUpstream, type Upstream } from './support.ts';

const SVC = join(import.meta.dirname, '../../bin/svc');
/** TEST ONLY credential. */
const CREDENTIAL = 'prometheus:test-only-metrics-password';

/** A request on a fresh connection (so both workers get some); resolves with the answering worker. */
function get(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/', agent: false, headers: { host: 'app.example.com' } }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve(String(res.headers['x-svc-worker'])) : reject(new Error(`status ${res.statusCode}`))));
    });
    req.setTimeout(5000, () => req.destroy(new Error('no answer in 5 s')));
    req.on('error', reject);
    req.end();
  });
}

describe('svc run --workers 2: one scrape for the whole process tree', () => {
  let up: Upstream;
  let child: ChildProcess;
  let port = 0;
  let metricsPort = 0;
  const cfg = configDir();
  const write = (version = '1') =>
    cfg.writeRaw(
      stringify({
        ...BASE_SETTINGS,
        address: '127.0.0.1:8443',
        metrics_address: `127.0.0.1:${metricsPort}`,
        metrics_basic_auth: Buffer.from(CREDENTIAL).toString('base64'),
        routes: [{ from: 'https://app.example.com', to: up.url, allow_public_unauthenticated_access: true, name: 'app', set_request_headers: { 'X-Version': version } }],
      }),
    );

  beforeAll(async () => {
    up = await startUpstream(echo);
    metricsPort = await freePort();
    write();
    child = spawn(process.execPath, [SVC, 'run', '--grpc-listen', '127.0.0.1:0', '-config', cfg.path, '--listen', '127.0.0.1:0', '--workers', '2', '--expose-checksum'], { stdio: ['ignore', 'pipe', 'inherit'] });
    port = await new Promise<number>((resolve, reject) => {
      let out = '';
      child.stdout!.on('data', (c: Buffer) => {
        out += c.toString();
        const m = /"msg":"listening","workers":2,"port":(\d+)/.exec(out);
        if (m) resolve(Number(m[1]));
      });
      child.once('exit', (code) => reject(new Error(`svc exited with ${code}: ${out}`)));
    });
  }, 60_000); // two workers each load tsx: slow on a busy machine

  afterAll(async () => {
    if (child && child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
    await up?.close();
    cfg.remove();
  });

  it('sums requests answered by both workers, and shows the primary’s configuration figures once', async () => {
    const workers = new Map<string, number>();
    const N = 40;
    for (let i = 0; i < N; i++) {
      const w = await get(port);
      workers.set(w, (workers.get(w) ?? 0) + 1);
    }
    expect(workers.size).toBe(2);
    const r = await scrape(metricsPort, { credential: CREDENTIAL });
    expect(r.status).toBe(200);
    expect(sample(r.body, 'svc_http_server_requests_total', { route: 'app', method: 'GET', status_class: '2xx' })).toBe(N);
    expect(sample(r.body, 'svc_upstream_requests_total', { route: 'app' })).toBe(N);
    expect(sample(r.body, 'svc_http_server_request_duration_ms_count', { route: 'app', method: 'GET', status_class: '2xx' })).toBe(N);
    // Kept by the primary alone: one series, not one per process.
    expect(series(r.body, 'svc_build_info')).toHaveLength(1);
    expect(sample(r.body, 'svc_config_last_reload_success')).toBe(1);
    expect(sample(r.body, 'svc_upstream_healthy', { route: 'app' })).toBe(1);
    const ready = await scrape(metricsPort, { path: '/readyz' });
    expect(ready.status).toBe(200);
  });

  it('the primary records reloads: a bad config sets config_last_reload_success 0, the next good one 1', async () => {
    const success = async () => sample((await scrape(metricsPort, { credential: CREDENTIAL })).body, 'svc_config_last_reload_success');
    cfg.writeRaw('routes: [\n');
    await expect.poll(success, { timeout: 30_000, interval: 200 }).toBe(0);
    write('2');
    await expect.poll(success, { timeout: 30_000, interval: 200 }).toBe(1);
  }, 70_000);
});
