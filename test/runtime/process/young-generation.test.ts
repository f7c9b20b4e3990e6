/**
 * runtime/process/young-generation.ts: cluster workers start with 16 MiB semi-spaces unless the
 * operator set a size (command line or NODE_OPTIONS); the primary's own Node options pass on. And a
 * real `svc run --workers 2`: each worker's command line carries the size, or the operator's.
 */
import { readFileSync, readdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { workerExecArgv } from '../../../runtime/process/young-generation.ts';
import { BASE_SETTINGS } from '../../support/compile-text.ts';
import { startSvcWithEnv } from '../../e2e/svc-process.ts';
import { freePort } from '../../support/ports.ts';

describe('workerExecArgv', () => {
  it('adds 16 MiB semi-spaces after the primary’s own options', () => {
    expect(workerExecArgv(['--enable-source-maps'], undefined)).toEqual(['--enable-source-maps', '--max-semi-space-size=16']);
    expect(workerExecArgv([], '--trace-warnings')).toEqual(['--max-semi-space-size=16']);
  });

  it('keeps the operator’s size, from the command line or NODE_OPTIONS, in either spelling', () => {
    expect(workerExecArgv(['--max-semi-space-size=32'], undefined)).toEqual(['--max-semi-space-size=32']);
    expect(workerExecArgv(['--max_semi_space_size', '64'], undefined)).toEqual(['--max_semi_space_size', '64']);
    expect(workerExecArgv([], '--trace-warnings  --max-semi-space-size=16')).toEqual([]);
    expect(workerExecArgv([], '--max-semi-space-size-other=1')).toEqual(['--max-semi-space-size=16']);
  });
});

/** The command lines of the processes whose parent is `pid` (Linux /proc). */
function childCommandLines(pid: number): string[][] {
  const out: string[][] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').filter((a) => a !== ''));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

describe('svc run --workers 2', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-young-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const config = join(dir, 'config.json');

  const workersOf = async (env: Record<string, string>) => {
    writeFileSync(config, JSON.stringify({ ...BASE_SETTINGS, address: `127.0.0.1:${await freePort()}`, routes: [{ from: 'https://app.example.com', to: 'http://127.0.0.1:9', allow_public_unauthenticated_access: true }] }));
    const svc = await startSvcWithEnv(config, ['--workers', '2'], env);
    try {
      const workers = childCommandLines(svc.child.pid!).filter((argv) => argv.some((a) => a.endsWith('bin/svc')));
      expect(workers).toHaveLength(2);
      return workers;
    } finally {
      await svc.stop();
    }
  };

  it('starts each worker with 16 MiB semi-spaces, or with none of its own when NODE_OPTIONS sets a size', async () => {
    for (const argv of await workersOf({})) expect(argv).toContain('--max-semi-space-size=16');
    for (const argv of await workersOf({ NODE_OPTIONS: '--max-semi-space-size=24' })) expect(argv.filter((a) => a.includes('semi-space'))).toEqual([]);
  }, 60_000);
});
