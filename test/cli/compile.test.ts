/**
 * `svc compile` end to end through the real bin/svc: exit codes, text and JSON diagnostics, the
 * plan file and its mode, and that secrets never reach the output.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { BASE_SETTINGS } from '../support/compile-text.ts';

const SVC = join(import.meta.dirname, '../../bin/svc');

function svc(args: string[], cwd: string, env: Record<string, string> = {}) {
  const res = spawnSync(process.execPath, [SVC, ...args], { cwd, encoding: 'utf8', env: { PATH: process.env['PATH'] ?? '', ...env } });
  return { code: res.status, out: res.stdout, err: res.stderr };
}

function workdir(config: unknown, name = 'config.yaml'): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-cli-'));
  writeFileSync(join(dir, name), typeof config === 'string' ? config : stringify(config));
  return dir;
}

const valid = { ...BASE_SETTINGS, routes: [{ from: 'https://app.example.com', to: 'http://127.0.0.1:9000', allow_any_authenticated_user: true }] };

describe('svc compile', () => {
  it('--check on a valid config exits 0 and writes nothing', () => {
    const dir = workdir(valid);
    const r = svc(['compile', '--check', '-config', 'config.yaml'], dir);
    expect(r.code).toBe(0);
    expect(r.out).toBe('');
    expect(r.err).toMatch(/ok: sha256:[0-9a-f]{64}/);
  });

  it('-o writes the plan with mode 0600', () => {
    const dir = workdir(valid);
    const r = svc(['compile', '--config', 'config.yaml', '-o', 'plan.json'], dir);
    expect(r.code).toBe(0);
    const plan = JSON.parse(readFileSync(join(dir, 'plan.json'), 'utf8')) as { formatVersion: number; checksum: string };
    expect(plan.formatVersion).toBe(1);
    expect(statSync(join(dir, 'plan.json')).mode & 0o777).toBe(0o600);
  });

  it('errors exit 1 with file:line:col, code, source line, caret and help', () => {
    const dir = workdir({ ...valid, routes: [{ from: 'https://app.example.com/x', to: 'http://127.0.0.1:9000', allow_any_authenticated_user: true }] });
    const r = svc(['compile', '--check', '-config', 'config.yaml'], dir);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^config\.yaml:\d+:\d+: error SVC3501 route-from-has-path: /m);
    expect(r.err).toMatch(/\| +\^+/);
    expect(r.err).toMatch(/help: /);
  });

  it('--format json prints diagnostics with locations and the checksum only without errors', () => {
    const bad = workdir({ ...valid, timeout_read: '30 seconds' });
    const r = svc(['compile', '--check', '-config', 'config.yaml', '--format', 'json'], bad);
    expect(r.code).toBe(1);
    const j = JSON.parse(r.out) as { diagnostics: { code: string; file: string; line: number; column: number; path: string }[]; checksum?: string };
    expect(j.checksum).toBeUndefined();
    expect(j.diagnostics).toContainEqual(expect.objectContaining({ code: 'SVC3001', file: 'config.yaml', path: 'timeout_read' }));
    const good = svc(['compile', '--check', '-config', 'config.yaml', '--format', 'json'], workdir(valid));
    expect((JSON.parse(good.out) as { checksum: string }).checksum).toMatch(/^sha256:/);
  });

  it('a diagnostic about an env value names the variable and never prints the value', () => {
    const dir = workdir(valid);
    const secret = Buffer.alloc(16, 9).toString('base64');
    const r = svc(['compile', '--check', '-config', 'config.yaml'], dir, { SHARED_SECRET: secret });
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^env:SHARED_SECRET: error SVC3005 secret-wrong-size/m);
    expect(r.err).not.toContain(secret);
  });

  it('a secret in the config file is masked in the source line', () => {
    const secret = Buffer.alloc(16, 5).toString('base64');
    const dir = workdir({ ...valid, cookie_secret: secret });
    const r = svc(['compile', '--check', '-config', 'config.yaml'], dir);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/SVC3005/);
    expect(r.err).not.toContain(secret);
  });

  it('a missing config file or an unknown flag exits 2', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-cli-'));
    expect(svc(['compile', '-config', 'nope.yaml'], dir).code).toBe(2);
    expect(svc(['compile', '--bogus'], dir).code).toBe(2);
    expect(svc(['frobnicate'], dir).code).toBe(2);
  });

  it('the quickstart config npm start serves compiles, with a summary', () => {
    const root = join(import.meta.dirname, '../..');
    const out = execFileSync(process.execPath, [SVC, 'compile', '--summary', '-config', 'fixtures/quickstart/config.yaml'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    expect(out).toMatch(/^plan sha256:[0-9a-f]{64}$/m);
    expect(out).toMatch(/^listen: 127\.0\.0\.1:8443 \(plain HTTP\)$/m);
    expect(out).toMatch(/routes: 2/);
  });

  it('settings svc run does not implement are notes: the exit code stays 0, the summary announces no such listener', () => {
    const dir = workdir({ ...valid, dp_admin_address: ':9901', dp_bind_config_source_address: '10.0.0.1', dns_lookup_family: 'V4_ONLY' });
    const r = svc(['compile', '--summary', '-config', 'config.yaml'], dir);
    expect(r.code).toBe(0);
    expect(r.err).toMatch(/^config\.yaml:\d+:\d+: note: dp_admin_address is not supported by svc run yet: data-plane bootstrap options are not implemented/m);
    expect(r.err).toMatch(/^config\.yaml:\d+:\d+: note: dp_bind_config_source_address is not supported by svc run yet: /m);
    expect(r.err).toMatch(/^config\.yaml:\d+:\d+: note: dns_lookup_family is honoured only partly by svc run: /m);
    expect(r.out).not.toMatch(/admin|9901|10\.0\.0\.1/i);
    expect(svc(['compile', '--check', '-config', 'config.yaml'], dir).code).toBe(0);
    // JSON diagnostics stay diagnostics only.
    expect(svc(['compile', '--check', '-config', 'config.yaml', '--format', 'json'], dir).err).toBe('');
  });

  it('the summary names the gRPC data broker listener where svc run serves it', () => {
    expect(svc(['compile', '--summary', '-config', 'config.yaml'], workdir(valid)).out).toMatch(/^grpc: 127\.0\.0\.1:5443 \(data broker, plaintext\)$/m);
    const broker = svc(['compile', '--summary', '-config', 'config.yaml'], workdir({ ...valid, services: 'databroker', grpc_address: '10.0.0.1:7443' })).out;
    expect(broker).toMatch(/^grpc: 10\.0\.0\.1:7443 \(data broker, TLS\)$/m);
    expect(broker).not.toMatch(/^listen:/m);
    expect(svc(['compile', '--summary', '-config', 'config.yaml'], workdir({ ...valid, databroker_service_url: 'http://10.0.0.2:5443' })).out).not.toMatch(/^grpc:/m);
  });

  it('the summary names the metrics listener svc run starts, and how it is protected', () => {
    const r = svc(['compile', '--summary', '-config', 'config.yaml'], workdir({ ...valid, metrics_address: '127.0.0.1:9090', metrics_basic_auth: Buffer.from('prom:test-only').toString('base64') }));
    expect(r.code).toBe(0);
    expect(r.err).not.toContain('note: metrics');
    expect(r.out).toContain('metrics: 127.0.0.1:9090 (plain HTTP, Basic auth; /metrics, /healthz, /readyz)');
  });

  it('a config svc run serves as it is has no notes', () => {
    const r = svc(['compile', '--check', '-config', 'config.yaml'], workdir(valid));
    expect(r.err).not.toContain('note:');
  });
});
