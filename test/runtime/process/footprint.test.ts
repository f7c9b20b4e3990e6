/**
 * A serving process loads only what its plan uses (docs/architecture.md §5 "Lazy feature loading"):
 * OpenTelemetry only with tracing on, ioredis only with Redis sessions, acme-client only with
 * autocert, the gRPC stack (@grpc/grpc-js, @grpc/proto-loader, protobufjs) only with a gRPC
 * listener, client or health check, the X.509 and ASN.1 libraries (@peculiar/*, tsyringe) only to
 * generate a certificate or to check client certificates. Two checks: the static import graph (no chain of static
 * imports from the entry of `svc run`, a cluster worker or the single process reaches those
 * packages, except through the lazy loaders named below), and real `svc run plan.json` processes
 * whose loaded modules are recorded (bench/modules/record-modules.mjs): a public-only plan loads
 * none of them; with tracing on OpenTelemetry is loaded, so the check can fail both ways. And a
 * feature whose library cannot be loaded refuses the plan at start with a coded error, while a plan
 * without the feature still starts.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, normalize, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prettyJson } from '../../../compiler/plan/canonical-json.ts';
import { loadedPackages, owners, recordRun } from '../../../bench/modules/inventory.ts';
import { BASE_SETTINGS, compileText } from '../../support/compile-text.ts';
import { SVC } from '../../e2e/svc-process.ts';

const ROOT = join(import.meta.dirname, '../../..');

/** The packages a serving process loads only for a plan that uses them (a trailing `/`: a scope). */
const LAZY_PACKAGES = ['@opentelemetry/', 'ioredis', 'acme-client', '@grpc/', 'protobufjs', '@simplewebauthn/', '@peculiar/', 'tsyringe', 'reflect-metadata'];
const isLazy = (pkg: string) => LAZY_PACKAGES.some((p) => (p.endsWith('/') ? pkg.startsWith(p) : pkg === p || pkg.startsWith(`${p}/`)));

/**
 * The entries of a serving process: the CLI (`svc run`), a cluster worker, the single process, the
 * cluster primary; and the roles that serve a plan file.
 */
const ENTRIES = ['cli/main.ts', 'cli/run-command.ts', 'runtime/process/worker.ts', 'runtime/process/run.ts', 'runtime/process/cluster.ts'];

/**
 * The static imports of a source: repository files (relative specifiers) and packages. An
 * `import type` is erased; `import { type A }` is not (verbatimModuleSyntax keeps it as an import
 * with no names, which still loads the module); `import()` loads only when it runs.
 */
function staticImports(file: string): { files: string[]; packages: string[] } {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const files: string[] = [];
  const packages: string[] = [];
  for (const m of text.matchAll(/^\s*(?:import|export)\s+(?!type\b)[^'"]*?from\s+'([^']+)'|^\s*import\s+'([^']+)'/gm)) {
    const spec = m[1] ?? m[2]!;
    if (spec.startsWith('.')) files.push(relative(ROOT, normalize(join(ROOT, dirname(file), spec))));
    else if (!spec.startsWith('node:')) packages.push(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);
  }
  return { files: files.filter((f) => f.endsWith('.ts')), packages };
}

/** Every chain of static imports from `entry` that ends in a lazy package, as `a → b → … → package`. */
function lazyChains(entry: string): string[] {
  const from = new Map<string, string | undefined>([[entry, undefined]]);
  const queue = [entry];
  const found: string[] = [];
  const chainTo = (file: string): string[] => {
    const out: string[] = [];
    for (let f: string | undefined = file; f !== undefined; f = from.get(f)) out.unshift(f);
    return out;
  };
  while (queue.length > 0) {
    const current = queue.shift()!;
    const { files, packages } = staticImports(current);
    for (const p of packages.filter(isLazy)) found.push([...chainTo(current), p].join(' → '));
    for (const f of files) {
      if (from.has(f)) continue;
      from.set(f, current);
      queue.push(f);
    }
  }
  return found;
}

describe('what a serving process loads statically', () => {
  it('no static import chain from svc run, a worker, the single process or the primary reaches OpenTelemetry, ioredis, acme-client, the gRPC stack, the WebAuthn library or the X.509 libraries', () => {
    for (const entry of ENTRIES) expect(lazyChains(entry), entry).toEqual([]);
  });

  it('the rule can fail: it sees the chains of modules that load those packages', () => {
    // The lazy loaders' targets: each reaches its package statically (that is why it is imported with import()).
    expect(lazyChains('runtime/observe/trace/tracer.ts').some((c) => c.endsWith('@opentelemetry/sdk-trace-base'))).toBe(true);
    expect(lazyChains('runtime/databroker/redis-store.ts').some((c) => c.endsWith('ioredis'))).toBe(true);
    expect(lazyChains('runtime/tls/acme/manager.ts').some((c) => c.endsWith('acme-client'))).toBe(true);
    expect(lazyChains('runtime/process/grpc-databroker.ts').some((c) => c.endsWith('@grpc/grpc-js'))).toBe(true);
    expect(lazyChains('runtime/tls/x509.ts').some((c) => c.endsWith('@peculiar/x509'))).toBe(true);
    // `import { type A }` loads the module.
    expect(isLazy('@grpc/proto-loader') && isLazy('ioredis') && !isLazy('ioredis-mock') && !isLazy('undici')).toBe(true);
  });
});

describe('what a serving process loads (svc run plan.json, modules recorded)', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'svc-footprint-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const planFile = (name: string, settings: Record<string, unknown>): string => {
    const config = { ...BASE_SETTINGS, ...settings, routes: [{ from: 'https://app.example.com', to: 'http://127.0.0.1:9', allow_public_unauthenticated_access: true }] };
    const result = compileText(JSON.stringify(config), 'config.json');
    expect(result.plan, JSON.stringify(result.diagnostics)).toBeDefined();
    const path = join(dir, `${name}.json`);
    writeFileSync(path, prettyJson(result.plan!), { mode: 0o600 });
    return path;
  };
  const lazyLoaded = (report: Parameters<typeof owners>[0]) => owners(report).filter((o) => isLazy(o.name)).map((o) => `${o.name} ← ${o.why.slice(1).join(' ← ')}`);

  it('a worker of a public-only plan loads none of them, nor the compiler; with tracing on it loads OpenTelemetry (its primary does not)', async () => {
    const run = await recordRun(planFile('public', {}), 2);
    expect(run.workers.length).toBe(2);
    for (const w of run.workers) {
      expect(lazyLoaded(w)).toEqual([]);
      expect(w.modules.filter(([u]) => /\/compiler\/(?!plan\/)/.test(u))).toEqual([]);
    }
    const traced = await recordRun(planFile('tracing', { tracing_provider: 'apm', tracing_apm_address: '127.0.0.1:9' }), 2);
    for (const w of traced.workers) {
      expect(loadedPackages(w, '@opentelemetry/')).toContain('@opentelemetry/sdk-trace-base');
      expect(loadedPackages(w, 'ioredis')).toEqual([]);
    }
    // The primary serves no request: it makes no span and loads no tracer.
    expect(loadedPackages(traced.primary!, '@opentelemetry/')).toEqual([]);
  }, 180_000);

  it('the single process of a public-only plan loads neither OpenTelemetry, ioredis nor acme-client (its data broker is served over gRPC)', async () => {
    const run = await recordRun(planFile('single', {}), 1);
    expect(lazyLoaded(run.single!).filter((l) => !/^(@grpc\/|protobufjs)/.test(l))).toEqual([]);
    expect(loadedPackages(run.single!, '@grpc/')).toContain('@grpc/grpc-js');
  }, 120_000);
});

describe('a feature whose library cannot be loaded (a broken install)', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'svc-broken-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('svc run refuses the plan at start with SVC_ERR_FEATURE_UNAVAILABLE, and serves a plan without the feature', async () => {
    // A module hook that fails every import of OpenTelemetry's SDK, as a missing package would.
    const hook = join(dir, 'no-otel-sdk.mjs');
    writeFileSync(
      hook,
      `import { registerHooks } from 'node:module';
registerHooks({ resolve(specifier, context, next) {
  if (specifier.startsWith('@opentelemetry/sdk-trace-base')) throw Object.assign(new Error("Cannot find package '" + specifier + "'"), { code: 'ERR_MODULE_NOT_FOUND' });
  return next(specifier, context);
} });
`,
    );
    const plan = (name: string, settings: Record<string, unknown>) => {
      const config = { ...BASE_SETTINGS, ...settings, routes: [{ from: 'https://app.example.com', to: 'http://127.0.0.1:9', allow_public_unauthenticated_access: true }] };
      const result = compileText(JSON.stringify(config), 'config.json');
      const path = join(dir, `${name}.json`);
      writeFileSync(path, prettyJson(result.plan!), { mode: 0o600 });
      return path;
    };
    const run = (planPath: string) =>
      new Promise<{ code: number | null; out: string }>((resolve) => {
        const child = spawn(process.execPath, ['--import', hook, SVC, 'run', planPath, '--workers', '1', '--listen', '127.0.0.1:0', '--grpc-listen', '127.0.0.1:0', '--shutdown-delay', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
        let out = '';
        child.stdout.on('data', (c: Buffer) => {
          out += c.toString();
          if (/"msg":"listening"/.test(out)) child.kill('SIGTERM');
        });
        child.stderr.on('data', (c: Buffer) => (out += c.toString()));
        child.once('exit', (code) => resolve({ code, out }));
      });
    const traced = await run(plan('tracing', { tracing_provider: 'apm', tracing_apm_address: '127.0.0.1:9' }));
    expect(traced.code).not.toBe(0);
    const line = traced.out.split('\n').find((l) => l.includes('svc cannot start'));
    expect(line, traced.out).toBeDefined();
    expect(JSON.parse(line!)).toMatchObject({ level: 'error', code: 'SVC_ERR_PLAN_REFUSED', cause: 'SVC_ERR_FEATURE_UNAVAILABLE', error: expect.stringMatching(/^tracing needs a library that cannot be loaded/) });
    expect(traced.out).not.toMatch(/unhandled|UnhandledPromiseRejection/i);
    // The hook works only against the feature: a plan without tracing starts.
    const plain = await run(plan('plain', {}));
    expect(plain.out).toMatch(/"msg":"listening"/);
  }, 60_000);
});
