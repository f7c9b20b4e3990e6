/**
 * A real Prometheus (the Debian `prometheus` package) scrapes svc's metrics listener with Basic
 * authentication, every second, and stores `svc_http_server_requests_total`; it loads the shipped
 * alert rules (docs/observability/alerts.yml), which `promtool check rules` accepts.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { run, type Running } from '../../runtime/process/run.ts';
import { describeWithCommands } from '../support/system.ts';
import { freePort, hit, scrape } from './metrics-support.ts';
import { configDir, echo, startUpstream, type Upstream } from './support.ts';

const ALERTS = join(import.meta.dirname, '../../docs/observability/alerts.yml');
const DASHBOARD = join(import.meta.dirname, '../../docs/observability/grafana-dashboard.json');
/** TEST ONLY credential. */
const USER = 'prometheus';
const PASSWORD = 'test-only-metrics-password';

interface QueryResult {
  readonly status: string;
  readonly data: { readonly result: readonly { readonly metric: Record<string, string>; readonly value: [number, string] }[] };
}

describeWithCommands(['prometheus', 'promtool'], 'a real Prometheus scrapes svc', () => {
  let up: Upstream;
  let svc: Running;
  let prometheus: ChildProcess | undefined;
  let prometheusPort = 0;
  let metricsPort = 0;
  let log = '';
  const cfg = configDir();
  const data = mkdtempSync(join(tmpdir(), 'svc-prometheus-'));

  const query = async (q: string): Promise<QueryResult['data']['result']> => {
    const res = await fetch(`http://127.0.0.1:${prometheusPort}/api/v1/query?query=${encodeURIComponent(q)}`);
    const body = (await res.json()) as QueryResult;
    return body.status === 'success' ? body.data.result : [];
  };

  beforeAll(async () => {
    up = await startUpstream(echo);
    metricsPort = await freePort();
    cfg.write({ address: '127.0.0.1:8443', metrics_address: `127.0.0.1:${metricsPort}`, metrics_basic_auth: Buffer.from(`${USER}:${PASSWORD}`).toString('base64') }, [
      { from: 'https://app.example.com', to: up.url, allow_public_unauthenticated_access: true, name: 'app' },
    ]);
    svc = await run({ configPath: cfg.path, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 }, watch: false });
    for (let i = 0; i < 5; i++) expect(await hit(svc.listening.address.port, 'app.example.com', '/')).toBe(200);

    prometheusPort = await freePort();
    const config = join(data, 'prometheus.yml');
    writeFileSync(
      config,
      stringify({
        global: { scrape_interval: '1s', evaluation_interval: '1s' },
        rule_files: [ALERTS],
        scrape_configs: [{ job_name: 'svc', scrape_interval: '1s', basic_auth: { username: USER, password: PASSWORD }, static_configs: [{ targets: [`127.0.0.1:${metricsPort}`] }] }],
      }),
    );
    prometheus = spawn('prometheus', [`--config.file=${config}`, `--storage.tsdb.path=${join(data, 'tsdb')}`, `--web.listen-address=127.0.0.1:${prometheusPort}`, '--log.level=warn'], { stdio: ['ignore', 'ignore', 'pipe'] });
    prometheus.stderr!.on('data', (c: Buffer) => (log += c.toString()));
  }, 30_000);

  afterAll(async () => {
    if (prometheus && prometheus.exitCode === null) {
      prometheus.kill('SIGTERM');
      await new Promise((r) => prometheus!.once('exit', r));
    }
    await svc?.close();
    await up?.close();
    cfg.remove();
    rmSync(data, { recursive: true, force: true });
  });

  it('stores svc_http_server_requests_total, scraped with Basic auth', async () => {
    await expect
      .poll(async () => (await query('svc_http_server_requests_total{route="app",status_class="2xx"}').catch(() => []))[0]?.value[1], { timeout: 45_000, interval: 500 })
      .toBe('5');
    const [target] = await query('up{job="svc"}');
    expect(target?.value[1]).toBe('1');
    expect(target?.metric['instance']).toMatch(/^127\.0\.0\.1:\d+$/);
    const [info] = await query('svc_build_info');
    expect(info?.metric['service']).toBe('svc');
    expect(log).not.toMatch(/error loading rules|rule manager/i);
  }, 60_000);

  it('loads the shipped alert rules, which promtool check rules accepts', async () => {
    expect(execFileSync('promtool', ['check', 'rules', ALERTS], { encoding: 'utf8' })).toMatch(/SUCCESS: 6 rules found/);
    const res = (await (await fetch(`http://127.0.0.1:${prometheusPort}/api/v1/rules`)).json()) as { data: { groups: { rules: { name: string }[] }[] } };
    expect(res.data.groups.flatMap((g) => g.rules.map((r) => r.name)).sort()).toEqual(['SvcConfigReloadFailing', 'SvcHigh5xxRatio', 'SvcMetricsDown', 'SvcRedisUnreachable', 'SvcRedisWriterSuspected', 'SvcUpstreamUnhealthy']);
  });

  it('every Grafana dashboard query is PromQL Prometheus accepts, over metrics svc exports', async () => {
    const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: { targets: { expr: string }[] }[] };
    const exprs = dashboard.panels.flatMap((p) => p.targets.map((t) => t.expr));
    expect(exprs.length).toBeGreaterThan(10);
    const exposition = (await scrape(metricsPort, { credential: `${USER}:${PASSWORD}` })).body;
    for (const expr of exprs) {
      const q = expr.replaceAll('$__rate_interval', '1m').replace(/\$[a-z]+/g, '.*');
      const res = (await (await fetch(`http://127.0.0.1:${prometheusPort}/api/v1/query?query=${encodeURIComponent(q)}`)).json()) as { status: string; error?: string };
      expect(res, expr).toEqual(expect.objectContaining({ status: 'success' }));
      // Redis pool figures exist only with Redis storage (this svc uses the memory store).
      for (const name of expr.match(/svc_[a-z0-9_]+/g) ?? []) if (!name.startsWith('svc_redis_')) expect(exposition, name).toContain(`${name.replace(/_bucket$/, '')}`);
    }
  });
});
