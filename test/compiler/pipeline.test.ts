/**
 * The stage table of compiler/pipeline.ts is the compiler (docs/architecture.md §7, after OPA): the stages DESIGN
 * §1 names, in its order, and `compile()` runs exactly them: each stage's part of the work is set
 * when the next one starts, and a stage that stops ends the compile.
 */
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { ConfigReadFailed } from '../../compiler/diagnostics/codes/plan.ts';
import { Reporter } from '../../compiler/diagnostics/diagnostic.ts';
import { runStages, STAGES, type Work } from '../../compiler/pipeline.ts';
import { BASE_SETTINGS } from '../support/compile-text.ts';

const config = stringify({ ...BASE_SETTINGS, routes: [{ from: 'https://app.example.com', to: 'http://127.0.0.1:9', allow_public_unauthenticated_access: true }] });
const input = (text: string | undefined) => ({ configPath: 'config.yaml', env: {}, readFile: () => (text === undefined ? { ok: false as const, reason: 'no such file' } : { ok: true as const, data: Buffer.from(text) }) });

describe('compiler/pipeline.ts', () => {
  it('lists the ten stages of docs/architecture.md §1 in order', () => {
    expect(STAGES.map((s) => `${s.n} ${s.name}`)).toEqual(['1 read', '2 parse', '3 merge', '4 schema', '5 lower', '6 policy', '7 validate', '8 emit', '9 consistency', '10 seal']);
  });

  it('runs every stage in table order, each finding the parts of the stages before it', () => {
    const order: string[] = [];
    const parts: (keyof Work)[][] = [];
    const original = STAGES.map((s) => s.run);
    try {
      for (const stage of STAGES) {
        const run = stage.run;
        (stage as { run: typeof run }).run = (w, r) => {
          order.push(stage.name);
          parts.push((Object.keys(w) as (keyof Work)[]).filter((k) => w[k] !== undefined).sort());
          return run(w, r);
        };
      }
      const plan = runStages(input(config), new Reporter());
      expect(plan?.checksum).toMatch(/^sha256:/);
    } finally {
      STAGES.forEach((s, i) => ((s as { run: unknown }).run = original[i]));
    }
    expect(order).toEqual(STAGES.map((s) => s.name));
    expect(parts[STAGES.findIndex((s) => s.name === 'seal')]).toEqual(expect.arrayContaining(['body', 'coerced', 'merged', 'settings', 'sourceMap']));
  });

  it('stops at the stage that cannot go on: an unreadable file ends the compile at read', () => {
    const r = new Reporter();
    expect(runStages(input(undefined), r)).toBeUndefined();
    expect(r.diagnostics.map((d) => d.code)).toEqual([ConfigReadFailed.code]);
  });
});
