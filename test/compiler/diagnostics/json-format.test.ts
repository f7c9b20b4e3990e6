/**
 * docs/diagnostics.md documents `svc compile --format json`: its example is the output of a real
 * run, and its field table names exactly the fields every diagnostic has. Both are checked here
 * against the compiler, so the documented shape cannot drift from render-json.ts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderJson } from '../../../compiler/diagnostics/render-json.ts';
import { JSON_EXAMPLE_CASE } from '../../../cli/generated.ts';
import { compileDir } from '../../support/compile-dir.ts';

const ROOT = join(import.meta.dirname, '../../..');
const DOC = readFileSync(join(ROOT, 'docs/diagnostics.md'), 'utf8');
const SECTION = DOC.slice(DOC.indexOf('## Machine-readable output (`--format json`)'));

describe('docs/diagnostics.md: the --format json shape', () => {
  const example = /```json\n([\s\S]*?)```/.exec(SECTION)?.[1];
  const real = () => {
    const result = compileDir(join(ROOT, JSON_EXAMPLE_CASE));
    return renderJson(result.diagnostics, result.plan?.checksum);
  };

  it('shows, byte for byte, what a real run on its fixture prints', () => {
    expect(example).toBeDefined();
    expect(example).toBe(real());
  });

  it('lists in its field table exactly the fields of a diagnostic', () => {
    const table = SECTION.slice(0, SECTION.indexOf('For example'));
    const documented = [...table.matchAll(/^\| ((?:`[a-z]+`(?:, )?)+) \|/gm)].flatMap((m) => [...m[1]!.matchAll(/`([a-z]+)`/g)].map((x) => x[1]!));
    const fields = Object.keys((JSON.parse(real()) as { diagnostics: Record<string, unknown>[] }).diagnostics[0]!);
    expect(documented.sort()).toEqual(fields.sort());
  });

  it('names the top-level fields: diagnostics always, checksum only without errors', () => {
    expect(Object.keys(JSON.parse(real()) as object)).toEqual(['diagnostics']);
    const ok = compileDir(join(ROOT, 'fixtures/cases/secret-files'));
    expect(Object.keys(JSON.parse(renderJson(ok.diagnostics, ok.plan?.checksum)) as object)).toEqual(['diagnostics', 'checksum']);
    expect(SECTION).toMatch(/`checksum`[^.]*present only when there is no error/);
  });
});
