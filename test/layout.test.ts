/**
 * The layout shows the architecture (docs/architecture.md §6): the compiler imports nothing of the runtime or
 * the CLI; the runtime and the CLI import the plan contract (compiler/plan/) and the compiler's
 * public entry point (compiler/index.ts) and nothing else of compiler/; inside the runtime, only
 * `svc run -config` (runtime/run/run.ts) calls the compiler. Read from the import statements.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(dir, f));
}

/** The repository paths a source file imports (relative specifiers only). */
function imports(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/^\s*(?:import|export)\b[^'"]*?from\s+'(\.[^']+)'|^\s*import\s+'(\.[^']+)'|import\(\s*'(\.[^']+)'\s*\)/gm)) {
    const spec = m[1] ?? m[2] ?? m[3]!;
    out.push(relative(ROOT, normalize(join(ROOT, dirname(file), spec))));
  }
  return out;
}

const under = (p: string, dir: string) => p === dir || p.startsWith(`${dir}/`);
const contractOrEntry = (p: string) => under(p, 'compiler/plan') || p === 'compiler/index.ts';

describe('layout (docs/architecture.md §6)', () => {
  it('the compiler imports nothing from runtime/ or cli/', () => {
    const bad = sources('compiler').flatMap((f) => imports(f).filter((p) => under(p, 'runtime') || under(p, 'cli')).map((p) => `${f} → ${p}`));
    expect(bad).toEqual([]);
  });

  it('the runtime imports the plan contract, and only svc run -config the compiler entry point', () => {
    const bad = sources('runtime').flatMap((f) =>
      imports(f)
        .filter((p) => under(p, 'compiler') && !under(p, 'compiler/plan') && !(p === 'compiler/index.ts' && f === 'runtime/run/run.ts'))
        .map((p) => `${f} → ${p}`),
    );
    expect(bad).toEqual([]);
  });

  it('the CLI imports the plan contract and the compiler entry point only (the docs generator reads the registries)', () => {
    const bad = sources('cli')
      .filter((f) => f !== 'cli/generated.ts')
      .flatMap((f) => imports(f).filter((p) => under(p, 'compiler') && !contractOrEntry(p)).map((p) => `${f} → ${p}`));
    expect(bad).toEqual([]);
  });

  it('the rule can fail: it sees the imports of a file that breaks it', () => {
    expect(imports('cli/generated.ts')).toContain('compiler/settings/table.ts');
  });
});
