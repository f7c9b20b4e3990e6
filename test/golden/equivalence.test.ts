/**
 * Format equivalence: each set under fixtures/equivalence/ holds one configuration written as
 * `config.yaml`, `config.json`, `config.toml`, `config.properties` and, in `env.json`, as
 * environment variables only. All must compile without errors to the same checksum.
 * `secrets.env.json` is the environment of every variant (secrets belong in the environment; a
 * secret's place — env or file — is part of the plan, so it must be the same for all variants).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readFromDisk } from '../../cli/node-input.ts';
import { compile } from '../../compiler/compile.ts';

const ROOT = join(import.meta.dirname, '../../fixtures/equivalence');
const sets = readdirSync(ROOT).filter((d) => !d.startsWith('.')).sort();

function readEnv(file: string): Record<string, string> {
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>) : {};
}

describe('every format of one configuration compiles to one checksum', () => {
  it.each(sets)('%s', (set) => {
    const dir = join(ROOT, set);
    const common = readEnv(join(dir, 'secrets.env.json'));
    const variants = readdirSync(dir).filter((f) => /^config\./.test(f)).sort();
    expect(variants.length).toBeGreaterThanOrEqual(4);
    const checksums: Record<string, string | undefined> = {};
    const readFile = (p: string) => readFromDisk(join(dir, p));
    for (const v of variants) {
      const result = compile({ configPath: v, env: common, readFile });
      expect(result.diagnostics.filter((d) => d.severity === 'error').map((d) => `${v}: ${d.code} ${d.message}`)).toEqual([]);
      checksums[v] = result.plan?.checksum;
    }
    if (existsSync(join(dir, 'env.json'))) {
      const result = compile({ env: { ...common, ...readEnv(join(dir, 'env.json')) }, readFile });
      expect(result.diagnostics.filter((d) => d.severity === 'error').map((d) => `env: ${d.code} ${d.message}`)).toEqual([]);
      checksums['env'] = result.plan?.checksum;
    }
    const first = Object.values(checksums)[0];
    expect(first).toMatch(/^sha256:/);
    for (const [v, c] of Object.entries(checksums)) expect(c, v).toBe(first);
  });
});
