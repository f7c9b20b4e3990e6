/**
 * Golden fixtures: every directory under fixtures/cases/ is compiled and its diagnostics (code,
 * file:line:col, underlined text, message) and checksum compared with `expected.json`; a case
 * that compiles (warnings allowed) also keeps its whole plan in `plan.json`. `UPDATE_GOLDEN=1`
 * rewrites them; review the diff.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REGISTRY } from '../../compiler/diagnostics/codes.ts';
import { prettyJson } from '../../compiler/plan/canonical-json.ts';
import { compileDir, goldenDiagnostics } from '../support/compile-dir.ts';

const CASES = join(import.meta.dirname, '../../fixtures/cases');
const update = process.env['UPDATE_GOLDEN'] === '1';
const dirs = existsSync(CASES) ? readdirSync(CASES, { withFileTypes: true }).filter((d) => d.isDirectory() && !d.name.startsWith('.')).map((d) => d.name).sort() : [];

/** Codes no fixture can trigger from configuration, and why. */
const NOT_TRIGGERABLE: Record<string, string> = {
  SVC9001: 'internal compiler error: a bug, covered by the "never throws" property test',
  SVC5001: 'plan consistency: a compiler bug, covered by test/compiler/plan/consistency.test.ts',
  SVC5002: 'unreadable config file: a case directory always has its file; covered by test/cli/compile.test.ts',
  SVC2007: 'fallback for JSON-schema keywords the config schema does not use today; kept so a new keyword is still reported',
};

describe('golden cases', () => {
  it.each(dirs)('%s', (name) => {
    const dir = join(CASES, name);
    const result = compileDir(dir);
    const actual = { diagnostics: goldenDiagnostics(result), checksum: result.plan?.checksum ?? null };
    const expectedFile = join(dir, 'expected.json');
    const planFile = join(dir, 'plan.json');
    // Every case that compiles (warnings allowed) keeps its plan, checked against the plan schema too.
    const clean = result.plan !== undefined;
    if (update) {
      writeFileSync(expectedFile, `${JSON.stringify(actual, null, 2)}\n`);
      if (clean) writeFileSync(planFile, prettyJson(result.plan));
    }
    expect(existsSync(expectedFile), `${name}: run UPDATE_GOLDEN=1 to create expected.json`).toBe(true);
    expect(actual).toEqual(JSON.parse(readFileSync(expectedFile, 'utf8')));
    if (clean && existsSync(planFile)) expect(prettyJson(result.plan)).toBe(readFileSync(planFile, 'utf8'));
    // A case named after a diagnostic must trigger it.
    const def = REGISTRY.find((d) => d.name === name.replace(/--.*$/, ''));
    if (def) expect(actual.diagnostics.map((d) => d.code)).toContain(def.code);
  });

  it('every diagnostic code is triggered by a fixture', () => {
    const seen = new Set<string>();
    for (const name of dirs) {
      const file = join(CASES, name, 'expected.json');
      if (!existsSync(file)) continue;
      for (const d of (JSON.parse(readFileSync(file, 'utf8')) as { diagnostics: { code: string }[] }).diagnostics) seen.add(d.code);
    }
    // SVC6xxx are about `svc verify` properties files, not configs: test/cli/verify/diagnostics.test.ts triggers each.
    const missing = REGISTRY.filter((d) => !seen.has(d.code) && !(d.code in NOT_TRIGGERABLE) && !d.code.startsWith('SVC6')).map((d) => `${d.code} ${d.name}`);
    expect(missing).toEqual([]);
  });
});
