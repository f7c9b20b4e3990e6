/**
 * Where the release's git hash comes from (runtime/observe/build-info.ts), in a scratch copy of the
 * module with its own package.json, git repository and recorded `dist/REVISION`: SVC_GIT_REVISION,
 * then the checkout's HEAD (a `dist/REVISION` left by an older build never hides it), then the
 * recorded revision (an installed package), then `+unknown`.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { releaseOf } from '../../runtime/observe/build-info.ts';

const ROOT = join(import.meta.dirname, '../..');

interface Info {
  version: string;
  revision: string;
  release: string;
}

function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-build-info-'));
  mkdirSync(join(dir, 'runtime/observe'), { recursive: true });
  cpSync(join(ROOT, 'runtime/observe/build-info.ts'), join(dir, 'runtime/observe/build-info.ts'));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'scratch', version: '1.2.3', type: 'module' }));
  return dir;
}

function info(dir: string, env: Record<string, string> = {}): Info {
  const script = `import(${JSON.stringify(join(dir, 'runtime/observe/build-info.ts'))}).then((m) => process.stdout.write(JSON.stringify(m.buildInfo())))`;
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'SVC_GIT_REVISION')) as Record<string, string>;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '-e', script], { cwd: ROOT, encoding: 'utf8', env: { ...base, ...env } });
  expect(r.stderr).toBe('');
  return JSON.parse(r.stdout) as Info;
}

function git(dir: string, ...args: string[]): string {
  return execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd: dir, encoding: 'utf8' }).trim();
}

describe('build info: the release MAJOR.MINOR.PATCH+GITHASH', () => {
  it('takes the hash from SVC_GIT_REVISION, else the checkout, else the recorded REVISION, else says unknown', () => {
    const dir = scratch();
    mkdirSync(join(dir, 'dist'));
    writeFileSync(join(dir, 'dist/REVISION'), 'deadbeefdead\n');
    git(dir, 'init', '-q');
    git(dir, 'add', '-A');
    git(dir, 'commit', '-q', '-m', 'scratch');
    const head = git(dir, 'rev-parse', '--short=12', 'HEAD');

    // A checkout: its HEAD, not the revision an older build recorded.
    expect(info(dir)).toMatchObject({ version: '1.2.3', revision: head, release: `1.2.3+${head}` });
    expect(info(dir, { SVC_GIT_REVISION: 'abcdef012345' }).release).toBe('1.2.3+abcdef012345');
    // Not a hash: ignored.
    expect(info(dir, { SVC_GIT_REVISION: 'v1; rm -rf /' }).release).toBe(`1.2.3+${head}`);

    // An installed package: no .git, the revision recorded at build or pack time.
    rmSync(join(dir, '.git'), { recursive: true, force: true });
    expect(info(dir).release).toBe('1.2.3+deadbeefdead');

    // Nothing known: a release that says so, still valid semver build metadata.
    rmSync(join(dir, 'dist/REVISION'));
    expect(info(dir)).toMatchObject({ revision: 'unknown', release: '1.2.3+unknown' });
  });

  it('releaseOf writes the spec form, with +unknown for anything that is not a hash', () => {
    expect(releaseOf('0.1.0', '1a2b3c4d5e6f')).toBe('0.1.0+1a2b3c4d5e6f');
    expect(releaseOf('0.1.0', 'unknown')).toBe('0.1.0+unknown');
    expect(releaseOf('0.1.0', '')).toBe('0.1.0+unknown');
    expect(releaseOf('0.1.0', 'not a hash')).toBe('0.1.0+unknown');
    for (const r of [releaseOf('0.1.0', '1a2b3c4d5e6f'), releaseOf('0.1.0', 'unknown')]) expect(r).toMatch(/^\d+\.\d+\.\d+\+[0-9A-Za-z-]+$/);
  });
});
