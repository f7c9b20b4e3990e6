/**
 * Golden diffs: every directory under fixtures/diff/ holds `old.yaml` and `new.yaml`; their diff is
 * compared with `expected.txt` and `expected.json`. `UPDATE_GOLDEN=1` rewrites them; review the
 * diff like code. Every case also checks that no secret written in its configs reaches the output.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { diffPlans } from '../../../cli/diff/diff.ts';
import { renderDiffJson } from '../../../cli/diff/render-json.ts';
import { renderDiffText } from '../../../cli/diff/render-text.ts';
import type { PlanEnvelope } from '../../../compiler/plan/types.ts';
import { compileText } from '../../support/compile-text.ts';

const CASES = join(import.meta.dirname, '../../../fixtures/diff');
const update = process.env['UPDATE_GOLDEN'] === '1';
const dirs = readdirSync(CASES, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name).sort();

function compileFile(file: string): PlanEnvelope {
  const r = compileText(readFileSync(file, 'utf8'));
  if (!r.plan) throw new Error(`${file} does not compile: ${r.diagnostics.map((d) => d.code).join(', ')}`);
  return r.plan;
}

/** Values of `*secret*` keys written in a config. */
function secretsIn(file: string): string[] {
  return [...readFileSync(file, 'utf8').matchAll(/^\s*\w*secret\w*:\s*(\S+)\s*$/gm)].map((m) => m[1]!);
}

describe('golden diffs', () => {
  it('has cases', () => {
    expect(dirs.length).toBeGreaterThanOrEqual(5);
  });

  it.each(dirs)('%s', (name) => {
    const dir = join(CASES, name);
    const diff = diffPlans(compileFile(join(dir, 'old.yaml')), compileFile(join(dir, 'new.yaml')));
    const text = renderDiffText(diff);
    const json = renderDiffJson(diff);
    const txtFile = join(dir, 'expected.txt');
    const jsonFile = join(dir, 'expected.json');
    if (update) {
      writeFileSync(txtFile, text);
      writeFileSync(jsonFile, json);
    }
    expect(existsSync(txtFile), `${name}: run UPDATE_GOLDEN=1 to create expected.txt`).toBe(true);
    expect(text).toBe(readFileSync(txtFile, 'utf8'));
    expect(json).toBe(readFileSync(jsonFile, 'utf8'));
    const secrets = [...secretsIn(join(dir, 'old.yaml')), ...secretsIn(join(dir, 'new.yaml'))];
    expect(secrets.length).toBeGreaterThan(0);
    for (const s of secrets) {
      expect(text).not.toContain(s);
      expect(json).not.toContain(s);
    }
  });
});
