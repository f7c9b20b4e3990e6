import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../../cli/main.ts';

const root = join(import.meta.dirname, '../..');
const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
const esc = (s: string) => s.replace(/[.+]/g, '\\$&');

/** The checkout's HEAD as build-info reads it, or undefined outside a git checkout. */
function head(): string | undefined {
  if (!existsSync(join(root, '.git'))) return undefined;
  try {
    return execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
}

describe('svc --version', () => {
  it("prints the release as MAJOR.MINOR.PATCH+GITHASH (spec §9) with the checkout's HEAD, and the Node version", async () => {
    const out: string[] = [];
    expect(await main(['--version'], { out: (s) => out.push(s), err: () => undefined })).toBe(0);
    expect(version).toMatch(/^\d+\.\d+\.\d+$/);
    const hash = head() ?? 'unknown';
    expect(out.join('')).toBe(`svc ${version}+${hash} (node ${process.version.slice(1)})\n`);
    expect(await main(['-V'], { out: () => undefined, err: () => undefined })).toBe(0);
  });

  it('SVC_GIT_REVISION names the revision where no git and no build stamp exist (containers)', () => {
    const out = execFileSync(process.execPath, [join(root, 'bin/svc'), '--version'], { encoding: 'utf8', env: { ...process.env, SVC_FROM_SOURCE: '1', SVC_GIT_REVISION: '0123456789ab' } });
    expect(out).toMatch(new RegExp(`^svc ${esc(version)}\\+0123456789ab \\(node `));
  });
});
