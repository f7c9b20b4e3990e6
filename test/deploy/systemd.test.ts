/**
 * deploy/systemd/svc.service (docs/deploy.md): systemd itself accepts it (`systemd-analyze verify`,
 * and `systemd-analyze security --offline` scores its hardening), it reloads with SIGHUP, stops with
 * SIGTERM within a TimeoutStopSec above svc's drain timeout, binds :443 without root, and hands the
 * secrets to svc as credential files through settings svc really reads.
 *
 * `systemd-analyze verify` refuses a unit whose ExecStart binary does not exist, and the shipped
 * unit names /usr/local/bin/svc (where `npm install -g` puts it), which a test machine need not have:
 * the test verifies a copy whose ExecStart runs this checkout's bin/svc with node instead, the rest
 * of the unit unchanged.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { DEFAULT_DRAIN_TIMEOUT_MS } from '../../runtime/process/stop-signals.ts';
import { WORKER_SEMI_SPACE_MIB } from '../../runtime/process/young-generation.ts';
import { BASE_SETTINGS, TEST_SECRET } from '../support/compile-text.ts';
import { which } from '../support/system.ts';

const ROOT = join(import.meta.dirname, '../..');
const UNIT_PATH = join(ROOT, 'deploy/systemd/svc.service');
const UNIT = readFileSync(UNIT_PATH, 'utf8');
const SVC = join(ROOT, 'bin/svc');

/** Every `Key=value` of a section, in order (a key may repeat). */
function entries(section: string): [string, string][] {
  const out: [string, string][] = [];
  let current = '';
  for (const raw of UNIT.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header) current = header[1]!;
    else if (current === section) {
      const eq = line.indexOf('=');
      out.push([line.slice(0, eq), line.slice(eq + 1)]);
    }
  }
  return out;
}
const service = entries('Service');
const all = (key: string) => service.filter(([k]) => k === key).map(([, v]) => v);
const one = (key: string) => {
  const values = all(key);
  expect(values, key).toHaveLength(1);
  return values[0]!;
};

/** systemd's time span (`40s`, `1min 30s`, `90`) in seconds. */
function seconds(span: string): number {
  const unit: Record<string, number> = { '': 1, s: 1, sec: 1, m: 60, min: 60, h: 3600 };
  let total = 0;
  for (const [, n, u] of span.matchAll(/(\d+)\s*([a-z]*)/g)) total += Number(n) * (unit[u ?? ''] ?? Number.NaN);
  return total;
}

/** The unit with ExecStart running this checkout's bin/svc (a binary that exists here). */
function testableCopy(extra = ''): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-unit-'));
  const file = join(dir, 'svc.service');
  const text = UNIT.replace(/^ExecStart=\/usr\/local\/bin\/svc /m, `ExecStart=${process.execPath} ${SVC} `);
  expect(text).not.toBe(UNIT);
  writeFileSync(file, text.replace('[Service]\n', `[Service]\n${extra}`));
  return file;
}

const systemdAnalyze = which('systemd-analyze');
const requireAll = process.env['SVC_TEST_REQUIRE_ALL'] === '1';

describe('deploy/systemd/svc.service', () => {
  it('runs `svc run -config /etc/svc/config.yaml`, reloads with SIGHUP and stops with SIGTERM', () => {
    expect(one('ExecStart')).toBe('/usr/local/bin/svc run -config /etc/svc/config.yaml');
    expect(one('ExecReload')).toBe('/bin/kill -HUP $MAINPID');
    expect(one('KillSignal')).toBe('SIGTERM');
    // Only the primary gets SIGTERM and stops its workers itself.
    expect(one('KillMode')).toBe('mixed');
  });

  it('waits longer than the drain timeout before SIGKILL', () => {
    const drain = /--drain-timeout[ =](\d+)/.exec(one('ExecStart'))?.[1];
    const drainSeconds = drain === undefined ? DEFAULT_DRAIN_TIMEOUT_MS / 1000 : Number(drain);
    // Room after the drain to flush logs and spans and for the workers to exit.
    expect(seconds(one('TimeoutStopSec'))).toBeGreaterThanOrEqual(drainSeconds + 10);
  });

  it('runs as a dynamic user with the capability to bind :443 and no other', () => {
    expect(one('DynamicUser')).toBe('yes');
    expect(one('NoNewPrivileges')).toBe('yes');
    expect(one('ProtectSystem')).toBe('strict');
    expect(one('AmbientCapabilities')).toBe('CAP_NET_BIND_SERVICE');
    expect(one('CapabilityBoundingSet')).toBe('CAP_NET_BIND_SERVICE');
    expect(all('MemoryDenyWriteExecute')).toEqual([]); // V8's JIT needs it off
  });

  it('keeps autocert data in its StateDirectory', () => {
    expect(one('StateDirectory')).toBe('svc');
    expect(all('Environment')).toContain('SVC_DEFAULT_AUTOCERT_DIR=%S/svc');
  });

  it('gives every svc process, a single one included, the young generation svc gives its cluster workers', () => {
    expect(all('Environment')).toContain(`NODE_OPTIONS=--max-semi-space-size=${WORKER_SEMI_SPACE_MIB}`);
  });

  it('gives svc its secrets as credential files, through *_file settings svc reads', () => {
    const credentials = all('LoadCredential').map((v) => v.split(':')[0]!);
    expect(credentials.sort()).toEqual(['cookie_secret', 'idp_client_secret', 'shared_secret']);
    const env = Object.fromEntries(all('Environment').map((v) => [v.slice(0, v.indexOf('=')), v.slice(v.indexOf('=') + 1)]));
    for (const name of credentials) expect(env[`${name.toUpperCase()}_FILE`]).toBe(`%d/${name}`);

    // What systemd does at start, by hand: the credential files in a private directory (%d), the
    // unit's environment with its specifiers resolved, and a config without the secrets.
    const dir = mkdtempSync(join(tmpdir(), 'svc-unit-run-'));
    const credentialsDir = join(dir, 'credentials');
    mkdirSync(credentialsDir);
    const values: Record<string, string> = { shared_secret: TEST_SECRET, cookie_secret: TEST_SECRET, idp_client_secret: 'client-secret' };
    for (const name of credentials) writeFileSync(join(credentialsDir, name), `${values[name]}\n`, { mode: 0o400 });
    const config = Object.fromEntries(Object.entries(BASE_SETTINGS).filter(([k]) => !(k in values)));
    writeFileSync(join(dir, 'config.yaml'), stringify({ ...config, routes: [{ from: 'https://app.example.com', to: 'http://127.0.0.1:9000', allow_any_authenticated_user: true }] }));
    const unitEnv = Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v.replace('%d', credentialsDir).replace('%S', join(dir, 'state'))]));
    const compile = (extraEnv: Record<string, string>) =>
      spawnSync(process.execPath, [SVC, 'compile', '--check', '-config', 'config.yaml'], { cwd: dir, encoding: 'utf8', env: { PATH: process.env['PATH'] ?? '', ...extraEnv } });
    const withUnit = compile(unitEnv);
    expect(withUnit.stderr).toMatch(/ok: sha256:/);
    expect(withUnit.status).toBe(0);
    // Without the unit's environment the same config lacks its secrets.
    expect(compile({}).status).toBe(1);
  });

  it.skipIf(!systemdAnalyze && !requireAll)('systemd-analyze verify accepts it without a warning (needs the Debian package systemd)', () => {
    if (!systemdAnalyze) throw new Error('SVC_TEST_REQUIRE_ALL=1 but systemd-analyze is missing (apt-get install -y systemd)');
    const ok = spawnSync('systemd-analyze', ['verify', testableCopy()], { encoding: 'utf8' });
    expect(ok.stderr).toBe('');
    expect(ok.status).toBe(0);
    // The check is real: a misspelt key is reported.
    const bad = spawnSync('systemd-analyze', ['verify', testableCopy('ExecRelaod=/bin/kill -HUP $MAINPID\n')], { encoding: 'utf8' });
    expect(bad.stderr).toMatch(/Unknown key 'ExecRelaod'/);
  });

  it.skipIf(!systemdAnalyze && !requireAll)('systemd-analyze security rates its hardening OK (exposure at most 2.0 of 10)', () => {
    if (!systemdAnalyze) throw new Error('SVC_TEST_REQUIRE_ALL=1 but systemd-analyze is missing (apt-get install -y systemd)');
    const r = spawnSync('systemd-analyze', ['security', '--offline=yes', '--no-pager', testableCopy()], { encoding: 'utf8' });
    const score = /Overall exposure level for svc\.service: ([\d.]+)/.exec(r.stdout + r.stderr)?.[1];
    expect(score, r.stdout + r.stderr).toBeDefined();
    expect(Number(score)).toBeLessThanOrEqual(2.0);
  });
});
