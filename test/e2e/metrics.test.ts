/**
 * The metrics listener of `svc run` (docs/observability.md "The metrics listener"): Basic authentication (401 cases), the
 * exposition (every name prefixed `svc_`, the `service` label, bounded labels), the reload metrics
 * on good and bad reloads, health endpoints, and what a reload may change. In process, plain HTTP;
 * TLS is test/e2e/metrics-tls.test.ts, a real Prometheus test/e2e/metrics-prometheus.test.ts.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checksumInt } from '../../runtime/observe/metrics/config.ts';
import { run, type Running } from '../../runtime/process/run.ts';
import { which } from '../support/system.ts';
import { freePort, hit, sample, scrape, series } from './metrics-support.ts';
import { configDir, echo, startUpstream, type Upstream } from './support.ts';

/** TEST ONLY credential. */
const CREDENTIAL = 'prometheus:test-only-metrics-password';
const b64 = (s: string) => Buffer.from(s).toString('base64');

describe('the metrics listener', () => {
  let up: Upstream;
  let svc: Running;
  let port = 0;
  let metricsPort = 0;
  const cfg = configDir();
  const routes = (version: string) => [
    { from: 'https://app.example.com', to: up.url, allow_public_unauthenticated_access: true, name: 'app', set_request_headers: { 'X-Version': version } },
    { from: 'https://other.example.com', to: up.url, allow_public_unauthenticated_access: true },
  ];
  const write = (version: string, extra: Record<string, unknown> = {}) =>
    cfg.write({ address: '127.0.0.1:8443', metrics_address: `127.0.0.1:${metricsPort}`, metrics_basic_auth: b64(CREDENTIAL), ...extra }, routes(version));
  const metrics = async () => {
    const r = await scrape(metricsPort, { credential: CREDENTIAL });
    expect(r.status).toBe(200);
    return r.body;
  };

  beforeAll(async () => {
    up = await startUpstream(echo);
    metricsPort = await freePort();
    write('1');
    svc = await run({ configPath: cfg.path, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 }, watch: false });
    port = svc.listening.address.port;
  });

  afterAll(async () => {
    await svc?.close();
    await up?.close();
    cfg.remove();
  });

  it('asks for the credential: 401 with WWW-Authenticate and no metrics, whatever was wrong', async () => {
    const wrong = [{}, { credential: 'prometheus:wrong' }, { credential: 'prometheus' }, { credential: `${CREDENTIAL}x` }, { authorization: `Bearer ${b64(CREDENTIAL)}` }, { authorization: 'Basic !!!' }];
    for (const w of wrong) {
      const r = await scrape(metricsPort, w);
      expect(r.status, JSON.stringify(w)).toBe(401);
      expect(r.headers['www-authenticate']).toMatch(/^Basic realm="svc metrics"/);
      expect(r.body).not.toContain('svc_');
    }
    // The scheme is case-insensitive (RFC 9110 §11.1).
    expect((await scrape(metricsPort, { authorization: `basic ${b64(CREDENTIAL)}` })).status).toBe(200);
  });

  it('metrics and health live only on their own listener, never on the public one (docs/security.md S19, S27)', async () => {
    for (const path of ['/metrics', '/healthz', '/readyz']) {
      const r = await scrape(port, { credential: CREDENTIAL, path });
      expect(r.status, path).toBe(404);
      expect(r.body).not.toContain('svc_');
    }
  });

  it('serves the Prometheus text format with the service label and build info', async () => {
    const r = await scrape(metricsPort, { credential: CREDENTIAL });
    expect(r.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    const names = r.body.split('\n').filter((l) => l.startsWith('# TYPE ')).map((l) => l.split(' ')[2]!);
    expect(names.every((n) => n.startsWith('svc_'))).toBe(true);
    for (const name of ['svc_http_server_requests_total', 'svc_http_server_request_duration_ms', 'svc_http_client_requests_total', 'svc_grpc_server_requests_total', 'svc_grpc_client_request_duration_ms', 'svc_storage_operation_duration_ms', 'svc_process_cpu_seconds_total'])
      expect(names).toContain(name);
    const samples = r.body.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
    expect(samples.every((l) => l.includes('service="svc"'))).toBe(true);
    const info = series(r.body, 'svc_build_info')[0]!;
    expect(info).toMatch(/version="0\.1\.0"/);
    expect(info).toMatch(/revision="([0-9a-f]{7,40}|unknown)"/);
    expect(info).toContain(`node_version="${process.version.slice(1)}"`);
    expect(sample(r.body, 'svc_config_checksum_int64')).toBe(checksumInt(svc.store.current.plan.checksum));
    // The memory store has no pool: no Redis figures rather than zeros.
    expect(r.body).not.toContain('svc_redis_');
  });

  it('counts requests by route name (else index), method and status class, and upstream exchanges', async () => {
    const before = await metrics();
    const count = (body: string, labels: Record<string, string>) => sample(body, 'svc_http_server_requests_total', labels) ?? 0;
    for (let i = 0; i < 3; i++) expect(await hit(port, 'app.example.com', '/a')).toBe(200);
    expect(await hit(port, 'other.example.com', '/b', 'POST')).toBe(200);
    expect(await hit(port, 'nowhere.example.com', '/c')).toBe(404);
    const after = await metrics();
    expect(count(after, { route: 'app', method: 'GET', status_class: '2xx' }) - count(before, { route: 'app', method: 'GET', status_class: '2xx' })).toBe(3);
    expect(count(after, { route: '1', method: 'POST', status_class: '2xx' }) - count(before, { route: '1', method: 'POST', status_class: '2xx' })).toBe(1);
    expect(count(after, { route: '(none)', method: 'GET', status_class: '4xx' }) - count(before, { route: '(none)', method: 'GET', status_class: '4xx' })).toBe(1);
    const upstream = `127.0.0.1:${up.port}`;
    expect((sample(after, 'svc_upstream_requests_total', { route: 'app', upstream }) ?? 0) - (sample(before, 'svc_upstream_requests_total', { route: 'app', upstream }) ?? 0)).toBe(3);
    expect((sample(after, 'svc_http_client_requests_total', { route: 'app', method: 'GET', status_class: '2xx' }) ?? 0) - (sample(before, 'svc_http_client_requests_total', { route: 'app', method: 'GET', status_class: '2xx' }) ?? 0)).toBe(3);
    expect(sample(after, 'svc_upstream_healthy', { route: 'app', upstream })).toBe(1);
    expect(sample(after, 'svc_http_server_request_duration_ms_count', { route: 'app', method: 'GET', status_class: '2xx' })).toBeGreaterThanOrEqual(3);
    expect(sample(after, 'svc_http_server_response_size_bytes_count', { route: 'app', method: 'GET', status_class: '2xx' })).toBeGreaterThanOrEqual(3);
  });

  it('keeps label cardinality bounded: random hosts, paths and methods of unmatched requests add no series', async () => {
    await hit(port, 'seed.example.com', '/');
    const before = series(await metrics(), 'svc_http_server_requests_total').length;
    const label = fc.stringMatching(/^[a-z0-9-]{1,20}$/);
    await fc.assert(
      fc.asyncProperty(label, fc.array(label, { maxLength: 4 }), fc.constantFrom('GET', 'PROPFIND', 'MKCOL', 'PURGE'), async (host, path, method) => {
        await hit(port, `${host}.unmatched.example`, `/${path.join('/')}?q=${host}`, method);
      }),
      { numRuns: 60 },
    );
    const after = await metrics();
    const lines = series(after, 'svc_http_server_requests_total');
    // At most: the seed's series plus `other` for the unusual methods (and PROPFIND's own status class).
    expect(lines.length).toBeLessThanOrEqual(before + 2);
    expect(after).not.toContain('unmatched.example');
    expect(sample(after, 'svc_http_server_requests_total', { route: '(none)', method: 'other' })).toBeGreaterThan(0);
  });

  it('health: /healthz and /readyz answer without the credential (they reveal nothing), and /healthz reports the data broker it probes', async () => {
    const live = await scrape(metricsPort, { path: '/healthz' });
    expect([live.status, live.body]).toEqual([200, 'ok\ndatabroker: reachable\n']);
    const ready = await scrape(metricsPort, { path: '/readyz' });
    expect([ready.status, ready.body]).toEqual([200, 'ok\n']);
    expect(sample(await metrics(), 'svc_storage_operation_duration_ms_count', { operation: 'get', result: 'ok', backend: 'memory' })).toBeGreaterThan(0);
    expect((await scrape(metricsPort, { path: '/other' })).status).toBe(404);
  });

  it('a good reload sets config_last_reload_success 1 and the new checksum; a bad one 0; the next good one 1 again', async () => {
    const first = await metrics();
    expect(sample(first, 'svc_config_last_reload_success')).toBe(1);
    const t0 = sample(first, 'svc_config_last_reload_success_timestamp')!;
    write('2');
    expect(await svc.reload()).toMatchObject({ ok: true, result: 'swapped' });
    const good = await metrics();
    expect(sample(good, 'svc_config_last_reload_success')).toBe(1);
    expect(sample(good, 'svc_config_checksum_int64')).toBe(checksumInt(svc.store.current.plan.checksum));
    expect(sample(good, 'svc_config_checksum_int64')).not.toBe(sample(first, 'svc_config_checksum_int64'));
    expect(sample(good, 'svc_config_last_reload_success_timestamp')).toBeGreaterThanOrEqual(t0);

    writeFileSync(cfg.path, 'routes: [\n');
    expect(await svc.reload()).toMatchObject({ ok: false });
    const bad = await metrics();
    expect(sample(bad, 'svc_config_last_reload_success')).toBe(0);
    expect(sample(bad, 'svc_config_checksum_int64')).toBe(sample(good, 'svc_config_checksum_int64'));
    expect(sample(bad, 'svc_config_last_reload_success_timestamp')).toBe(sample(good, 'svc_config_last_reload_success_timestamp'));

    write('3');
    expect(await svc.reload()).toMatchObject({ ok: true });
    expect(sample(await metrics(), 'svc_config_last_reload_success')).toBe(1);
  });

  it('a reload applies a new credential, and refuses a new metrics_address loudly (restart required)', async () => {
    const next = 'prometheus:rotated-test-only-password';
    cfg.write({ address: '127.0.0.1:8443', metrics_address: `127.0.0.1:${metricsPort}`, metrics_basic_auth: b64(next) }, routes('4'));
    expect(await svc.reload()).toMatchObject({ ok: true });
    expect((await scrape(metricsPort, { credential: CREDENTIAL })).status).toBe(401);
    expect((await scrape(metricsPort, { credential: next })).status).toBe(200);

    cfg.write({ address: '127.0.0.1:8443', metrics_address: `127.0.0.1:${await freePort()}`, metrics_basic_auth: b64(next) }, routes('5'));
    const r = await svc.reload();
    expect(r).toEqual({ ok: false, error: expect.stringContaining('metrics listener settings changed') });
    const body = (await scrape(metricsPort, { credential: next })).body;
    expect(sample(body, 'svc_config_last_reload_success')).toBe(0);
    write('6');
    expect(await svc.reload()).toMatchObject({ ok: true });
  });

  it.skipIf(which('promtool') === undefined && process.env['SVC_TEST_REQUIRE_ALL'] !== '1')('promtool check metrics accepts the exposition', async () => {
    const body = await metrics();
    const file = join(cfg.dir, 'exposition.txt');
    writeFileSync(file, body);
    // promtool parses the exposition, then lints it. The only finding allowed: the `_ms` unit in the
    // names docs/observability.md "Metric reference" gives (`http_server_request_duration_ms`, …), which svc keeps as the contract.
    const out = execFileSync('sh', ['-c', 'promtool check metrics < "$1" 2>&1; echo "exit $?"', 'sh', file], { encoding: 'utf8' });
    const lines = out.trim().split('\n');
    expect(lines.pop()).toMatch(/^exit [03]$/);
    const SPEC_MS = /^svc_(http_(server|client)_request_duration_ms|grpc_(server|client)_request_duration_ms|storage_operation_duration_ms|redis_wait_duration_ms_total) metric names should not contain abbreviated units$/;
    expect(lines.filter((l) => !SPEC_MS.test(l))).toEqual([]);
    expect(lines.length).toBeGreaterThan(0); // the linter did run over the documented names
  });
});
