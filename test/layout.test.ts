/**
 * The layout shows the architecture (docs/architecture.md §6): the compiler imports nothing of the runtime or
 * the CLI; the runtime and the CLI import the plan contract (compiler/plan/) and the compiler's
 * public entry point (compiler/index.ts) and nothing else of compiler/; inside the runtime, only
 * `svc run -config` (runtime/process/load-plan.ts) calls the compiler. Inside the runtime, each folder is a
 * floor and imports only the floors below it (docs/architecture.md §6), so no two folders import each
 * other and no file imports itself back; `runtime/request/` is the pure request path, with no I/O.
 * Read from the import statements.
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
        .filter((p) => under(p, 'compiler') && !under(p, 'compiler/plan') && !(p === 'compiler/index.ts' && f === 'runtime/process/load-plan.ts'))
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

  it('a cluster worker, and every role serving a plan file, loads no compiler code: only the plan contract', () => {
    for (const root of ['runtime/process/worker.ts', 'runtime/process/run.ts', 'runtime/process/cluster.ts', 'runtime/process/authorize-run.ts', 'runtime/process/databroker-run.ts']) {
      expect(loadedFrom(root).filter((p) => under(p, 'compiler') && !under(p, 'compiler/plan')), root).toEqual([]);
    }
    // The rule can fail: `svc compile` loads the compiler.
    expect(loadedFrom('cli/compile-command.ts')).toContain('compiler/index.ts');
  });
});

/**
 * The files loaded at start from `file`: its static imports and theirs, `import type` left out
 * (erased); a dynamic `import()` loads only when it runs (load-plan.ts imports the compiler so, only
 * to compile a config).
 */
function loadedFrom(file: string): string[] {
  const seen = new Set<string>([file]);
  const queue = [file];
  while (queue.length > 0) {
    const current = queue.pop()!;
    const text = readFileSync(join(ROOT, current), 'utf8');
    for (const m of text.matchAll(/^\s*(?:import|export)\s+(?!type\b)[^'"]*?from\s+'(\.[^']+)'|^\s*import\s+'(\.[^']+)'/gm)) {
      const p = relative(ROOT, normalize(join(ROOT, dirname(current), m[1] ?? m[2]!)));
      if (!seen.has(p) && p.endsWith('.ts')) {
        seen.add(p);
        queue.push(p);
      }
    }
  }
  return [...seen];
}

/** The runtime's floors, bottom to top (docs/architecture.md §6). */
const FLOORS = ['core', 'policy', 'plan', 'request', 'tls', 'upstream', 'observe', 'grpc', 'databroker', 'sessions', 'authorize', 'authn', 'generation', 'proxy', 'process'];
const floorOf = (p: string) => p.split('/')[1]!;

/** Files of a graph that sit on an import cycle (Tarjan's strongly connected components of more than one file). */
function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

/** The bare module names (node: built-ins and packages) a file imports. */
function packages(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  return [...text.matchAll(/^\s*(?:import|export)\b[^'"]*?from\s+'([^.'][^']*)'/gm)].map((m) => m[1]!);
}

describe('the runtime floors (docs/architecture.md §6)', () => {
  const runtime = sources('runtime');

  it('every runtime folder is a floor', () => {
    expect([...new Set(runtime.map(floorOf))].filter((f) => !FLOORS.includes(f))).toEqual([]);
  });

  it('each folder imports only the floors below it', () => {
    const bad = runtime.flatMap((f) =>
      imports(f)
        .filter((p) => under(p, 'runtime') && FLOORS.indexOf(floorOf(p)) > FLOORS.indexOf(floorOf(f)))
        .map((p) => `${f} → ${p}`),
    );
    expect(bad).toEqual([]);
  });

  it('no runtime file imports itself back through others', () => {
    expect(cycles(new Map(runtime.map((f) => [f, imports(f).filter((p) => under(p, 'runtime'))])))).toEqual([]);
  });

  it('the request path does no I/O: no package, and of node: only the pure address check', () => {
    const bad = runtime
      .filter((f) => floorOf(f) === 'request')
      .flatMap((f) => packages(f).filter((m) => m !== 'node:net').map((m) => `${f} → ${m}`));
    expect(bad).toEqual([]);
    const net = runtime.filter((f) => floorOf(f) === 'request' && packages(f).includes('node:net'));
    for (const f of net) expect(readFileSync(join(ROOT, f), 'utf8')).toMatch(/^import \{ isIP \} from 'node:net';$/m);
  });

  it('the rules can fail: a cycle and an upward import are seen', () => {
    expect(cycles(new Map([['a', ['b']], ['b', ['a']], ['c', ['a']]]))).toEqual([['a', 'b']]);
    expect(FLOORS.indexOf(floorOf('runtime/process/run.ts'))).toBeGreaterThan(FLOORS.indexOf(floorOf('runtime/proxy/gate.ts')));
    expect(imports('runtime/proxy/gate.ts').some((p) => floorOf(p) === 'generation')).toBe(true);
  });
});
