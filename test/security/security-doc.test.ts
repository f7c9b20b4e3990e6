/**
 * docs/security.md is the reference code comments cite (`docs/security.md S07`): every row a file
 * cites exists, every test the page names as proof exists, and nothing in the repository sends a
 * reader to design documents it does not carry.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');
const PAGE = readFileSync(join(ROOT, 'docs/security.md'), 'utf8');
const TRACKED = execFileSync('git', ['ls-files', '*.ts', '*.md', 'bin/*', 'docs/forward-auth/*'], { cwd: ROOT, encoding: 'utf8' })
  .split('\n')
  .filter((f) => f !== '' && existsSync(join(ROOT, f)));

/** The row numbers of the page's tables (`| S07 | …`). */
const rows = new Set([...PAGE.matchAll(/^\| (S\d\d) \|/gm)].map((m) => m[1]!));

describe('docs/security.md', () => {
  it('has the rows S01 to S49, each once', () => {
    const listed = [...PAGE.matchAll(/^\| (S\d\d) \|/gm)].map((m) => m[1]!);
    expect(listed.length).toBe(rows.size);
    for (let i = 1; i <= 49; i++) expect(rows, `S${String(i).padStart(2, '0')}`).toContain(`S${String(i).padStart(2, '0')}`);
  });

  it('names only tests that exist as proof', () => {
    const missing: string[] = [];
    for (const [path] of PAGE.matchAll(/\b(?:test|fixtures)\/[\w./*-]+/g)) {
      const clean = path.replace(/[.,]$/, '');
      if (clean.includes('*')) {
        const dir = dirname(clean);
        const pattern = new RegExp(`^${clean.slice(dir.length + 1).replace(/[.]/g, '\\.').replace(/\*/g, '.*')}$`);
        if (!readdirSync(join(ROOT, dir)).some((f) => pattern.test(f))) missing.push(clean);
      } else if (!existsSync(join(ROOT, clean))) missing.push(clean);
    }
    expect(missing).toEqual([]);
  });

  it('every row the code and docs cite exists', () => {
    const dangling: string[] = [];
    for (const f of TRACKED) {
      const text = readFileSync(join(ROOT, f), 'utf8');
      for (const m of text.matchAll(/docs\/security\.md(?: rows?)? ((?:S\d\d(?:[,–-] ?)?)+)/g)) {
        for (const id of m[1]!.match(/S\d\d/g) ?? []) if (!rows.has(id)) dangling.push(`${f}: ${id}`);
      }
    }
    expect(dangling).toEqual([]);
  });

  it('nothing in the repository sends a reader to design documents it does not carry', () => {
    const outside = TRACKED.filter((f) => f !== 'test/security/security-doc.test.ts').filter((f) => /\b(?:DESIGN|SECURITY|STYLE)\.md\b|\bDESIGN §/.test(readFileSync(join(ROOT, f), 'utf8')));
    expect(outside).toEqual([]);
  });
});
