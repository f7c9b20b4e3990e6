/**
 * A reload whose plan has the checksum of the one in service keeps the generation (docs/running.md
 * "Reload", docs/observability.md): a config file rewritten to the same plan (a comment added) and a
 * SIGHUP each log `config unchanged; plan <checksum> kept` at info, requests keep being served by
 * the same generation (the access line's `plan` number), and the configuration metrics say the
 * reload succeeded with the same checksum. A TLS listener, whose renewal reads its certificate files
 * again, in one process and with `--workers 2`; a real change still makes a new generation.
 */
import { appendFileSync } from 'node:fs';
import { request } from 'node:https';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { issue, makeCa, type Issued } from '../runtime/tls/pki.ts';
import { freePort, sample, scrape } from './metrics-support.ts';
import { spawnSvc, type SignalledSvc } from './svc-process.ts';
import { configDir, startUpstream, type Upstream } from './support.ts';

describe('an unchanged reload keeps the generation', () => {
  let ca: Issued;
  let server: Issued;
  let up: Upstream;
  let metricsPort = 0;
  let svc: SignalledSvc | undefined;
  const cfg = configDir();
  const route = (name: string) => ({ name, from: 'https://app.example.com', to: up.url, allow_public_unauthenticated_access: true });

  beforeAll(async () => {
    ca = await makeCa('svc unchanged reload test CA (TEST ONLY)');
    server = await issue(ca, { cn: 'app.example.com', dns: ['app.example.com'], usage: 'server' });
    up = await startUpstream((_req, res) => res.end('ok'));
    metricsPort = await freePort();
  });
  afterEach(async () => {
    if (svc && svc.child.exitCode === null && svc.child.signalCode === null) {
      svc.child.kill('SIGKILL');
      await svc.exited;
    }
    svc = undefined;
  });
  afterAll(async () => {
    await up?.close();
    cfg.remove();
  });

  /** One HTTPS request on a new connection; resolves with its status. */
  const get = (port: number) =>
    new Promise<number>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: '/', servername: 'app.example.com', ca: ca.certPem, agent: false, headers: { host: 'app.example.com' } }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.setTimeout(10_000, () => req.destroy(new Error('no answer in 10 s')));
      req.on('error', reject);
      req.end();
    });

  const lines = (s: SignalledSvc) =>
    s
      .out()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  const kept = (s: SignalledSvc) => lines(s).filter((l) => typeof l['msg'] === 'string' && l['msg'].startsWith('config unchanged; plan '));
  /** The generation numbers (`plan`) of the access lines so far, in order. */
  const generations = (s: SignalledSvc) => lines(s).filter((l) => l['msg'] === 'request').map((l) => l['plan']);

  /** Requests until `n` access lines are written; the generation numbers of all of them. */
  async function served(s: SignalledSvc, n: number): Promise<unknown[]> {
    for (let i = generations(s).length; i < n; i++) expect(await get(s.port)).toBe(200);
    await expect.poll(() => generations(s).length, { timeout: 10_000 }).toBe(n);
    return generations(s);
  }

  for (const workers of ['1', '2']) {
    it(`--workers ${workers}: a rewritten config and a SIGHUP that compile to the same plan keep the generation; a change makes a new one`, async () => {
      cfg.writeTls(server, { metrics_address: `127.0.0.1:${metricsPort}` }, [route('app')]);
      const s = (svc = await spawnSvc(cfg.path, ['--workers', workers, '--shutdown-delay', '0']));
      // Two requests per worker at least: every worker's generation shows.
      const before = await served(s, 4);
      expect(new Set(before)).toEqual(new Set([1]));
      const checksum = sample((await scrape(metricsPort)).body, 'svc_config_checksum_int64');

      // The file changes, the plan does not.
      appendFileSync(cfg.path, '\n# a comment changes the file, not the plan\n');
      await expect.poll(() => kept(s).length, { timeout: 20_000 }).toBe(1);
      s.child.kill('SIGHUP');
      await expect.poll(() => kept(s).length, { timeout: 20_000 }).toBe(2);
      const [first] = kept(s);
      expect(first).toMatchObject({ level: 'info', result: 'unchanged' });
      expect(first!['msg']).toBe(`config unchanged; plan ${String(first!['checksum'])} kept`);
      expect(lines(s).filter((l) => l['msg'] === 'reload')).toEqual([]);
      const after = await served(s, 8);
      expect(new Set(after.slice(before.length))).toEqual(new Set([1]));
      const metrics = (await scrape(metricsPort)).body;
      expect(sample(metrics, 'svc_config_checksum_int64')).toBe(checksum);
      expect(sample(metrics, 'svc_config_last_reload_success')).toBe(1);

      // A real change: a new plan, a new generation.
      cfg.writeTls(server, { metrics_address: `127.0.0.1:${metricsPort}` }, [route('renamed')]);
      await expect.poll(() => lines(s).filter((l) => l['msg'] === 'reload' && l['result'] === 'swapped').length, { timeout: 20_000 }).toBe(1);
      const changed = await served(s, 12);
      expect(new Set(changed.slice(after.length))).toEqual(new Set([2]));
      expect(sample((await scrape(metricsPort)).body, 'svc_config_checksum_int64')).not.toBe(checksum);

      s.child.kill('SIGTERM');
      expect(await s.exited).toBe(0);
    }, 90_000);
  }
});
