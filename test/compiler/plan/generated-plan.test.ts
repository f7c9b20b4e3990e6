/**
 * The plan of the generated 1,000-route config of bench/compile, pinned byte for byte: its checksum,
 * the digest of the whole sealed plan (source map and inputs too) and the digest of its diagnostics,
 * from YAML and from JSON. Speeding the compiler up must not change one byte of it.
 */
import { createHash } from 'node:crypto';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { generateConfig } from '../../../bench/compile/generate.ts';
import { prettyJson } from '../../../compiler/plan/canonical-json.ts';
import { compileText } from '../../support/compile-text.ts';
import { goldenDiagnostics } from '../../support/compile-dir.ts';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const CHECKSUM = 'sha256:a90c40f42f5dc23b3b9b0a75410e5b191b6998a8917d311e5d147522a33ee16d';

describe('the generated 1,000-route config', () => {
  const yaml = generateConfig(1000);
  it.each([
    { format: 'yaml', text: yaml, plan: '3d2038f881d2056e532cfb6106bdc3293ea9b6eadc895c23bf84e91f01f7488c', diagnostics: '50168276305087d8dc8b702f1e4209e926e096741e278038f677ae6d607de443' },
    { format: 'json', text: JSON.stringify(parse(yaml), null, 1), plan: 'a07402b88812b3d0a1fd1a6cb9ee1b6ffda896bde04f3092f642998c3152888e', diagnostics: 'aeb3be85393297ea008dc68d45f0f1b7660b6cbab650ebad1bb34a236b748207' },
  ])('compiles from $format to the same plan and diagnostics as ever', ({ format, text, plan, diagnostics }) => {
    const result = compileText(text, `bench.${format}`);
    expect(result.plan?.checksum).toBe(CHECKSUM);
    expect(sha256(prettyJson(result.plan))).toBe(plan);
    expect(sha256(JSON.stringify(goldenDiagnostics(result)))).toBe(diagnostics);
  });
});
