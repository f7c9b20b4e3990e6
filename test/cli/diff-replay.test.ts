/**
 * `svc diff OLD NEW --replay LOG...` through the CLI entry point (cli/main.ts): the replay section
 * and the JSON `replay` part, exit codes as without it (0 equal, 1 differ, 2 a side or a log that
 * cannot be used), progress on standard error only when asked (or on a terminal).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { main } from '../../cli/main.ts';
import type { ReplayReport } from '../../cli/diff/replay/types.ts';
import { progressMode } from '../../cli/diff/replay/progress.ts';
import { accessLine } from '../../runtime/observe/log/access-line.ts';
import { BASE_SETTINGS } from '../support/compile-text.ts';

async function run(args: string[]) {
  let out = '';
  let err = '';
  const code = await main(args, { out: (s) => (out += s), err: (s) => (err += s) });
  return { code, out, err };
}

const dir = mkdtempSync(join(tmpdir(), 'svc-diff-replay-'));
const config = (policy: string) => stringify({ ...BASE_SETTINGS, routes: [{ from: 'https://app.example.com', to: 'http://127.0.0.1:9000', name: 'app', policy }] });
const oldPath = join(dir, 'old.yaml');
const newPath = join(dir, 'new.yaml');
const samePath = join(dir, 'same.yaml');
writeFileSync(oldPath, config('allow if groups has "staff"'));
writeFileSync(samePath, config('allow if groups has "staff"'));
writeFileSync(newPath, config('allow if groups has "admins"'));
const log = join(dir, 'access.log');
writeFileSync(
  log,
  [
    '{"level":"info","time":"2026-01-05T12:00:00.000Z","service":"svc","msg":"listening"}\n',
    accessLine({ msg: 'request', requestId: 'r1', method: 'GET', host: 'app.example.com', path: '/', route: 'app', status: 200, ms: 1, client: '192.0.2.7', user: 'bob', groups: ['staff'], decision: 'allow', upstream: '127.0.0.1:9000', plan: 1 }, 0),
    accessLine({ msg: 'request', requestId: 'r2', method: 'GET', host: 'app.example.com', path: '/', route: 'app', status: 200, ms: 1, client: '192.0.2.7', user: 'alice', groups: ['admins', 'staff'], decision: 'allow', upstream: '127.0.0.1:9000', plan: 1 }, 0),
  ].join(''),
);

describe('svc diff --replay', () => {
  it('prints a Replay section after the diff, and exits 1 as the plans differ', async () => {
    const r = await run(['diff', oldPath, newPath, '--no-exact', '--replay', log]);
    expect(r.code).toBe(1);
    expect(r.out).toContain('\nReplay (1 file, 3 lines, 2 requests)\n  2 replayed: 1 unchanged, 1 changed\n  - allowed → denied: app (#0): allow → deny [groups-unauthorized]: 1 request\n');
    expect(r.out).toContain(`e.g. ${log}:2`);
    expect(r.err).toBe('');
  });

  it('exits 0 for equal plans, every replayed request unchanged', async () => {
    const r = await run(['diff', oldPath, samePath, '--replay', log]);
    expect(r.code).toBe(0);
    expect(r.out).toContain('2 replayed: 2 unchanged, 0 changed');
  });

  it('--format json adds a `replay` part after the others', async () => {
    const r = await run(['diff', oldPath, newPath, '--no-exact', '--format', 'json', '--replay', log, log]);
    const j = JSON.parse(r.out) as { replay: ReplayReport };
    expect(Object.keys(j)).toEqual(['formatVersion', 'equal', 'old', 'new', 'access', 'flags', 'routes', 'settings', 'replay']);
    expect(j.replay).toMatchObject({ lines: 6, requests: 4, replayed: 4, changed: 2, unchanged: 2, notReplayable: [] });
    expect(j.replay.changes[0]).toMatchObject({ change: 'allowed-to-denied', from: 'allow', to: 'deny', count: 2, examples: [`${log}:2`, `${log}:2`] });
  });

  it('exits 2 with SVC_ERR_REPLAY_READ for a log it cannot read, and prints no report', async () => {
    const r = await run(['diff', oldPath, newPath, '--no-exact', '--replay', join(dir, 'missing.log')]);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err).toMatch(/--replay: cannot read `.*missing\.log`.*\(SVC_ERR_REPLAY_READ\)/);
  });

  it('shows progress on standard error only on a terminal outside CI, or with --progress', async () => {
    expect(progressMode(undefined, { isTTY: true }, {})).toBe('tty');
    expect(progressMode(undefined, { isTTY: true }, { CI: 'true' })).toBe('none');
    expect(progressMode(undefined, { isTTY: false }, {})).toBe('none');
    expect(progressMode(true, { isTTY: false }, { CI: 'true' })).toBe('lines');
    const r = await run(['diff', oldPath, newPath, '--no-exact', '--progress', '--replay', log]);
    // Under vitest standard error is not a terminal: one line per update, never on standard output.
    expect(r.err).toMatch(/^replay: .*access\.log: 3 lines, 2 requests, 1 changed\n$/);
    expect(r.out).not.toContain('replay: ');
  });
});
