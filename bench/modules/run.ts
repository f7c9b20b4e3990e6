/**
 * bench/modules: what a `svc run plan.json` process loads, and its memory once it serves. For a few
 * representative plans (`public`: one public route; `signed-in`: a route that needs a session, memory
 * sessions; `redis`: the same with Redis sessions; `tracing`: `public` with tracing on; `autocert`:
 * `public` over HTTPS with autocert), each served as one process (`--workers 1`) and as a primary
 * with two workers (`--workers 2`, the first worker reported), it prints the process's RSS and heap
 * used (after a full garbage collection) and what it loaded grouped by package, each with why: the
 * first module of it that was loaded and its importers up to the entry. The first plan's list is
 * printed whole; the others as what they load besides it and what they leave out. First, for
 * reference, the same figures of bench/proxy/node-floor.mjs (node:http and an undici pool, no svc).
 *
 * Loading is recorded by bench/modules/record-modules.mjs (node's in-thread module hooks, given with
 * `--import`; workers inherit it). Nothing listens where the plans point (the upstream, Redis, the
 * span collector, the ACME CA): svc starts anyway and logs what it cannot reach; the figures are the
 * process at rest after startup, not under load (bench/proxy measures that). bin/svc runs dist/ when
 * it is newer than every source (`npm run build`), else the sources through tsx, which adds the
 * loader's own memory: the output says which. The machine's other load moves RSS by a few MB.
 *
 * Run: `npm run bench:modules` (`--plans public,tracing`, `--workers 1` or `2` for one shape,
 * `--config` to serve the configs with `svc run -config` instead, which compiles them in svc,
 * `--json FILE` to keep every report).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compile } from '../../compiler/compile.ts';
import { prettyJson } from '../../compiler/plan/canonical-json.ts';
import { BASE_SETTINGS } from '../../test/support/compile-text.ts';
import { freePort } from '../../test/support/ports.ts';
import { owners, recordNodeFloor, recordRun, type ProcessReport, type RunReport } from './inventory.ts';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i < 0 ? undefined : process.argv[i + 1];
}

const UPSTREAM = 'http://127.0.0.1:9';
const route = (extra: Record<string, unknown> = {}) => ({ from: 'https://app.example.com', to: UPSTREAM, ...extra });
const PUBLIC: Record<string, unknown> = { ...BASE_SETTINGS, routes: [route({ allow_public_unauthenticated_access: true })] };
const SIGNED_IN: Record<string, unknown> = { ...BASE_SETTINGS, jwt_claims_headers: ['email', 'groups'], routes: [route({ policy: 'allow if groups has "admins"', pass_identity_headers: true })] };

/** The plans, as config data (compiled here, served as plan files). */
function configs(dir: string): Record<string, Record<string, unknown>> {
  const { insecure_server: _insecure, ...https } = PUBLIC;
  return {
    public: PUBLIC,
    'signed-in': SIGNED_IN,
    redis: { ...SIGNED_IN, databroker_storage_type: 'redis', databroker_storage_connection_string: 'redis://127.0.0.1:9/0' },
    tracing: { ...PUBLIC, tracing_provider: 'apm', tracing_apm_address: '127.0.0.1:9' },
    autocert: { ...https, autocert: true, autocert_ca: 'https://127.0.0.1:9/directory', autocert_dir: join(dir, 'autocert') },
  };
}

function planFile(dir: string, name: string, config: Record<string, unknown>): string {
  const text = JSON.stringify(config);
  const configPath = join(dir, `${name}.json`);
  writeFileSync(configPath, text, { mode: 0o600 });
  if (process.argv.includes('--config')) return configPath;
  const result = compile({ configPath, env: {}, readFile: (p) => (p === configPath ? { ok: true, data: Buffer.from(text) } : { ok: false, reason: 'no such file' }) });
  if (!result.plan) throw new Error(`${name}: the config does not compile: ${result.diagnostics.map((d) => d.message).join('; ')}`);
  const path = join(dir, `${name}.plan.json`);
  writeFileSync(path, prettyJson(result.plan), { mode: 0o600 });
  return path;
}

const mb = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MB`;

function summary(label: string, r: ProcessReport): string {
  const files = r.modules.filter(([u]) => !u.startsWith('node:')).length;
  return `${label.padEnd(28)} rss ${mb(r.rss).padStart(9)}  heap used ${mb(r.heapUsed).padStart(8)}  ${String(files).padStart(5)} files`;
}

function printOwners(r: ProcessReport): void {
  for (const o of owners(r)) {
    if (o.name === 'node:') continue;
    console.log(`    ${o.name.padEnd(38)} ${String(o.files).padStart(4)}  ← ${o.why.slice(1, 6).join(' ← ')}${o.why.length > 6 ? ' ← …' : ''}`);
  }
}

function printDifference(r: ProcessReport, base: ProcessReport): void {
  const baseNames = new Set(owners(base).map((o) => o.name));
  const names = new Set(owners(r).map((o) => o.name));
  const added = owners(r).filter((o) => !baseNames.has(o.name));
  const missing = [...baseNames].filter((n) => !names.has(n));
  if (added.length === 0 && missing.length === 0) console.log('    (the same packages)');
  for (const o of added) console.log(`  + ${o.name.padEnd(38)} ${String(o.files).padStart(4)}  ← ${o.why.slice(1, 6).join(' ← ')}${o.why.length > 6 ? ' ← …' : ''}`);
  for (const n of missing) console.log(`  - ${n}`);
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-modules-'));
  try {
    const all = configs(dir);
    const names = (arg('--plans') ?? Object.keys(all).join(',')).split(',').filter((s) => s !== '');
    for (const n of names) if (!(n in all)) throw new Error(`--plans: unknown plan \`${n}\` (${Object.keys(all).join(', ')})`);
    const shapes = arg('--workers') === undefined ? [1, 2] : [Number(arg('--workers'))];
    const kept: Record<string, RunReport> = {};
    // The reference the target is set against (RSS per worker ≤ the Node floor's + 25 MB).
    console.log(summary('node-floor (reference)', await recordNodeFloor(await freePort())));
    const bases = new Map<string, ProcessReport>();
    for (const name of names) {
      const plan = planFile(dir, name, all[name]!);
      for (const workers of shapes) {
        const report = await recordRun(plan, workers, {}, 120_000, process.argv.includes('--config'));
        kept[`${name}/${workers}`] = report;
        const shown: [string, ProcessReport][] = workers === 1 ? [['single process', report.single!]] : [['cluster primary', report.primary!], ['cluster worker', report.workers[0]!]];
        for (const [label, r] of shown) {
          console.log(summary(`${name}: ${label}`, r));
          const base = bases.get(label);
          if (base === undefined) {
            bases.set(label, r);
            printOwners(r);
          } else printDifference(r, base);
        }
      }
    }
    const json = arg('--json');
    if (json !== undefined) writeFileSync(json, JSON.stringify(kept));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
