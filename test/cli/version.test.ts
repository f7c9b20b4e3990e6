import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../../cli/main.ts';

const root = join(import.meta.dirname, '../..');
const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;

describe('svc --version', () => {
  it('prints the version, the git revision and the Node version, and exits 0', async () => {
    const out: string[] = [];
    expect(await main(['--version'], { out: (s) => out.push(s), err: () => undefined })).toBe(0);
    expect(out.join('')).toMatch(new RegExp(`^svc ${version.replace(/\./g, '\\.')} \\(revision ([0-9a-f]{7,40}|unknown), node ${process.version.slice(1).replace(/\./g, '\\.')}\\)\\n$`));
    expect(await main(['-V'], { out: () => undefined, err: () => undefined })).toBe(0);
  });

  it('SVC_GIT_REVISION names the revision where no git and no build stamp exist (containers)', () => {
    const out = execFileSync(process.execPath, [join(root, 'bin/svc'), '--version'], { encoding: 'utf8', env: { ...process.env, SVC_FROM_SOURCE: '1', SVC_GIT_REVISION: '0123456789ab' } });
    expect(out).toContain('(revision 0123456789ab,');
  });
});
