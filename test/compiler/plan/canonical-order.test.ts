/**
 * Lowering builds every route with its keys in canonical order, so sealing writes the routes as
 * they are, frozen in place, instead of copies of them (compiler/plan/seal.ts `sealBuilt`).
 * A route built out of order still seals to the same bytes, only slower: this test keeps it fast.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readFromDisk } from '../../../cli/node-input.ts';
import { Reporter } from '../../../compiler/diagnostics/diagnostic.ts';
import { canonicalData } from '../../../compiler/plan/canonical-json.ts';
import { STAGES, type Work } from '../../../compiler/pipeline.ts';
import { configFileOf } from '../../support/compile-dir.ts';

const CASES = join(import.meta.dirname, '../../../fixtures/cases');
/** The cases that compile, whose plans hold every kind of route field and policy the fixtures write. */
const compiling = readdirSync(CASES).filter((name) => existsSync(join(CASES, name, 'plan.json'))).sort();

/** The work record of a case after the stages before `seal`, or undefined when one stopped. */
function workBeforeSeal(dir: string): Work | undefined {
  const config = configFileOf(dir);
  const envFile = join(dir, 'env.json');
  const env = existsSync(envFile) ? (JSON.parse(readFileSync(envFile, 'utf8')) as Record<string, string>) : {};
  const w: Work = { input: { ...(config !== undefined ? { configPath: config } : {}), env, readFile: (p) => readFromDisk(join(dir, p)) }, files: new Set() };
  const r = new Reporter();
  for (const stage of STAGES.filter((s) => s.name !== 'seal')) if (stage.run(w, r) === 'stop') return undefined;
  return w;
}

describe('lowered routes', () => {
  it('are in canonical key order in every fixture that compiles', () => {
    expect(compiling.length).toBeGreaterThan(20);
    const outOfOrder: string[] = [];
    for (const name of compiling) {
      const w = workBeforeSeal(join(CASES, name));
      expect(w?.body, name).toBeDefined();
      w!.body!.routes.forEach((route, i) => {
        if (canonicalData(route) !== route) outOfOrder.push(`${name} routes[${i}]`);
      });
    }
    expect(outOfOrder).toEqual([]);
  });
});
