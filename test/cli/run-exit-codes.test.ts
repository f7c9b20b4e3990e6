/**
 * `svc run`'s exit codes when it cannot start on a config are `svc compile`'s for the same config
 * (docs/running.md, "Exit codes"): 2 when the config file cannot be read (an I/O error, SVC5002), 1
 * for errors in a config that was read, and 1 for a setting svc run does not implement.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { BASE_SETTINGS } from '../support/compile-text.ts';

const SVC = join(import.meta.dirname, '../../bin/svc');
const dir = mkdtempSync(join(tmpdir(), 'svc-run-exit-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs bin/svc in `dir`; any svc that did start would listen on free ports only. */
function svc(args: readonly string[], env: Record<string, string> = {}) {
  const res = spawnSync(process.execPath, [SVC, ...args], { cwd: dir, encoding: 'utf8', timeout: 60_000, env: { PATH: process.env['PATH'] ?? '', ...env } });
  return { code: res.status, out: res.stdout, err: res.stderr };
}

const RUN = ['run', '--workers', '1', '--shutdown-delay', '0', '--listen', '127.0.0.1:0', '--grpc-listen', '127.0.0.1:0'];

function config(name: string, value: unknown): string {
  writeFileSync(join(dir, name), stringify(value));
  return name;
}

const route = { from: 'https://app.example.com', to: 'http://127.0.0.1:9', allow_any_authenticated_user: true };

describe('svc run exit codes match svc compile', () => {
  it('-config naming a missing file: 2 from both, with SVC5002 as a JSON line from run', () => {
    const compiled = svc(['compile', '--check', '-config', 'missing.yaml']);
    expect(compiled.code).toBe(2);
    expect(compiled.err).toContain('SVC5002');

    const ran = svc([...RUN, '-config', 'missing.yaml']);
    expect(ran.code).toBe(2);
    const lines = ran.out.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines).toContainEqual(expect.objectContaining({ level: 'error', code: 'SVC5002', name: 'config-unreadable' }));
    expect(lines.at(-1)).toMatchObject({ level: 'error', code: 'SVC_ERR_CONFIG_INVALID', msg: 'svc cannot start' });
  });

  it('-config naming a missing file with SVC_DEBUG: 2, and the diagnostic as text', () => {
    const ran = svc([...RUN, '-config', 'missing.yaml'], { SVC_DEBUG: 'true' });
    expect(ran.code).toBe(2);
    expect(ran.err).toMatch(/error SVC5002 config-unreadable: cannot read config file `missing\.yaml`: no such file/);
    expect(ran.err).toContain('error SVC_ERR_CONFIG_INVALID: svc cannot start');
  });

  it('a missing file named without -config: 2', () => {
    const ran = svc([...RUN, 'missing.yaml']);
    expect(ran.code).toBe(2);
    expect(ran.err).toContain('cannot read `missing.yaml`');
  });

  it('a config with errors: 1 from both', () => {
    const name = config('invalid.yaml', { ...BASE_SETTINGS, routes: [{ ...route, from: 'https://app.example.com/x' }] });
    const compiled = svc(['compile', '--check', '-config', name]);
    expect(compiled.code).toBe(1);
    expect(compiled.err).toContain('SVC3501');

    const ran = svc([...RUN, '-config', name]);
    expect(ran.code).toBe(1);
    expect(ran.out).toContain('"code":"SVC3501"');
  });

  it('--store-outage-grace in the databroker role, which would ignore it: 2, refused as a JSON line', () => {
    const name = config('databroker.yaml', { ...BASE_SETTINGS, services: 'databroker' });
    const ran = svc([...RUN, '--store-outage-grace', '10', '-config', name]);
    expect(ran.code).toBe(2);
    const last = JSON.parse(ran.out.trim().split('\n').at(-1)!) as Record<string, unknown>;
    expect(last).toMatchObject({ level: 'error', msg: 'svc cannot start', code: 'SVC_ERR_FLAG_WITHOUT_EFFECT', error: expect.stringContaining('--store-outage-grace has no effect in the databroker role') });
  });

  it('--shadow in a role that decides no request itself (databroker): 2, refused as a JSON line', () => {
    const name = config('databroker-shadow.yaml', { ...BASE_SETTINGS, services: 'databroker' });
    const ran = svc([...RUN, '--shadow', name, '-config', name]);
    expect(ran.code).toBe(2);
    const last = JSON.parse(ran.out.trim().split('\n').at(-1)!) as Record<string, unknown>;
    expect(last).toMatchObject({ level: 'error', msg: 'svc cannot start', code: 'SVC_ERR_SHADOW_UNSUPPORTED_ROLE', error: expect.stringContaining('--shadow is supported by an all-in-one svc only') });
  });

  it('a setting svc run does not implement: run 1, compile 0 with a note', () => {
    const name = config('unsupported.yaml', { ...BASE_SETTINGS, dp_admin_address: '127.0.0.1:9901', routes: [route] });
    const compiled = svc(['compile', '--check', '-config', name]);
    expect(compiled.code).toBe(0);
    expect(compiled.err).toMatch(/note: dp_admin_address is not supported by svc run yet/);

    const ran = svc([...RUN, '-config', name]);
    expect(ran.code).toBe(1);
    expect(ran.out).toContain('"code":"SVC_ERR_UNSUPPORTED_SETTING"');
  });
});
