/**
 * What a `svc run plan.json` process loads: started with bench/modules/record-modules.mjs (node's
 * in-thread module hooks), asked with SIGUSR2 once it serves, read back as one report per process
 * (the single process, or the primary and each worker). Shared by bench/modules/run.ts (the
 * inventory) and test/runtime/process/footprint.test.ts (what a plan must not load).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const HOOK = join(ROOT, 'bench/modules/record-modules.mjs');
const SVC = join(ROOT, 'bin/svc');

/** One process's report (record-modules.mjs). */
export interface ProcessReport {
  readonly pid: number;
  readonly worker: boolean;
  readonly rss: number;
  readonly heapUsed: number;
  readonly heapTotal: number;
  readonly external: number;
  /** [url, the url of its first importer or null], in load order. */
  readonly modules: readonly (readonly [string, string | null])[];
}

/** Every process of one `svc run`, once it served. */
export interface RunReport {
  readonly single?: ProcessReport;
  readonly primary?: ProcessReport;
  readonly workers: readonly ProcessReport[];
}

/**
 * Starts `svc run <planPath> --workers <workers>` (`svc run -config <path>` with `config`) with the
 * module hook, waits for `listening`, asks every svc process for its report, stops svc. `env` is
 * added to the environment (not replacing it).
 */
export async function recordRun(planPath: string, workers: number, env: Readonly<Record<string, string>> = {}, timeoutMs = 120_000, config = false): Promise<RunReport> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-modules-'));
  const args = ['--expose-gc', '--import', HOOK, SVC, 'run', ...(config ? ['-config'] : []), planPath, '--workers', String(workers), '--listen', '127.0.0.1:0', '--grpc-listen', '127.0.0.1:0', '--shutdown-delay', '0'];
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env, SVC_MODULES_DIR: dir };
  delete childEnv['SVC_CLUSTER_WORKER'];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env: childEnv });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`svc did not say "listening" within ${timeoutMs} ms: ${out}`)), timeoutMs);
      const check = () => {
        if (/"msg":"listening"/.test(out)) {
          clearTimeout(timer);
          resolve();
        }
      };
      child.stdout!.on('data', check);
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`svc exited with ${code}: ${out}`));
      });
    });
    // Startup work that follows `listening` (a worker's first health checks, timers) settles.
    await new Promise((r) => setTimeout(r, 1_000));
    const pids = [child.pid!, ...svcChildren(child.pid!)];
    for (const pid of pids) process.kill(pid, 'SIGUSR2');
    const reports = await collect(dir, pids, 10_000);
    const main = reports.find((r) => r.pid === child.pid)!;
    const rest = reports.filter((r) => r.worker);
    return workers > 1 ? { primary: main, workers: rest } : { single: main, workers: rest };
  } finally {
    await stop(child);
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The reference: bench/proxy/node-floor.mjs (node:http in front of an undici pool, the least a proxy
 * on Node does) at rest after it listens, with the same hook and figures.
 */
export async function recordNodeFloor(port: number, timeoutMs = 30_000): Promise<ProcessReport> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-modules-floor-'));
  const child = spawn(process.execPath, ['--expose-gc', '--import', HOOK, join(ROOT, 'bench/proxy/node-floor.mjs')], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, SVC_MODULES_DIR: dir, BENCH_PORT: String(port), BENCH_UPSTREAM: 'http://127.0.0.1:9' },
  });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  try {
    const deadline = Date.now() + timeoutMs;
    while (!/listening/.test(out)) {
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`node-floor did not listen: ${out}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    await new Promise((r) => setTimeout(r, 1_000));
    process.kill(child.pid!, 'SIGUSR2');
    return (await collect(dir, [child.pid!], 10_000))[0]!;
  } finally {
    await stop(child);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The svc processes among `pid`'s children (cluster workers run bin/svc; tsx's esbuild does not). */
function svcChildren(pid: number): number[] {
  const file = `/proc/${pid}/task/${pid}/children`;
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .trim()
    .split(/\s+/)
    .filter((s) => s !== '')
    .map(Number)
    .filter((p) => {
      try {
        return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(SVC);
      } catch {
        return false;
      }
    });
}

async function collect(dir: string, pids: readonly number[], timeoutMs: number): Promise<ProcessReport[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const names = new Set(readdirSync(dir));
    if (pids.every((p) => names.has(`${p}.json`))) {
      // Written with one writeFileSync each: complete once they parse.
      try {
        return pids.map((p) => JSON.parse(readFileSync(join(dir, `${p}.json`), 'utf8')) as ProcessReport);
      } catch {
        // Still being written.
      }
    }
    if (Date.now() > deadline) throw new Error(`no module report from ${pids.filter((p) => !names.has(`${p}.json`)).join(', ')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/**
 * What a URL belongs to: `node:` for a built-in, the package name for a file under node_modules
 * (`@scope/name` or `name`, the innermost node_modules), else the repository path's first two
 * segments (`runtime/proxy`, `compiler/policy`, `cli`).
 */
export function ownerOf(url: string): string {
  if (url.startsWith('node:')) return 'node:';
  if (!url.startsWith('file:')) return url.replace(/:.*/, ':');
  const path = fileURLToPath(url);
  const at = path.lastIndexOf('/node_modules/');
  if (at >= 0) {
    const parts = path.slice(at + '/node_modules/'.length).split('/');
    return parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!;
  }
  // The build (dist/) is named as the sources it was compiled from.
  const rel = relative(ROOT, path).replace(/^dist\//, '');
  if (rel.startsWith('..')) return path;
  const parts = rel.split('/');
  return parts.length > 2 ? `${parts[0]}/${parts[1]}` : parts[0]!;
}

/** A URL as it is shown: repository-relative, or `package/…path` for a dependency. */
export function shortName(url: string): string {
  if (!url.startsWith('file:')) return url;
  const path = fileURLToPath(url);
  const at = path.lastIndexOf('/node_modules/');
  return at >= 0 ? path.slice(at + '/node_modules/'.length) : relative(ROOT, path).replace(/^dist\//, '');
}

/** One package (or repository folder) a process loaded. */
export interface Owner {
  readonly name: string;
  readonly files: number;
  /** Why it is loaded: the first module of it that was loaded, and its importers up to the entry, one per owner. */
  readonly why: readonly string[];
}

/** The owners of a process's modules, in the order they were first loaded, each with its "why" chain. */
export function owners(report: ProcessReport): Owner[] {
  const parent = new Map(report.modules.map(([u, p]) => [u, p]));
  const byOwner = new Map<string, { files: number; first: string }>();
  for (const [url] of report.modules) {
    const o = ownerOf(url);
    const e = byOwner.get(o);
    if (e) byOwner.set(o, { ...e, files: e.files + 1 });
    else byOwner.set(o, { files: 1, first: url });
  }
  return [...byOwner].map(([name, { files, first }]) => ({ name, files, why: chain(first, parent) }));
}

/** `url` and its importers up to the entry, a step per module whose owner differs from the one before. */
function chain(url: string, parent: ReadonlyMap<string, string | null>): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  let lastOwner = '';
  for (let u: string | null | undefined = url; u && !seen.has(u); u = parent.get(u)) {
    seen.add(u);
    const o = ownerOf(u);
    // Inside a package only the first file counts; repository files are all named.
    if (o !== lastOwner || !u.includes('/node_modules/')) out.push(shortName(u));
    lastOwner = o;
  }
  return out;
}

/** Whether a process loaded any module of a package matching `pattern` (a name, or `@scope/` for a scope). */
export function loadedPackages(report: ProcessReport, pattern: string): string[] {
  const names = new Set(report.modules.map(([u]) => ownerOf(u)));
  return [...names].filter((n) => (pattern.endsWith('/') ? n.startsWith(pattern) : n === pattern));
}
