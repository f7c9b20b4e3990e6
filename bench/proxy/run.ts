/**
 * bench/proxy: svc as a reverse proxy against nginx, in one run on this machine. Starts a native
 * upstream (nginx answering `ok\n` on loopback), then in turn nginx as a plain keep-alive reverse
 * proxy to it and svc with one public route to it, and drives each with the same wrk load
 * (requests/s, p50, p99, errors) while sampling the proxy's RSS and CPU from /proc. Also measures
 * svc with a 10,000-route plan, and both proxies with two workers when svc has `--workers`.
 * Prints a table, the ratios svc/nginx and svc/direct, and the issue's targets beside them.
 *
 * Authenticated targets (one core): `svc-auth` is svc with a route that needs a session
 * (`policy: allow if groups has "admins"`, `pass_identity_headers`, `jwt_claims_headers`, a P-256
 * `signing_key`), loaded with a real session cookie: the bench runs the dev OpenID provider
 * (demo/dev-idp.ts) in its own process and signs alice in through svc with HttpBrowser before the
 * load, then checks that the cookie gets 200, that an anonymous request gets 401, that bob (not in
 * admins) gets 403, and that an upstream receives the signed assertion and the claim headers.
 * `svc-auth-redis` is the same with `databroker_storage_type: redis` against a redis-server the bench
 * starts on the load side's core (no persistence): the per-process cache answers almost every
 * request, so the target is within 5 % of `svc-auth`.
 * `svc-auth-shadow` (not in the default set: `--only svc-auth,svc-auth-shadow`) is svc-auth with
 * `--shadow` (docs/running.md "Shadow plans"): a candidate config with svc-auth's settings whose
 * measured route refuses alice, so every measured request is decided twice and differs (the worst
 * case: the access line's `shadow` object on every line; checked in the log after the run). The
 * report gives its CPU per request against svc-auth (target: under 10 % more).
 * `node-floor` (bench/proxy/node-floor.mjs) is the least a proxy on Node's HTTP stack does: node:http in
 * front of undici's `dispatch` on a keep-alive pool, no checks, no log, on the proxy's core; the report
 * gives svc-auth/node-floor and svc/node-floor by CPU per request, and RSS against it.
 * `apache-oidc` is Apache httpd + mod_auth_openidc (Debian's apache2 and libapache2-mod-auth-openidc),
 * the OpenID Connect relying party operators deploy in front of apps, signed in at the dev IdP like
 * svc-auth (`Require claim groups:admins`, claims as headers, pooled mod_proxy_http, access log);
 * `apache-oidc-cookie` the same with its session in an encrypted cookie (keep warm-up + duration
 * under 25 s: it rewrites that cookie after 30 s). The report gives svc-auth against each by CPU per request.
 * `nginx-authreq` is nginx with `auth_request` to a minimal Node auth service (a session-cookie
 * lookup in a Map, no crypto), pinned to the proxy's core with nginx: both are that target's CPU.
 *
 * Placement: with two or more cores the load side (wrk and the upstream) is pinned to core 0 and a
 * one-core proxy to core 1 (taskset); the direct figure moves the upstream to core 1 for its run,
 * so it is "a native server on the proxy's core". Two-core runs leave everything unpinned: on a
 * two-core machine the proxy's workers share the cores with the load side. The output says where
 * each process was allowed to run, read back from /proc. Both proxies keep their access log on
 * (svc logs one JSON line per request to a file; nginx writes its access log to a file).
 *
 * `svc-distributed` (not in the default set: `--only svc-auth,svc-distributed`) is svc-auth's
 * identity work split over four `svc run` processes from one config (issue 16): the data broker,
 * the authorize service, the authenticate service and the proxy, all pinned to the proxy's core and
 * all counted in its CPU. alice signs in through the proxy and the authenticate service (her
 * session lives in the data broker) and svc-auth's checks run. Two phases then load the same
 * deployment: `cached`, the same session on the bench host, whose verdict the proxy's decision cache
 * holds (target: within 10 % of svc-auth, and no gRPC round trip: the `svc_grpc_server_requests_total`
 * of the authorize service (Check) and of the data broker (session reads), read from their metrics
 * listeners around the measured run, must not move; the proxy has no metrics listener, as svc-auth); `uncached`, `clock.<host>`, whose policy also reads the clock (`date after …`, always true)
 * and so is never cached: every request a Check call. After each phase one connection for 5 s gives
 * the latency of one request at a time; the report gives the uncached decision's extra CPU and
 * latency per request.
 *
 * `svc-traced` (not in the default set: `--only svc,svc-traced`) is the one-core svc with tracing
 * on at the default sample rate (`tracing_provider: apm`, `tracing_sample_rate` unset: 0.0001),
 * sending its few spans to a sink in the bench process; the report gives svc-traced/svc against the
 * issue's "under 3 %" cost, as the geometric mean of two pairs run in opposite orders.
 *
 * Needs nginx and wrk (Debian: `apt-get install -y nginx wrk`; svc-auth-redis also redis-server and
 * redis-cli); CI does not run it. Run: `npm run bench:proxy` (`--duration 10s`, `--connections 64`,
 * `--only svc,nginx,direct,node-floor,apache-oidc,apache-oidc-cookie,svc-auth,svc-auth-redis,svc-auth-shadow,nginx-authreq,svc-traced,svc-distributed`, `--warmup 6s`, `--cpu-prof DIR` to write V8 CPU
 * profiles of the svc processes (and node-floor's) into DIR; `--baseline DIR` another built checkout of svc, whose svc-auth is
 * measured between two runs of this one's, for a before/after in one run; `--node-flags '--max-semi-space-size=32'`
 * Node flags for this checkout's svc only, so a baseline that is a copy of this build makes an A/B of a flag;
 * with `--trace-gc` each svc target also prints its GC pauses, the promotion rate and the KB allocated per request;
 * `--instructions N` counts instead of timing, for svc, node-floor and svc-auth: each runs under valgrind's
 * callgrind, and N requests after N to warm up (`--instructions-warmup M`: after M) give the
 * instructions per request, a figure that does not move with other work on the machine
 * (instructions.ts); `--callgrind-dir DIR` keeps the dumps there;
 * `--rounds K` measures every one-core target K times, interleaved, and takes each one's median round
 * by CPU per request for the ratios). Every child process and the temp dir are removed on exit,
 * Ctrl-C or error.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { chmodSync, closeSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, readSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, request, type IncomingHttpHeaders } from 'node:http';
import { createServer } from 'node:net';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { delimiter, join, resolve as resolvePath } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { startDevIdp } from '../../demo/dev-idp.ts';
import { HttpBrowser } from '../../test/support/http-browser.ts';
import { BASE_SETTINGS, TEST_SECRET } from '../../test/support/compile-text.ts';
import { breakdown, countedLoad, dumpInstructions, headerObject, underCallgrind, zeroCounters, type Breakdown } from './instructions.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const HOST = 'bench.example.com';

// ---------------------------------------------------------------------------------------------
// Options

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i < 0 ? undefined : process.argv[i + 1];
}

/** Seconds in a wrk duration (`10s`, `2m`, `1h`, or a bare number of seconds). */
function seconds(text: string, option: string): number {
  const m = /^(\d+(?:\.\d+)?)([smh]?)$/.exec(text);
  if (!m) throw new UsageError(`${option} \`${text}\` is not a duration like 10s or 1m`);
  return Number(m[1]) * ({ '': 1, s: 1, m: 60, h: 3600 } as const)[m[2] as '' | 's' | 'm' | 'h'];
}

class UsageError extends Error {}

const TARGETS = ['svc', 'nginx', 'direct', 'node-floor', 'svc-auth', 'svc-auth-redis', 'svc-auth-shadow', 'nginx-authreq', 'apache-oidc', 'apache-oidc-cookie', 'svc-traced', 'svc-distributed'] as const;
/** The targets run without `--only`. */
const DEFAULT_TARGETS = ['svc', 'nginx', 'direct', 'node-floor', 'svc-auth', 'nginx-authreq', 'apache-oidc'] as const;
type Target = (typeof TARGETS)[number];

function options() {
  const duration = arg('--duration') ?? '10s';
  // Long enough for V8 to have compiled svc's request path: its compiler threads took 20–30 % of
  // svc-auth's core for the first 4 s of load (per-thread CPU from /proc/PID/task), which a 2 s
  // warm-up left inside the measured run.
  const warmup = arg('--warmup') ?? '6s';
  const connections = Number(arg('--connections') ?? '64');
  if (!Number.isInteger(connections) || connections < 1) throw new UsageError(`--connections \`${arg('--connections')}\` is not a positive integer`);
  const only = (arg('--only') ?? DEFAULT_TARGETS.join(',')).split(',').filter((s) => s !== '');
  for (const t of only) if (!(TARGETS as readonly string[]).includes(t)) throw new UsageError(`--only: unknown target \`${t}\` (${TARGETS.join(', ')})`);
  return {
    duration,
    durationS: seconds(duration, '--duration'),
    warmup,
    warmupS: seconds(warmup, '--warmup'),
    connections,
    only: new Set(only as Target[]),
    cpuProf: arg('--cpu-prof'),
    baseline: arg('--baseline') === undefined ? undefined : resolvePath(arg('--baseline')!),
    // Node/V8 flags for this checkout's svc processes only (a cluster's workers inherit them), never
    // the baseline's: with `--baseline` a copy of this same build, an A/B of a flag in one run.
    nodeFlags: (arg('--node-flags') ?? '').split(' ').filter((f) => f !== ''),
    instructions: instructionsOption(only as Target[]),
    instructionsWarmup: instructionsWarmupOption(),
    rounds: roundsOption(),
    // Where callgrind's dumps go (kept, for callgrind_annotate); default the temp dir, removed on exit.
    callgrindDir: arg('--callgrind-dir') === undefined ? undefined : resolvePath(arg('--callgrind-dir')!),
  };
}

/** `--rounds K`: the one-core targets are measured K times, interleaved (default once). */
function roundsOption(): number {
  const text = arg('--rounds') ?? '1';
  const k = Number(text);
  if (!Number.isInteger(k) || k < 1 || k > 9) throw new UsageError(`--rounds \`${text}\` is not a whole number from 1 to 9`);
  return k;
}

/** The targets `--instructions` counts (instructions.ts): the Node proxies, one process each. */
const COUNTED_TARGETS: readonly Target[] = ['svc', 'node-floor', 'svc-auth'];

/** `--instructions N`: the requests counted per target (and as many for the warm-up); undefined without it. */
function instructionsOption(only: readonly Target[]): number | undefined {
  const text = arg('--instructions');
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 100) throw new UsageError(`--instructions \`${text}\` is not a whole number of requests of at least 100`);
  const other = only.filter((t) => !COUNTED_TARGETS.includes(t));
  if (other.length > 0) throw new UsageError(`--instructions counts only ${COUNTED_TARGETS.join(', ')} (give them with --only); not ${other.join(', ')}`);
  return n;
}

/** `--instructions-warmup M`: the requests sent before counting (default: as many as are counted). */
function instructionsWarmupOption(): number | undefined {
  const text = arg('--instructions-warmup');
  if (text === undefined) return undefined;
  const m = Number(text);
  if (!Number.isInteger(m) || m < 0) throw new UsageError(`--instructions-warmup \`${text}\` is not a whole number of requests`);
  return m;
}

// ---------------------------------------------------------------------------------------------
// Child processes: every one is tracked so that exit, Ctrl-C and errors stop it and its children.

const children = new Set<ChildProcess>();
let tempDir: string | undefined;

/** Pids of `pid` and all its descendants, read from /proc (children files of every thread). */
function processTree(pid: number): number[] {
  const out = [pid];
  for (let i = 0; i < out.length; i++) {
    const p = out[i]!;
    let tasks: string[] = [];
    try {
      tasks = readdirSync(`/proc/${p}/task`);
    } catch {
      continue; // gone
    }
    for (const t of tasks) {
      try {
        for (const c of readFileSync(`/proc/${p}/task/${t}/children`, 'utf8').split(' ')) if (c.trim() !== '') out.push(Number(c));
      } catch {
        // the thread ended between the listing and the read
      }
    }
  }
  return out;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Stops a child: SIGTERM, then SIGKILL to it and every descendant still alive after `graceMs`. */
async function stop(child: ChildProcess, graceMs = 5000): Promise<void> {
  const pid = child.pid;
  if (pid === undefined || child.exitCode !== null || child.signalCode !== null) {
    children.delete(child);
    return;
  }
  const tree = processTree(pid);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  await Promise.race([exited, new Promise((r) => setTimeout(r, graceMs))]);
  for (const p of tree) if (alive(p)) process.kill(p, 'SIGKILL');
  // Descendants (cluster workers, nginx workers) are not our children: wait until they are gone.
  for (let i = 0; i < 50 && tree.some(alive); i++) await new Promise((r) => setTimeout(r, 100));
  children.delete(child);
}

/** Synchronous last resort for `process.on('exit')`: SIGKILL whatever is left, remove the temp dir. */
function cleanupSync(): void {
  for (const c of children) {
    if (c.pid === undefined || c.exitCode !== null || c.signalCode !== null) continue;
    for (const p of processTree(c.pid)) if (alive(p)) process.kill(p, 'SIGKILL');
  }
  children.clear();
  if (tempDir !== undefined) rmSync(tempDir, { recursive: true, force: true });
  tempDir = undefined;
}

async function cleanup(): Promise<void> {
  await Promise.all([...children].map((c) => stop(c, 2000)));
  cleanupSync();
}

let interrupted = false;
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    if (interrupted) return;
    interrupted = true;
    console.error(`\n${sig}: stopping children, removing ${tempDir ?? 'the temp dir'}`);
    void cleanup().finally(() => process.exit(130));
  });
}
process.on('exit', cleanupSync);

/** Which tool to run a command through so that it is pinned; undefined: not pinned. */
let taskset: string | undefined;

/** Starts `cmd args` pinned to `cpus` (a taskset list) when given, output to `logFile`. */
function start(cmd: string, args: readonly string[], cpuList: string | undefined, logFile: string, env: NodeJS.ProcessEnv = process.env): ChildProcess {
  const fd = openSync(logFile, 'a');
  const [file, argv] = cpuList !== undefined && taskset !== undefined ? [taskset, ['-c', cpuList, cmd, ...args]] : [cmd, [...args]];
  const child = spawn(file, argv, { stdio: ['ignore', fd, fd], cwd: ROOT, env });
  closeSync(fd);
  children.add(child);
  child.on('exit', () => children.delete(child));
  return child;
}

/** Moves every thread of `pid` and its descendants to `cpuList` (taskset -a -p). */
function repin(pid: number, cpuList: string): void {
  if (taskset === undefined) return;
  for (const p of processTree(pid)) spawnSync(taskset, ['-a', '-p', '-c', cpuList, String(p)], { stdio: 'ignore' });
}

// ---------------------------------------------------------------------------------------------
// /proc readings

function statusField(pid: number, field: string): string | undefined {
  try {
    const m = new RegExp(`^${field}:\\s*(.*)$`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m?.[1]?.trim();
  } catch {
    return undefined;
  }
}

/** Resident set size in bytes (VmRSS), 0 when the process is gone. */
function rss(pid: number): number {
  const v = statusField(pid, 'VmRSS');
  return v === undefined ? 0 : Number(v.replace(/\s*kB$/, '')) * 1024;
}

/** A process's user and system CPU time in clock ticks (zero once it is gone). */
function cpuTicks(pid: number): { readonly user: number; readonly system: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // f[0] is field 3 (state)
    return { user: Number(f[11]), system: Number(f[12]) };
  } catch {
    return { user: 0, system: 0 };
  }
}

/**
 * Each CPU's time so far from /proc/stat, in clock ticks: all of it, and what the hypervisor gave
 * to other guests while this one wanted to run (steal, the 8th field). On a shared virtual machine
 * steal during a run is time a target waited for its core that counts nowhere in its own CPU time,
 * and a sign that its caches were someone else's meanwhile.
 */
function cpuClock(): readonly { readonly total: number; readonly steal: number }[] {
  try {
    return readFileSync('/proc/stat', 'utf8')
      .split('\n')
      .filter((l) => /^cpu\d+ /.test(l))
      .map((l) => {
        const f = l.split(/\s+/).slice(1, 9).map(Number);
        return { total: f.reduce((a, b) => a + b, 0), steal: f[7] ?? 0 };
      });
  } catch {
    return [];
  }
}

/** Steal per CPU between two `cpuClock` readings, as a fraction of that CPU's time. */
function stealBetween(a: ReturnType<typeof cpuClock>, b: ReturnType<typeof cpuClock>): number[] {
  return b.map((c, i) => {
    const total = c.total - (a[i]?.total ?? 0);
    return total > 0 ? (c.steal - (a[i]?.steal ?? 0)) / total : 0;
  });
}

const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100;

/** The cores a process may run on (Cpus_allowed_list), as read back from /proc. */
function coresOf(pid: number | undefined): string {
  return pid === undefined ? '?' : (statusField(pid, 'Cpus_allowed_list') ?? '?');
}

// ---------------------------------------------------------------------------------------------
// wrk

interface WrkResult {
  readonly rps: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly requests: number;
  readonly non2xx: number;
  readonly socketErrors: { connect: number; read: number; write: number; timeout: number };
  readonly raw: string;
}

/** Milliseconds in a wrk latency (`612.00us`, `1.20ms`, `2.00s`, `1.00m`). */
function latencyMs(text: string): number {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(text);
  if (!m) return Number.NaN;
  return Number(m[1]) * { us: 0.001, ms: 1, s: 1000, m: 60_000 }[m[2] as 'us' | 'ms' | 's' | 'm'];
}

function parseWrk(raw: string): WrkResult {
  const num = (re: RegExp) => Number(re.exec(raw)?.[1] ?? Number.NaN);
  const se = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(raw);
  return {
    rps: num(/Requests\/sec:\s*([\d.]+)/),
    p50Ms: latencyMs(/^\s*50%\s+(\S+)/m.exec(raw)?.[1] ?? ''),
    p99Ms: latencyMs(/^\s*99%\s+(\S+)/m.exec(raw)?.[1] ?? ''),
    requests: num(/(\d+) requests in/),
    non2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(raw)?.[1] ?? 0),
    socketErrors: { connect: Number(se?.[1] ?? 0), read: Number(se?.[2] ?? 0), write: Number(se?.[3] ?? 0), timeout: Number(se?.[4] ?? 0) },
    raw,
  };
}

interface Sample {
  readonly rssTotal: number;
  /** The largest process that serves (helpers such as tsx's esbuild service excluded). */
  readonly rssMaxProcess: number;
  /** Each process: its command name and RSS, the root first. */
  readonly processes: readonly { readonly comm: string; readonly rss: number }[];
}

interface LoadResult {
  readonly wrk: WrkResult;
  readonly end: Sample;
  readonly peak: Sample;
  /** CPU the proxy's processes used during the measured run, in cores (1.0 = one core busy). */
  readonly cpuCores: number;
  /** The part of `cpuCores` that was user time (the rest: the kernel's, mostly socket I/O). */
  readonly userCores: number;
  /** Each CPU's steal during the measured run, as a fraction of its time (`cpuClock`). */
  readonly steal: readonly number[];
  /** The same per process (pid, command name, cores), the root first. */
  readonly cpuByProcess: readonly { readonly pid: number; readonly comm: string; readonly cores: number }[];
  readonly wrkCores: string;
}

/** Processes that run beside the server but do not serve: tsx's esbuild transform service. */
const HELPERS = new Set(['esbuild']);

function comm(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '?';
  }
}

/** Every process of a target: the trees of its root processes (nginx + auth service: two roots). */
function treeOf(roots: readonly number[]): number[] {
  return roots.flatMap(processTree);
}

function sample(roots: readonly number[]): Sample {
  const processes = treeOf(roots)
    .map((p) => ({ comm: comm(p), rss: rss(p) }))
    .filter((p) => p.rss > 0);
  const serving = processes.filter((p) => !HELPERS.has(p.comm)).map((p) => p.rss);
  return { rssTotal: processes.reduce((a, p) => a + p.rss, 0), rssMaxProcess: Math.max(0, ...serving), processes };
}

/** `node 2 (151.2+150.9 MB), esbuild 1 (12.1 MB)`: the processes of a sample by command name. */
function describe(s: Sample): string {
  const by = new Map<string, number[]>();
  for (const p of s.processes) by.set(p.comm, [...(by.get(p.comm) ?? []), p.rss]);
  return [...by].map(([c, sizes]) => `${c} ${sizes.length} (${sizes.map((b) => (b / MB).toFixed(1)).join('+')} MB)`).join(', ');
}

/**
 * Runs wrk once against `port` (with the Host header `host`, default the bench's, and `headers`), sampling the proxy's
 * process trees rooted at `roots` every 250 ms meanwhile.
 */
function wrk(bin: string, port: number, duration: string, connections: number, cpuList: string | undefined, roots: readonly number[], logFile: string, headers: readonly string[], host = HOST): Promise<LoadResult> {
  const args = ['-t1', `-c${connections}`, `-d${duration}`, '--latency', '-H', `Host: ${host}`, ...headers.flatMap((h) => ['-H', h]), `http://127.0.0.1:${port}/`];
  const [file, argv] = cpuList !== undefined && taskset !== undefined ? [taskset, ['-c', cpuList, bin, ...args]] : [bin, args];
  return new Promise((resolve, reject) => {
    const child = spawn(file, argv, { stdio: ['ignore', 'pipe', 'pipe'], cwd: ROOT });
    children.add(child);
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    const names = new Map(treeOf(roots).map((p) => [p, comm(p)]));
    const ticks0 = new Map([...names.keys()].map((p) => [p, cpuTicks(p)]));
    const clock0 = cpuClock();
    let lastClock = clock0;
    const t0 = performance.now();
    let last = sample(roots);
    let peak = last;
    let lastTicks = new Map(ticks0);
    let lastT = t0;
    let wrkCores = '?';
    const timer = setInterval(() => {
      const s = sample(roots);
      if (s.rssTotal === 0) return;
      last = s;
      if (s.rssTotal > peak.rssTotal) peak = s;
      lastTicks = new Map(treeOf(roots).map((p) => [p, cpuTicks(p)]));
      lastClock = cpuClock();
      lastT = performance.now();
      if (wrkCores === '?') wrkCores = coresOf(child.pid);
    }, 250);
    child.on('error', (e) => {
      clearInterval(timer);
      reject(e);
    });
    child.on('exit', (code) => {
      clearInterval(timer);
      children.delete(child);
      writeFileSync(logFile, out, { flag: 'a' });
      if (code !== 0) return reject(new Error(`wrk exited ${code}:\n${out}`));
      const secondsRun = (lastT - t0) / 1000;
      const cores = (ticks: number) => (secondsRun > 0 ? ticks / CLK_TCK / secondsRun : Number.NaN);
      const used = [...lastTicks].map(([p, t]) => {
        const t0p = ticks0.get(p);
        return { pid: p, user: t.user - (t0p?.user ?? 0), system: t.system - (t0p?.system ?? 0) };
      });
      const cpuByProcess = used.map((u) => ({ pid: u.pid, comm: names.get(u.pid) ?? comm(u.pid), cores: cores(u.user + u.system) }));
      const cpuCores = cpuByProcess.reduce((a, p) => a + p.cores, 0);
      const userCores = cores(used.reduce((a, u) => a + u.user, 0));
      resolve({ wrk: parseWrk(out), end: last, peak, cpuCores, userCores, steal: stealBetween(clock0, lastClock), cpuByProcess, wrkCores });
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Targets

/** A free loopback port (bound and released: a small race, fine for a benchmark). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => (typeof a === 'object' && a !== null ? resolve(a.port) : reject(new Error('no port'))));
    });
  });
}

type ProbeResult = { status: number; headers: IncomingHttpHeaders; body: string } | { error: string };

/** One GET of `/` with `headers` (default: the bench Host header): the answer, or an error message. */
function probe(port: number, headers: Readonly<Record<string, string>> = { host: HOST }, path = '/'): Promise<ProbeResult> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, headers, agent: false, timeout: 2000 }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (e) => resolve({ error: e.message }));
    req.end();
  });
}

/** What a target answers once it is ready: the request headers and the expected answer. */
interface ReadyCheck {
  readonly headers: Readonly<Record<string, string>>;
  readonly ok: (status: number, body: string) => boolean;
  /** The expected answer, for the error message. */
  readonly want: string;
}

const OK_200: ReadyCheck = { headers: { host: HOST }, ok: (status, body) => status === 200 && body === 'ok\n', want: '200 ok' };

/** Waits until `port` answers as `check` expects (default: 200 `ok`); fails early when a process exits. */
async function waitReady(name: string, child: ChildProcess | readonly ChildProcess[], port: number, logFile: string, timeoutMs: number, check: ReadyCheck = OK_200): Promise<void> {
  const end = Date.now() + timeoutMs;
  let last = '';
  const all = Array.isArray(child) ? child : [child as ChildProcess];
  while (Date.now() < end) {
    for (const c of all) if (c.exitCode !== null || c.signalCode !== null) throw new Error(`${name} exited (${c.exitCode ?? c.signalCode}) before answering:\n${tail(logFile)}`);
    const r = await probe(port, check.headers);
    if ('status' in r && check.ok(r.status, r.body)) return;
    last = 'status' in r ? `status ${r.status}: ${r.body.slice(0, 200)}` : r.error;
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error(`${name} did not answer ${check.want} on port ${port} within ${timeoutMs} ms (last: ${last}):\n${tail(logFile)}`);
}

/** The last `lines` lines of a file (from its last 64 KiB) that `keep` accepts. */
function tail(file: string, lines = 20, keep: (line: string) => boolean = () => true): string {
  try {
    const size = statSync(file).size;
    const fd = openSync(file, 'r');
    const buf = Buffer.alloc(Math.min(size, 65536));
    readSync(fd, buf, 0, buf.length, size - buf.length);
    closeSync(fd);
    return buf.toString('utf8').trimEnd().split('\n').filter(keep).slice(-lines).join('\n');
  } catch (e) {
    return `(no log: ${(e as Error).message})`;
  }
}

/** nginx's own paths under `dir` so that nothing of the system's configuration or directories is used. */
function nginxCommon(dir: string, name: string, workers: string): string {
  return `worker_processes ${workers};
pid ${join(dir, `${name}.pid`)};
error_log ${join(dir, `${name}-error.log`)} warn;
events { worker_connections 4096; }
`;
}

function nginxTemp(dir: string, name: string): string {
  return ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((k) => `  ${k}_temp_path ${join(dir, `${name}-${k}-temp`)};`).join('\n');
}

function upstreamConf(dir: string, port: number): string {
  return `${nginxCommon(dir, 'upstream', '1')}http {
${nginxTemp(dir, 'upstream')}
  access_log off;
  keepalive_requests 100000000;
  keepalive_timeout 300s;
  server {
    listen 127.0.0.1:${port} backlog=4096;
    location / { default_type text/plain; return 200 "ok\\n"; }
  }
}
`;
}

function proxyConf(dir: string, port: number, upstreamPort: number, workers: number): string {
  return `${nginxCommon(dir, `proxy${workers}`, String(workers))}http {
${nginxTemp(dir, `proxy${workers}`)}
  access_log ${join(dir, `proxy${workers}-access.log`)};
  keepalive_requests 100000000;
  keepalive_timeout 300s;
  upstream backend {
    server 127.0.0.1:${upstreamPort};
    keepalive 64;
    keepalive_requests 100000000;
  }
  server {
    listen 127.0.0.1:${port} backlog=4096;
    location / {
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
`;
}

/** svc's config: the test-only settings, one public route to the upstream, `extra` public routes on other hosts. */
function svcConfig(port: number, upstreamPort: number, extra: number, settings: Record<string, unknown> = {}): string {
  const to = `http://127.0.0.1:${upstreamPort}`;
  const routes: Record<string, unknown>[] = [{ from: `https://${HOST}`, to, allow_public_unauthenticated_access: true }];
  for (let i = 0; i < extra; i++) routes.push({ from: `https://h${i}.${HOST}`, to, allow_public_unauthenticated_access: true });
  return stringify({
    ...BASE_SETTINGS,
    address: `127.0.0.1:${port}`,
    ...settings,
    routes,
  });
}

/**
 * nginx as a reverse proxy that asks an auth service first (`auth_request`): a subrequest per
 * request to the service over kept-alive connections, its `x-user`/`x-groups` answer headers passed
 * on to the upstream (`auth_request_set` + `proxy_set_header`), the session cookie not passed on
 * (as svc strips its own). Access log on, as for the plain proxy.
 */
function authRequestConf(dir: string, port: number, upstreamPort: number, authPort: number): string {
  return `${nginxCommon(dir, 'authreq', '1')}http {
${nginxTemp(dir, 'authreq')}
  access_log ${join(dir, 'authreq-access.log')};
  keepalive_requests 100000000;
  keepalive_timeout 300s;
  upstream backend {
    server 127.0.0.1:${upstreamPort};
    keepalive 64;
    keepalive_requests 100000000;
  }
  upstream authsvc {
    server 127.0.0.1:${authPort};
    keepalive 64;
    keepalive_requests 100000000;
    keepalive_timeout 300s;
  }
  server {
    listen 127.0.0.1:${port} backlog=4096;
    location / {
      auth_request /.auth;
      auth_request_set $auth_user $upstream_http_x_user;
      auth_request_set $auth_groups $upstream_http_x_groups;
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Cookie "";
      proxy_set_header X-User $auth_user;
      proxy_set_header X-Groups $auth_groups;
    }
    location = /.auth {
      internal;
      proxy_pass http://authsvc/auth;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_pass_request_body off;
      proxy_set_header Content-Length "";
      proxy_set_header X-Original-URI $request_uri;
    }
  }
}
`;
}

/**
 * The auth service behind nginx's `auth_request`: plain node:http, one session looked up by its
 * cookie value in a Map (no signature check, no token signing: the least an auth service does),
 * 200 with `x-user` and `x-groups` for a session in `admins`, 403 for another, 401 without one.
 * Idle keep-alive connections stay open longer than nginx keeps them (nginx closes first).
 */
const AUTH_SERVICE = `import { createServer } from 'node:http';
const name = process.env.BENCH_COOKIE_NAME;
const sessions = new Map([[process.env.BENCH_COOKIE_VALUE, { user: 'alice@example.com', groups: ['admins', 'staff'] }]]);
function cookie(header) {
  if (typeof header !== 'string') return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}
const server = createServer((req, res) => {
  const s = sessions.get(cookie(req.headers.cookie));
  if (s === undefined) res.writeHead(401, { 'content-length': '0' });
  else if (!s.groups.includes('admins')) res.writeHead(403, { 'content-length': '0' });
  else res.writeHead(200, { 'x-user': s.user, 'x-groups': s.groups.join(','), 'content-length': '0' });
  res.end();
});
server.keepAliveTimeout = 600000;
server.listen(Number(process.env.BENCH_PORT), '127.0.0.1', () => console.log('auth service listening'));
`;

/** The IdP client svc-auth signs in with. */
const BENCH_CLIENT = { clientId: 'svc-bench', clientSecret: 'svc-bench-secret' } as const;

/** Where Debian's apache2 keeps its modules. */
const APACHE_MODULES = '/usr/lib/apache2/modules';

/**
 * Apache httpd 2.4 with mod_auth_openidc, as operators put it in front of an app: signed in at the
 * dev IdP (code flow with PKCE), `Require claim groups:admins`, the claims passed as headers,
 * mod_proxy_http with keep-alive connections to the upstream, an access log. One event-MPM process
 * with 128 threads (more than wrk's 64 connections). `cookie`: the session in an encrypted cookie
 * (`OIDCSessionType client-cookie`) instead of the shared-memory cache. `/echo/` goes to the echo
 * server, for the check of what an upstream receives.
 */
function apacheOidcConfig(dir: string, port: number, upstreamPort: number, echoPort: number, issuer: string, cookie: boolean): string {
  const m = (name: string, file: string) => `LoadModule ${name} ${APACHE_MODULES}/${file}`;
  return [
    `ServerRoot ${dir}`,
    `Listen 127.0.0.1:${port}`,
    `PidFile ${dir}/apache.pid`,
    `ErrorLog ${dir}/apache-error.log`,
    'LogLevel warn',
    m('mpm_event_module', 'mod_mpm_event.so'),
    m('authn_core_module', 'mod_authn_core.so'),
    m('authz_core_module', 'mod_authz_core.so'),
    m('authz_user_module', 'mod_authz_user.so'),
    m('auth_openidc_module', 'mod_auth_openidc.so'),
    m('proxy_module', 'mod_proxy.so'),
    m('proxy_http_module', 'mod_proxy_http.so'),
    `ServerName ${HOST}`,
    'User www-data',
    'Group www-data',
    'StartServers 1',
    'ServerLimit 1',
    'ThreadLimit 128',
    'ThreadsPerChild 128',
    'MaxRequestWorkers 128',
    'MinSpareThreads 1',
    'MaxSpareThreads 128',
    'KeepAlive On',
    'MaxKeepAliveRequests 0',
    'LogFormat "%h %l %u %t \\"%r\\" %>s %b" common',
    `CustomLog ${dir}/apache-access.log common`,
    `OIDCProviderMetadataURL ${issuer}/.well-known/openid-configuration`,
    `OIDCClientID ${BENCH_CLIENT.clientId}`,
    `OIDCClientSecret ${BENCH_CLIENT.clientSecret}`,
    `OIDCRedirectURI http://${HOST}/redirect_uri`,
    'OIDCCryptoPassphrase bench-only-passphrase-not-a-secret',
    'OIDCPKCEMethod S256',
    'OIDCScope "openid email profile groups"',
    'OIDCPassClaimsAs headers',
    cookie ? 'OIDCSessionType client-cookie' : 'OIDCSessionType server-cache',
    'OIDCCacheType shm',
    '<Location />',
    '  AuthType openid-connect',
    '  Require claim groups:admins',
    '</Location>',
    'ProxyPass /redirect_uri !',
    `ProxyPass /echo/ http://127.0.0.1:${echoPort}/ keepalive=On`,
    `ProxyPass / http://127.0.0.1:${upstreamPort}/ keepalive=On`,
    '',
  ].join('\n');
}
const ADMINS_POLICY = 'allow if groups has "admins"';

/** The identity settings svc-auth and svc-distributed share: sign-in through the dev IdP on plain HTTP, the authenticate service on `authenticate.localhost:<authenticatePort>`. */
function identitySettings(authenticatePort: number, issuer: string, signingKey: string): Record<string, unknown> {
  return {
    insecure_server: true,
    shared_secret: TEST_SECRET,
    cookie_secret: TEST_SECRET,
    cookie_secure: false,
    authenticate_service_url: `http://authenticate.localhost:${authenticatePort}`,
    signout_redirect_url: 'https://example.com/',
    idp_provider: 'oidc',
    idp_provider_url: issuer,
    idp_client_id: BENCH_CLIENT.clientId,
    idp_client_secret: BENCH_CLIENT.clientSecret,
    signing_key: signingKey,
    jwt_claims_headers: ['email', 'groups'],
  };
}

/**
 * svc with full identity work: the route on the bench host needs a session in `admins`, sends the
 * signed assertion and the email/groups claim headers upstream. A second route with the same
 * settings on `echo.<host>` goes to an upstream that echoes the request, for the checks before the
 * load (the measured route is the first). Sign-in through the dev IdP on plain HTTP, the
 * authenticate service on `authenticate.localhost:<port>` (svc's own port).
 */
function svcAuthConfig(port: number, upstreamPort: number, echoPort: number, issuer: string, signingKey: string, storage: Record<string, unknown> = {}, measuredPolicy = ADMINS_POLICY): string {
  const route = (from: string, to: string, policy = ADMINS_POLICY) => ({ from, to, policy, pass_identity_headers: true });
  return stringify({
    ...identitySettings(port, issuer, signingKey),
    address: `127.0.0.1:${port}`,
    routes: [route(`https://${HOST}`, `http://127.0.0.1:${upstreamPort}`, measuredPolicy), route(`https://echo.${HOST}`, `http://127.0.0.1:${echoPort}`)],
    ...storage,
  });
}

/**
 * The policy of svc-distributed's uncached route: ADMINS_POLICY and a clock criterion that always
 * holds. A verdict that reads the clock is never cached (runtime/authorize/policy-reads.ts), so
 * every request on that route is a Check call to the authorize service; `date` is the cheapest
 * clock criterion (one comparison, no time-zone work).
 */
const UNCACHED_POLICY = `${ADMINS_POLICY} and date after "2000-01-01T00:00:00Z"`;

/**
 * The data broker's gRPC methods a proxy calls for a request (session reads); the others (leases,
 * Watch) are background work whose count does not follow the load.
 */
const REQUEST_PATH_METHODS: ReadonlySet<string> = new Set(['Get', 'IsRevoked']);

/**
 * The ports of svc-distributed's four `svc run` processes and of the metrics listeners of the two
 * gRPC services: the proxy has none, as svc-auth has none (its metrics cost every request CPU).
 */
interface DistributedPorts {
  readonly proxy: number;
  readonly authenticate: number;
  readonly authorize: number;
  readonly databroker: number;
  readonly authorizeMetrics: number;
  readonly databrokerMetrics: number;
}

/**
 * svc-distributed's one config, shared by its four role processes (the role from `SERVICES`, the
 * listeners from `--listen`/`--grpc-listen`, the metrics listener from `METRICS_ADDRESS`): the same
 * identity settings as svc-auth, the authenticate service on its own port, plaintext gRPC on
 * loopback between the roles. Routes: the measured one on the bench host (ADMINS_POLICY, its
 * verdict cached by the proxy), the echo route for the checks, and `clock.<host>` with
 * UNCACHED_POLICY (never cached).
 */
function svcDistributedConfig(ports: DistributedPorts, upstreamPort: number, echoPort: number, issuer: string, signingKey: string): string {
  const route = (from: string, to: string, policy = ADMINS_POLICY) => ({ from, to, policy, pass_identity_headers: true });
  const upstream = `http://127.0.0.1:${upstreamPort}`;
  return stringify({
    ...identitySettings(ports.authenticate, issuer, signingKey),
    grpc_insecure: true,
    authorize_service_url: `http://127.0.0.1:${ports.authorize}`,
    databroker_service_url: `http://127.0.0.1:${ports.databroker}`,
    routes: [route(`https://${HOST}`, upstream), route(`https://echo.${HOST}`, `http://127.0.0.1:${echoPort}`), route(`https://clock.${HOST}`, upstream, UNCACHED_POLICY)],
  });
}

/** The text of a `/metrics` scrape on loopback `port`. */
async function scrape(port: number): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  if (!res.ok) throw new CheckError(`the metrics listener on ${port} answered ${res.status}`);
  return res.text();
}

/**
 * The samples of counter `name` in a Prometheus text scrape, summed by the value of `label` (the
 * other labels summed over). A hand-written reader: prom-client writes, it does not parse.
 */
function countersBy(text: string, name: string, label: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (m?.[1] !== name) continue;
    const key = new RegExp(`(?:^|,)${label}="([^"]*)"`).exec(m[2] ?? '')?.[1] ?? '';
    out.set(key, (out.get(key) ?? 0) + Number(m[3]));
  }
  return out;
}

/** `after − before` per key, keeping the keys that moved. */
function moved(before: ReadonlyMap<string, number>, after: ReadonlyMap<string, number>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [k, v] of after) if (v !== (before.get(k) ?? 0)) out.set(k, v - (before.get(k) ?? 0));
  return out;
}

/** Waits until `logFile` has a line that `re` matches; fails early when `child` exits. */
async function waitLogLine(name: string, child: ChildProcess, logFile: string, re: RegExp, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${name} exited (${child.exitCode ?? child.signalCode}) before it listened:\n${tail(logFile)}`);
    if (existsSync(logFile) && re.test(readFileSync(logFile, 'utf8'))) return;
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error(`${name} did not log ${re.source} within ${timeoutMs} ms:\n${tail(logFile)}`);
}

/** A P-256 signing key as the config takes it (base64 of the PKCS#8 PEM). Bench-only, never saved. */
function benchSigningKey(): string {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return Buffer.from(privateKey.export({ type: 'pkcs8', format: 'pem' }) as string).toString('base64');
}

/** The claims of a JWT (its middle part), or undefined. Not verified: a check of what was sent. */
function jwtClaims(token: string | undefined): Record<string, unknown> | undefined {
  try {
    return JSON.parse(Buffer.from(token?.split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/** An upstream in this process that answers with the request headers it received (JSON). */
async function startEcho(): Promise<{ port: number; close(): Promise<void> }> {
  const server = createHttpServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ headers: req.headers }));
  });
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', () => res()));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    close: () =>
      new Promise<void>((res) => {
        server.closeAllConnections();
        server.close(() => res());
      }),
  };
}

class CheckError extends Error {}

/**
 * Signs alice in through svc for real (route → authenticate service → dev IdP login → callback →
 * hand-off → route) and checks, stopping on failure: her cookie gets `200 ok` on the bench host;
 * an anonymous request gets 401; the echo route's upstream receives an assertion and the claim
 * headers for alice in admins and no `_svc` cookie; bob (groups: guests) signs in and gets 403.
 * Returns alice's session-cookie value. `who`: the target, for messages; `logs`: the log tails to
 * show on failure.
 */
async function signInAndCheck(who: string, port: number, browser: () => HttpBrowser, logs: () => string): Promise<string> {
  const fail = (what: string, detail: string) => new CheckError(`${who}: ${what}\n${detail}\n${logs()}`);
  const hopsText = (hops: readonly { url: string; status: number }[]) => hops.map((h) => `  ${h.status} ${h.url.length > 120 ? `${h.url.slice(0, 120)}…` : h.url}`).join('\n');

  const alice = browser();
  const hops = await alice.signIn(`http://${HOST}/`, 'alice@example.com');
  const last = hops[hops.length - 1];
  const value = alice.cookies(HOST)['_svc'];
  if (last?.status !== 200 || last.body !== 'ok\n' || value === undefined) throw fail('signing alice in did not end with 200 ok and a session cookie', hopsText(hops));
  const cookie = `_svc=${value}`;
  const signed = await probe(port, { host: HOST, cookie });
  const anonymous = await probe(port, { host: HOST, accept: 'application/json' });
  if (!('status' in signed) || signed.status !== 200 || signed.body !== 'ok\n') throw fail('the session cookie did not get 200 ok', JSON.stringify(signed));
  if (!('status' in anonymous) || anonymous.status !== 401) throw fail('an anonymous request did not get 401', JSON.stringify(anonymous));
  // The same settings on the echo route: what an upstream receives.
  const echoed = await probe(port, { host: `echo.${HOST}`, cookie });
  if (!('status' in echoed) || echoed.status !== 200) throw fail('the echo route did not answer 200', JSON.stringify(echoed));
  const seen = (JSON.parse(echoed.body) as { headers: Record<string, string | undefined> }).headers;
  const claims = jwtClaims(seen['x-svc-jwt-assertion']);
  const groups = claims?.['groups'];
  if (claims?.['email'] !== 'alice@example.com' || !Array.isArray(groups) || !groups.includes('admins')) throw fail('the upstream did not receive an x-svc-jwt-assertion for alice in admins', JSON.stringify(seen));
  if (seen['x-svc-claim-email'] !== 'alice@example.com' || !String(seen['x-svc-claim-groups']).split(',').includes('admins')) throw fail('the upstream did not receive the claim headers', JSON.stringify(seen));
  if ((seen['cookie'] ?? '').includes('_svc=')) throw fail('the session cookie reached the upstream', JSON.stringify(seen));
  // The policy is by group: bob (groups: guests) signs in and is refused.
  const bob = browser();
  const bobHops = await bob.signIn(`http://${HOST}/`, 'bob@other.example');
  const bobCookie = bob.cookies(HOST)['_svc'];
  const bobAnswer = bobCookie === undefined ? undefined : await probe(port, { host: HOST, cookie: `_svc=${bobCookie}`, accept: 'application/json' });
  if (bobAnswer === undefined || !('status' in bobAnswer) || bobAnswer.status !== 403) throw fail('bob (not in admins) was not refused with 403', `${hopsText(bobHops)}\n${JSON.stringify(bobAnswer)}`);
  const header = JSON.parse(Buffer.from(String(seen['x-svc-jwt-assertion']).split('.')[0] ?? '', 'base64url').toString('utf8')) as { alg?: string };
  console.log(`  check: alice signed in through the dev IdP (${hops.length} hops), cookie ${value.length} chars: 200 ok with it, 401 without;`);
  console.log(`         upstream got x-svc-jwt-assertion (${header.alg ?? '?'}, email ${String(claims['email'])}, groups ${groups.join(',')}), x-svc-claim-email/-groups, no _svc cookie; bob (guests): 403`);
  return value;
}

// ---------------------------------------------------------------------------------------------
// Main

/** What svc-distributed measures beside the load figures, per phase (cached, uncached). */
interface DistributedFigures {
  /** Check calls the authorize service answered (its `svc_grpc_server_requests_total`) during the warm-up and during the measured run. */
  readonly checksWarmup: number;
  readonly checksMeasured: number;
  /** gRPC calls the data broker answered during the measured run (its `svc_grpc_server_requests_total`), by method. */
  readonly brokerCalls: ReadonlyMap<string, number>;
  /** CPU of each role's processes over the measured run, in cores. */
  readonly cpuByRole: ReadonlyMap<string, number>;
  /** wrk with one connection after the measured run: the latency of one request at a time. */
  readonly oneConnection: WrkResult;
}

/**
 * The garbage-collection pauses V8 printed (`--node-flags --trace-gc`) into a process's output
 * after byte `from`: how many of each kind, their total and the longest, in ms of the main
 * thread; the promotion rate; and the bytes allocated per request of the `requests` answered.
 * Undefined when the output has no such line (no --trace-gc, or not a Node target).
 */
function gcPauses(file: string, from: number, requests: number): string | undefined {
  if (!existsSync(file)) return undefined;
  const text = readFileSync(file).subarray(from).toString('latin1');
  const byKind = new Map<string, number[]>();
  for (const m of text.matchAll(/ms: (Scavenge|Mark-Compact|Minor Mark-Sweep|Mark-Sweep)\b[^\n]*?MB, (?:pooled: [\d.]+ MB, )?([\d.]+) \/ [\d.]+ ms/g)) {
    const list = byKind.get(m[1]!) ?? [];
    list.push(Number(m[2]));
    byKind.set(m[1]!, list);
  }
  if (byKind.size === 0) return undefined;
  const kinds = [...byKind].map(([kind, ms]) => `${ms.length} ${kind} (total ${ms.reduce((a, b) => a + b, 0).toFixed(0)} ms, longest ${Math.max(...ms).toFixed(1)} ms)`);
  const promoted = promotionRate(text);
  const allocated = allocatedMb(text);
  const perRequest = allocated !== undefined && requests > 0 ? `; ${((allocated * 1024 * 1024) / requests / 1024).toFixed(1)} KB allocated per request` : '';
  return `GC pauses in the measured run (--trace-gc): ${kinds.join(', ')}${promoted === undefined ? '' : `; heap after each scavenge grows ${promoted} (what survives, promoted toward a mark-compact)`}${perRequest}`;
}

/**
 * The MB the JavaScript heap allocated between the first and the last collection in the text: each
 * collection's heap before it, less the heap after the one before (per process, summed). It does
 * not depend on the machine's speed, so an allocation saved shows where CPU time is too noisy.
 */
function allocatedMb(text: string): number | undefined {
  const after = new Map<string, number>();
  let total = 0;
  let counted = false;
  for (const m of text.matchAll(/\[(\d+):0x[0-9a-f]+\]\s+\d+ ms: (?:Scavenge|Mark-Compact) ([\d.]+) \([\d.]+\) -> ([\d.]+) \(/g)) {
    const previous = after.get(m[1]!);
    if (previous !== undefined) {
      total += Number(m[2]) - previous;
      counted = true;
    }
    after.set(m[1]!, Number(m[3]));
  }
  return counted ? total : undefined;
}

/**
 * How fast the heap left after a scavenge grows from one scavenge to the next, in MB/s (a
 * mark-compact starts the count again): the rate at which objects survive young collections and
 * fill the old generation. Per process (two workers' lines interleave); the fastest is given.
 */
function promotionRate(text: string): string | undefined {
  const perProcess = new Map<string, { prev: { ms: number; mb: number } | undefined; grown: number; span: number }>();
  for (const m of text.matchAll(/\[(\d+):0x[0-9a-f]+\]\s+(\d+) ms: (Scavenge|Mark-Compact) [\d.]+ \([\d.]+\) -> ([\d.]+) \(/g)) {
    const p = perProcess.get(m[1]!) ?? { prev: undefined, grown: 0, span: 0 };
    perProcess.set(m[1]!, p);
    const at = { ms: Number(m[2]), mb: Number(m[4]) };
    if (m[3] === 'Scavenge' && p.prev !== undefined) {
      p.grown += at.mb - p.prev.mb;
      p.span += at.ms - p.prev.ms;
    }
    p.prev = m[3] === 'Scavenge' ? at : undefined;
  }
  const rates = [...perProcess.values()].filter((p) => p.span > 0).map((p) => p.grown / (p.span / 1000));
  return rates.length === 0 ? undefined : `${Math.max(...rates).toFixed(2)} MB/s`;
}

interface Row {
  readonly label: string;
  readonly kind: 'direct' | 'nginx' | 'node-floor' | 'svc' | 'nginx-authreq' | 'apache-oidc' | 'apache-oidc-cookie' | 'svc-auth' | 'svc-auth-baseline' | 'svc-auth-redis' | 'svc-auth-shadow' | 'svc-traced' | 'svc-distributed' | 'svc-distributed-uncached';
  readonly distributed?: DistributedFigures;
  readonly cores: 1 | 2;
  readonly routes?: number;
  readonly placement: string;
  readonly result: LoadResult;
  /** RSS once it answered, before any load. */
  readonly startRss: number;
  readonly logFile: string;
}

const MB = 1024 * 1024;
const fmtMs = (ms: number) => (Number.isFinite(ms) ? `${ms < 10 ? ms.toFixed(2) : ms.toFixed(1)} ms` : '?');
const fmtMb = (b: number) => `${(b / MB).toFixed(1)} MB`;
const fmtRps = (r: number) => Math.round(r).toLocaleString('en-US');

/** A program on PATH (or in /usr/sbin, /sbin where Debian puts nginx), or undefined. */
function which(name: string): string | undefined {
  const dirs = [...(process.env['PATH'] ?? '').split(delimiter), '/usr/sbin', '/sbin', '/usr/local/sbin'];
  for (const d of dirs) if (d !== '' && existsSync(join(d, name))) return join(d, name);
  return undefined;
}

/** Whether bin/svc will run dist/: the same test as bin/svc (dist/.stamp newer than every source). */
function builtIsFresh(root: string = ROOT): boolean {
  const newest = (d: string): number => {
    let n = 0;
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) n = Math.max(n, newest(p));
      else if (/\.(ts|proto|json)$/.test(e.name)) n = Math.max(n, statSync(p).mtimeMs);
    }
    return n;
  };
  try {
    const stamp = statSync(join(root, 'dist/.stamp')).mtimeMs;
    return ['compiler', 'runtime', 'cli', 'schemas'].every((d) => newest(join(root, d)) <= stamp);
  } catch {
    return false;
  }
}

async function main(): Promise<number> {
  let opts: ReturnType<typeof options>;
  try {
    opts = options();
  } catch (e) {
    if (e instanceof UsageError) {
      console.error(`error: ${e.message}`);
      return 2;
    }
    throw e;
  }
  const nginx = which('nginx');
  const wrkBin = which('wrk');
  if (nginx === undefined || wrkBin === undefined) {
    console.error(`bench:proxy needs nginx and wrk (missing: ${[nginx ? '' : 'nginx', wrkBin ? '' : 'wrk'].filter(Boolean).join(', ')})`);
    console.error('install them, e.g. on Debian/Ubuntu: apt-get update && apt-get install -y nginx wrk');
    return 2;
  }
  taskset = which('taskset');
  const valgrind = opts.instructions === undefined ? undefined : which('valgrind');
  if (opts.instructions !== undefined && (valgrind === undefined || which('callgrind_control') === undefined)) {
    console.error('--instructions needs valgrind (its callgrind tool and callgrind_control); on Debian: apt-get install -y valgrind');
    return 2;
  }
  const nproc = availableParallelism();
  // The load side (wrk, upstream) on core 0, a one-core proxy on core 1; nothing pinned on one core.
  const pinned = taskset !== undefined && nproc >= 2;
  const LOAD = pinned ? '0' : undefined;
  const PROXY = pinned ? '1' : undefined;
  const ALL = pinned ? `0-${nproc - 1}` : undefined;

  const svcHelp = spawnSync(process.execPath, [join(ROOT, 'bin/svc'), 'run', '--help'], { encoding: 'utf8', cwd: ROOT });
  const hasWorkers = /--workers\b/.test(svcHelp.stdout ?? '');
  const nginxVersion = spawnSync(nginx, ['-v'], { encoding: 'utf8' }).stderr.trim();
  const wrkVersion = (spawnSync(wrkBin, ['-v'], { encoding: 'utf8' }).stdout ?? '').split('\n')[0]?.trim();
  const load0 = loadavg();

  console.log('bench:proxy');
  console.log(`machine: ${nproc} cores (nproc), ${cpus()[0]?.model ?? '?'}; node ${process.version}; ${nginxVersion}; ${wrkVersion}`);
  console.log(`load average at start: ${load0.map((l) => l.toFixed(2)).join(' ')} (1/5/15 min; other work on the machine skews the figures)`);
  if (opts.instructions === undefined) console.log(`load: wrk -t1 -c${opts.connections} -d${opts.duration} --latency -H 'Host: ${HOST}', after a ${opts.warmup} warm-up run`);
  else console.log(`load: ${opts.instructions} requests over ${opts.connections} connections after ${opts.instructionsWarmup === undefined ? 'as many' : opts.instructionsWarmup} to warm up, each target under valgrind --tool=callgrind: instructions per request (user space)`);
  if (opts.only.has('svc-auth') || opts.only.has('nginx-authreq')) console.log("      authenticated targets also -H 'Cookie: _svc=<session>' (svc-auth: a real session, signed in before the load)");
  console.log(
    pinned
      ? `placement: wrk and the upstream on core ${LOAD}, one-core proxies on core ${PROXY} (direct: the upstream moved to core ${PROXY}; nginx-authreq: its Node auth service on core ${PROXY} too); two-core runs unpinned (cores ${ALL})`
      : `placement: not pinned (${taskset === undefined ? 'no taskset' : 'one core'})`,
  );
  const svcFrom = builtIsFresh() && process.env['SVC_FROM_SOURCE'] !== '1' ? 'dist/ (compiled build)' : 'TypeScript sources through tsx (dist/ missing or older than a source: `npm run build`)';
  if (opts.only.has('svc') || opts.only.has('svc-auth') || opts.only.has('svc-distributed')) console.log(`svc runs from ${svcFrom}`);
  const cpuProfDir = opts.cpuProf === undefined ? undefined : resolvePath(opts.cpuProf);
  if (cpuProfDir !== undefined) console.log(`CPU profiles of svc processes: ${cpuProfDir} (node --cpu-prof; profiling slows svc down)`);
  console.log('');

  tempDir = mkdtempSync(join(tmpdir(), 'svc-bench-proxy-'));
  const dir = tempDir;
  const rows: Row[] = [];
  const counted: Counted[] = [];
  // The round measured now (--rounds); every row records it.
  let round = 1;
  const callgrindDir = opts.callgrindDir ?? dir;
  if (opts.instructions !== undefined) mkdirSync(callgrindDir, { recursive: true });

  /** Starts Node with `args`: under callgrind with `--instructions` (instructions.ts). */
  const startNode = (args: readonly string[], cpuList: string | undefined, log: string, env: NodeJS.ProcessEnv = process.env): ChildProcess => {
    if (valgrind === undefined) return start(process.execPath, args, cpuList, log, env);
    const cg = underCallgrind(valgrind, callgrindDir);
    // --perf-basic-prof: Node names its JIT code in /tmp/perf-PID.map, which the breakdown reads.
    return start(cg.cmd, [...cg.args, process.execPath, '--perf-basic-prof', ...args], cpuList, log, env);
  };
  /** How long a Node target may take to answer: 15 times as long under callgrind. */
  const readyMs = (ms: number) => (valgrind === undefined ? ms : 15 * ms);

  /**
   * `--instructions`: `n` requests to warm up, the counters zeroed, `n` counted requests, the
   * counters dumped (instructions.ts). Every counted request must get 200; the row is printed and
   * kept for reportCounted.
   */
  const count = async (label: string, kind: Row['kind'], port: number, roots: readonly number[], headers: Readonly<Record<string, string>>, n: number): Promise<undefined> => {
    const pid = roots[0]!;
    await countedLoad(port, opts.instructionsWarmup ?? n, opts.connections, headers);
    zeroCounters(pid);
    const statuses = await countedLoad(port, n, opts.connections, headers);
    // The last responses' access lines and clean-up run after the client has them.
    await new Promise((r) => setTimeout(r, 500));
    const instructions = dumpInstructions(pid, callgrindDir);
    if (statuses.get(200) !== n) throw new CheckError(`${label}: of ${n} counted requests, not all got 200: ${JSON.stringify(Object.fromEntries(statuses))}`);
    const row: Counted = { label, kind, perRequest: instructions / n, ...breakdown(pid, callgrindDir, n) };
    // The perf map is kept beside the dumps with --callgrind-dir (the names of their JIT code), else removed.
    if (opts.callgrindDir !== undefined && existsSync(`/tmp/perf-${pid}.map`)) copyFileSync(`/tmp/perf-${pid}.map`, join(callgrindDir, `perf-${pid}.map`));
    rmSync(`/tmp/perf-${pid}.map`, { force: true });
    counted.push(row);
    console.log(`  ${label.padEnd(30)} ${Math.round(row.perRequest).toLocaleString('en-US').padStart(9)} instructions per request, ${Math.round(running(row)).toLocaleString('en-US')} without the JIT compiler and the garbage collector`);
    return undefined;
  };

  // The upstream serves every run; started once.
  const upstreamPort = await freePort();
  writeFileSync(join(dir, 'upstream.conf'), upstreamConf(dir, upstreamPort));
  const upstreamLog = join(dir, 'upstream.out');
  const upstream = start(nginx, ['-p', dir, '-e', join(dir, 'upstream-error.log'), '-c', join(dir, 'upstream.conf'), '-g', 'daemon off;'], LOAD, upstreamLog);
  await waitReady('upstream nginx', upstream, upstreamPort, upstreamLog, 10_000);
  console.log(`upstream: nginx on 127.0.0.1:${upstreamPort}, cores ${processTree(upstream.pid!).map(coresOf).join('/')}`);

  /**
   * Warm-up, then the measured run; prints one progress line and returns the row. `roots`: the
   * target's processes (their trees are sampled); `headers`: wrk headers beside Host; `host`: the
   * Host header (default the bench's); `around`: called after the warm-up and after the measured run.
   */
  const measure = async (
    label: string,
    kind: Row['kind'],
    cores: 1 | 2,
    port: number,
    roots: readonly number[],
    placementProxy: string,
    logFile: string,
    extra: { readonly routes?: number; readonly headers?: readonly string[]; readonly host?: string; readonly around?: { afterWarmup(): Promise<void>; afterMeasured(): Promise<void> } } = {},
  ): Promise<Row | undefined> => {
    const { routes, headers = [], host = HOST, around } = extra;
    if (opts.instructions !== undefined) return count(label, kind, port, roots, headerObject(host, headers), opts.instructions);
    const wrkCpus = cores === 1 ? LOAD : ALL;
    const startRss = sample(roots).rssTotal;
    if (opts.warmupS > 0) await wrk(wrkBin, port, opts.warmup, opts.connections, wrkCpus, roots, join(dir, 'wrk.out'), headers, host);
    await around?.afterWarmup();
    const logBefore = existsSync(logFile) ? statSync(logFile).size : 0;
    const result = await wrk(wrkBin, port, opts.duration, opts.connections, wrkCpus, roots, join(dir, 'wrk.out'), headers, host);
    await around?.afterMeasured();
    const gc = gcPauses(logFile, logBefore, result.wrk.requests);
    const placement = `wrk ${result.wrkCores}, upstream ${processTree(upstream.pid!).map(coresOf).join('/')}, ${kind === 'direct' ? 'server' : 'proxy'} ${placementProxy}`;
    const row: Row = { label: opts.rounds > 1 && cores === 1 ? `${label}, round ${round}` : label, kind, cores, ...(routes !== undefined ? { routes } : {}), placement, result, startRss, logFile };
    rows.push(row);
    const w = result.wrk;
    const errs = w.non2xx + w.socketErrors.connect + w.socketErrors.read + w.socketErrors.write + w.socketErrors.timeout;
    const cpu = result.cpuByProcess.map((p) => `${p.comm} ${p.cores.toFixed(2)}`).join(' + ');
    console.log(`  ${label.padEnd(30)} ${fmtRps(w.rps).padStart(8)} req/s  p50 ${fmtMs(w.p50Ms)}  p99 ${fmtMs(w.p99Ms)}  errors ${errs}`);
    console.log(`  ${''.padEnd(30)} RSS at start ${fmtMb(startRss)}, end of load ${describe(result.end)}; CPU ${cpu} cores; ${placement}`);
    if (gc !== undefined) console.log(`  ${''.padEnd(30)} ${gc}`);
    return row;
  };

  if (opts.only.has('direct')) {
    console.log('direct:');
    if (PROXY !== undefined) repin(upstream.pid!, PROXY);
    await measure('direct (upstream nginx)', 'direct', 1, upstreamPort, [upstream.pid!], processTree(upstream.pid!).map(coresOf).join('/'), upstreamLog);
    if (LOAD !== undefined) repin(upstream.pid!, LOAD);
  }

  const runNginx = async (workers: 1 | 2) => {
    const port = await freePort();
    const conf = join(dir, `proxy${workers}.conf`);
    writeFileSync(conf, proxyConf(dir, port, upstreamPort, workers));
    const log = join(dir, `proxy${workers}.out`);
    const child = start(nginx, ['-p', dir, '-e', join(dir, `proxy${workers}-error.log`), '-c', conf, '-g', 'daemon off;'], workers === 1 ? PROXY : ALL, log);
    try {
      await waitReady(`nginx proxy (${workers} workers)`, child, port, log, 10_000);
      const cores = processTree(child.pid!).map(coresOf).join('/');
      await measure(`nginx proxy, ${workers} worker${workers > 1 ? 's' : ''}`, 'nginx', workers, port, [child.pid!], cores, join(dir, `proxy${workers}-error.log`));
    } finally {
      await stop(child);
    }
  };

  /**
   * apache-oidc: Apache httpd + mod_auth_openidc on the proxy's core (apacheOidcConfig), alice signed
   * in through the dev IdP before the load and her session cookie sent by wrk; checked first: 200 ok
   * with it, her claims reach the upstream as headers, bob (guests) is refused.
   */
  const runApacheOidc = async (kind: 'apache-oidc' | 'apache-oidc-cookie') => {
    const apache = which('apache2');
    if (!apache || !existsSync(join(APACHE_MODULES, 'mod_auth_openidc.so'))) {
      console.log(`  ${kind}: skipped: needs Debian's apache2 and libapache2-mod-auth-openidc`);
      return;
    }
    // mod_auth_openidc rewrites a cookie session after 30 s of use: the measured run stays within it.
    if (kind === 'apache-oidc-cookie' && opts.warmupS + opts.durationS >= 25) console.log(`  ${kind}: warm-up + duration is ${opts.warmupS + opts.durationS} s; its cookie session is rewritten after 30 s, so keep them under 25 s`);
    const port = await freePort();
    const idp = await startDevIdp({ clients: [{ ...BENCH_CLIENT, redirectUris: [`http://${HOST}/redirect_uri`], postLogoutRedirectUris: ['https://example.com/'] }] });
    const echo = await startEcho();
    const conf = join(dir, `${kind}.conf`);
    writeFileSync(conf, apacheOidcConfig(dir, port, upstreamPort, echo.port, idp.issuer, kind === 'apache-oidc-cookie'));
    const errorLog = join(dir, 'apache-error.log');
    // Apache drops to www-data for its threads: the files it reads after that must be readable.
    chmodSync(dir, 0o755);
    const child = start(apache, ['-f', conf, '-DFOREGROUND'], PROXY, join(dir, `${kind}.out`));
    try {
      // A browser's request (Accept: text/html) is sent to sign in; others get 401.
      await waitReady(kind, child, port, errorLog, 10_000, { headers: { host: HOST, accept: 'text/html' }, ok: (status) => status === 302, want: '302 to the identity provider' });
      const browser = () =>
        new HttpBrowser((url) => {
          if (url.hostname === HOST) return { port };
          if (url.hostname === '127.0.0.1' && Number(url.port) === idp.port) return { port: idp.port };
          return undefined;
        });
      const alice = browser();
      const hops = await alice.signIn(`http://${HOST}/`, 'alice@example.com');
      const cookies = alice.cookies(HOST);
      const session = Object.entries(cookies).filter(([name]) => name.startsWith('mod_auth_openidc_session'));
      if (hops.at(-1)?.status !== 200 || session.length === 0) throw new CheckError(`${kind}: signing alice in did not end with 200 and a session cookie\n${hops.map((h) => `  ${h.status} ${h.url}`).join('\n')}\n${tail(errorLog)}`);
      const cookie = session.map(([name, value]) => `${name}=${value}`).join('; ');
      const ok = await probe(port, { host: HOST, cookie });
      if (!('status' in ok) || ok.status !== 200 || ok.body !== 'ok\n') throw new CheckError(`${kind}: alice's session did not get 200 ok: ${JSON.stringify(ok)}`);
      const echoed = await probe(port, { host: HOST, cookie }, '/echo/');
      const seen = 'status' in echoed && echoed.status === 200 ? (JSON.parse(echoed.body) as { headers: Record<string, string | undefined> }).headers : {};
      if (seen['oidc_claim_email'] !== 'alice@example.com' || !String(seen['oidc_claim_groups']).split(',').includes('admins')) throw new CheckError(`${kind}: the upstream did not receive alice's claims as headers: ${JSON.stringify(echoed)}`);
      const bob = browser();
      const bobHops = await bob.signIn(`http://${HOST}/`, 'bob@other.example');
      if (bobHops.at(-1)?.status === 200) throw new CheckError(`${kind}: bob (not in admins) was not refused`);
      console.log(`  check: ${kind}: alice signed in through the dev IdP (${hops.length} hops), cookie ${cookie.length} chars: 200 ok with it; upstream got OIDC_CLAIM_email/groups; bob (guests): ${bobHops.at(-1)?.status}`);
      const cores = processTree(child.pid!).map(coresOf).join('/');
      await measure(`Apache + mod_auth_openidc, ${kind === 'apache-oidc' ? 'shm sessions' : 'cookie sessions'}`, kind, 1, port, [child.pid!], cores, errorLog, { headers: [`Cookie: ${cookie}`] });
    } finally {
      await stop(child);
      await echo.close();
      await idp.close();
    }
  };

  /** node-floor: node:http + undici `dispatch` (node-floor.mjs) on the proxy's core: Node's floor. */
  const runNodeFloor = async () => {
    const port = await freePort();
    const log = join(dir, 'node-floor.out');
    // Profiled beside svc with `--cpu-prof`, for a side-by-side of where the microseconds go.
    const prof = cpuProfDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${cpuProfDir}`, '--cpu-prof-name=node-floor.cpuprofile'];
    const child = startNode([...prof, join(ROOT, 'bench/proxy/node-floor.mjs')], PROXY, log, { ...process.env, BENCH_PORT: String(port), BENCH_UPSTREAM: `http://127.0.0.1:${upstreamPort}` });
    try {
      await waitReady('node-floor', child, port, log, readyMs(10_000));
      await measure('node-floor (node:http + undici dispatch)', 'node-floor', 1, port, [child.pid!], processTree(child.pid!).map(coresOf).join('/'), log);
    } finally {
      await stop(child);
    }
  };

  /**
   * svc-traced: the one-core svc with tracing on at the default rate, its spans PUT to a sink here
   * (the apm agent's intake, answered 200 and counted).
   */
  const runSvcTraced = async () => {
    let spansReceived = 0;
    const sink = createHttpServer((req, res) => {
      req.resume();
      req.on('end', () => {
        spansReceived += Number(req.headers['x-datadog-trace-count'] ?? 0);
        res.end('{}');
      });
    });
    await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', () => resolve()));
    const sinkPort = (sink.address() as { port: number }).port;
    try {
      await runSvc(1, 0, { tracing_provider: 'apm', tracing_apm_address: `127.0.0.1:${sinkPort}` }, 'svc-traced');
      console.log(`  svc-traced: the apm sink received ${spansReceived} trace${spansReceived === 1 ? '' : 's'} (sample rate 0.0001)`);
    } finally {
      sink.close();
    }
  };

  const runSvc = async (workers: 1 | 2, extraRoutes: number, settings: Record<string, unknown> = {}, kind: 'svc' | 'svc-traced' = 'svc') => {
    const port = await freePort();
    const conf = join(dir, `${kind}-${workers}w-${extraRoutes + 1}r.yaml`);
    writeFileSync(conf, svcConfig(port, upstreamPort, extraRoutes, settings));
    const log = join(dir, `${kind}-${workers}w-${extraRoutes + 1}r.log`);
    const { child, from } = startSvc(conf, workers, workers === 1 ? PROXY : ALL, log);
    try {
      await waitReady(`svc (${workers} workers, ${extraRoutes + 1} routes)`, child, port, log, readyMs(120_000));
      const cores = processTree(child.pid!).map(coresOf).join('/');
      const label = `${kind === 'svc-traced' ? 'svc traced (0.0001)' : 'svc'}, ${workers} worker${workers > 1 ? 's' : ''}, ${(extraRoutes + 1).toLocaleString('en-US')} route${extraRoutes > 0 ? 's' : ''}${from}`;
      await measure(label, kind, workers, port, [child.pid!], cores, log, { routes: extraRoutes + 1 });
    } finally {
      await stop(child);
    }
  };

  /**
   * Starts `svc run -config conf` (with `--workers` when svc has it, then `role.args`, and
   * `role.env` added to the environment), pinned to `cpuList`. bin/svc
   * decides at each start whether it runs dist/ or the sources: a source edited during the bench
   * makes the later svc runs slower, so `from` marks such a run (added to its label).
   */
  function startSvc(conf: string, workers: 1 | 2, cpuList: string | undefined, log: string, role: { readonly args: readonly string[]; readonly env: Readonly<Record<string, string>> } = { args: [], env: {} }, root: string = ROOT): { child: ChildProcess; from: string } {
    const prof = cpuProfDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${cpuProfDir}`];
    // No shutdown delay: the bench stops svc at once (and a CPU profile is written only on a clean exit).
    const flags = root === ROOT ? opts.nodeFlags : [];
    const args = [...prof, ...flags, join(root, 'bin/svc'), 'run', '-config', conf, '--shutdown-delay', '0', ...(hasWorkers ? ['--workers', String(workers)] : []), ...role.args];
    const env = { ...process.env, ...role.env };
    delete env['SVC_CLUSTER_WORKER'];
    const fromSource = process.env['SVC_FROM_SOURCE'] === '1' || !builtIsFresh(root);
    if (fromSource && svcFrom.startsWith('dist')) console.log('  warning: a source changed since the build: this svc runs from TypeScript through tsx (slower); `npm run build` and rerun');
    return { child: startNode(args, cpuList, log, env), from: fromSource ? ' (from source)' : '' };
  }

  /** A random session-cookie value for nginx-authreq when svc-auth did not sign in (same shape: base64url). */
  let sessionCookie: string | undefined;

  const runNginxAuthRequest = async () => {
    const port = await freePort();
    const authPort = await freePort();
    const cookieValue = sessionCookie ?? randomBytes(120).toString('base64url');
    const script = join(dir, 'auth-service.mjs');
    writeFileSync(script, AUTH_SERVICE);
    const authLog = join(dir, 'auth-service.out');
    const auth = start(process.execPath, [script], PROXY, authLog, { ...process.env, BENCH_PORT: String(authPort), BENCH_COOKIE_NAME: '_svc', BENCH_COOKIE_VALUE: cookieValue });
    const conf = join(dir, 'authreq.conf');
    writeFileSync(conf, authRequestConf(dir, port, upstreamPort, authPort));
    const log = join(dir, 'authreq.out');
    const child = start(nginx, ['-p', dir, '-e', join(dir, 'authreq-error.log'), '-c', conf, '-g', 'daemon off;'], PROXY, log);
    try {
      const cookie = `_svc=${cookieValue}`;
      await waitReady('nginx + auth_request', [child, auth], port, join(dir, 'authreq-error.log'), 10_000, { ...OK_200, headers: { host: HOST, cookie } });
      const anonymous = await probe(port);
      if (!('status' in anonymous) || anonymous.status !== 401) throw new CheckError(`nginx + auth_request: a request without the session cookie answered ${'status' in anonymous ? anonymous.status : anonymous.error}, not 401`);
      const cores = `${processTree(child.pid!).map(coresOf).join('/')}, auth service ${coresOf(auth.pid)}`;
      console.log(`  check: nginx + auth_request answers 200 with the cookie, 401 without (auth service: node:http, pid ${auth.pid}, cores ${coresOf(auth.pid)})`);
      await measure('nginx + auth_request, 1 worker', 'nginx-authreq', 1, port, [child.pid!, auth.pid!], cores, join(dir, 'authreq-error.log'), { headers: [`Cookie: ${cookie}`] });
    } finally {
      await stop(child);
      await stop(auth);
    }
  };

  /** A redis-server for svc-auth-redis, on the load side's core, without persistence. */
  const startRedisServer = async (): Promise<{ port: number; child: ChildProcess }> => {
    const redisBin = which('redis-server');
    if (redisBin === undefined) throw new CheckError('svc-auth-redis needs redis-server (Debian: apt-get install -y redis-server)');
    const port = await freePort();
    const child = start(redisBin, ['--bind', '127.0.0.1', '--port', String(port), '--save', '', '--appendonly', 'no', '--dir', dir], LOAD, join(dir, 'redis.log'));
    for (let i = 0; ; i++) {
      const ping = spawnSync('redis-cli', ['-p', String(port), 'PING'], { encoding: 'utf8' });
      if (ping.stdout?.includes('PONG')) break;
      if (i > 200) throw new CheckError(`redis-server did not answer on ${port}: ${tail(join(dir, 'redis.log'))}`);
      await new Promise((r) => setTimeout(r, 25));
    }
    return { port, child };
  };

  const runSvcAuth = async (kind: 'svc-auth' | 'svc-auth-redis' | 'svc-auth-baseline' | 'svc-auth-shadow') => {
    const root = kind === 'svc-auth-baseline' ? opts.baseline! : ROOT;
    const redis = kind === 'svc-auth-redis' ? await startRedisServer() : undefined;
    const port = await freePort();
    const authOrigin = `http://authenticate.localhost:${port}`;
    const idp = await startDevIdp({ clients: [{ ...BENCH_CLIENT, redirectUris: [`${authOrigin}/oauth2/callback`], postLogoutRedirectUris: ['https://example.com/'] }] });
    const echo = await startEcho();
    const conf = join(dir, 'svc-auth.yaml');
    const storage = redis ? { databroker_storage_type: 'redis', databroker_storage_connection_string: `redis://127.0.0.1:${redis.port}/0` } : {};
    const signingKey = benchSigningKey();
    writeFileSync(conf, svcAuthConfig(port, upstreamPort, echo.port, idp.issuer, signingKey, storage));
    // svc-auth-shadow: the same settings, the measured route refusing alice (every request differs).
    const candidate = join(dir, 'svc-auth-candidate.yaml');
    if (kind === 'svc-auth-shadow') writeFileSync(candidate, svcAuthConfig(port, upstreamPort, echo.port, idp.issuer, signingKey, storage, `${ADMINS_POLICY} and email is "nobody@example.com"`));
    const log = join(dir, `${kind}.log`);
    const { child, from } = startSvc(conf, 1, PROXY, log, kind === 'svc-auth-shadow' ? { args: ['--shadow', candidate], env: {} } : undefined, root);
    try {
      // Ready: the route answers an anonymous API request with 401 (it needs a session).
      await waitReady('svc (authenticated route)', child, port, log, readyMs(120_000), { headers: { host: HOST, accept: 'application/json' }, ok: (status) => status === 401, want: '401 to an anonymous request' });
      const browser = () =>
        new HttpBrowser((url) => {
          if (url.hostname === HOST || url.hostname.endsWith(`.${HOST}`)) return { port };
          if (url.hostname === 'authenticate.localhost' && Number(url.port) === port) return { port };
          if (url.hostname === '127.0.0.1' && Number(url.port) === idp.port) return { port: idp.port };
          return undefined;
        });
      const value = await signInAndCheck(kind, port, browser, () => `svc log tail (${log}):\n${tail(log)}`);
      if (kind === 'svc-auth' || kind === 'svc-auth-redis') sessionCookie = value;
      const cookie = `_svc=${value}`;
      const cores = processTree(child.pid!).map(coresOf).join('/');
      const label = kind === 'svc-auth-baseline' ? `svc, 1 worker, authenticated, baseline ${root}` : `svc, 1 worker, authenticated${redis ? ', Redis store' : ''}${kind === 'svc-auth-shadow' ? ', shadow plan' : ''}${opts.nodeFlags.length > 0 ? `, node ${opts.nodeFlags.join(' ')}` : ''}`;
      await measure(`${label}${from}`, kind, 1, port, [child.pid!], cores, log, { routes: 2, headers: [`Cookie: ${cookie}`] });
      // The shadow plan did decide: the measured requests' lines name the candidate's refusal.
      if (kind === 'svc-auth-shadow') {
        const shadowed = readFileSync(log, 'utf8').split('\n').filter((l) => l.includes('"shadow":{"change":"allow_to_deny"')).length;
        if (shadowed === 0) throw new CheckError(`svc-auth-shadow: no access line names the shadow plan's decision: --shadow did not run\nsvc log tail (${log}):\n${tail(log)}`);
        console.log(`  check: ${shadowed} access lines name the shadow plan's refusal (allow_to_deny)`);
      }
    } finally {
      await stop(child);
      await echo.close();
      await idp.close();
      if (redis) await stop(redis.child);
    }
  };

  /**
   * svc-distributed: the data broker, authorize, authenticate and proxy roles as four `svc run`
   * processes from one config (svcDistributedConfig), every one pinned to the proxy core and
   * counted in the target's CPU (as nginx-authreq's auth service is). Alice signs in through the
   * proxy and the authenticate service (the session lives in the data broker), the checks of
   * svc-auth run, then two phases in the same deployment: the cached route (the same session on
   * every request: the proxy's decision cache answers) and the uncached one (`clock.<host>`: every
   * request a Check call). Around each measured run the authorize service's and the data broker's
   * gRPC server counters are read from their metrics listeners; after it, one connection for 5 s gives the
   * latency of one request at a time.
   */
  const runSvcDistributed = async () => {
    const ports: DistributedPorts = { proxy: await freePort(), authenticate: await freePort(), authorize: await freePort(), databroker: await freePort(), authorizeMetrics: await freePort(), databrokerMetrics: await freePort() };
    const idp = await startDevIdp({ clients: [{ ...BENCH_CLIENT, redirectUris: [`http://authenticate.localhost:${ports.authenticate}/oauth2/callback`], postLogoutRedirectUris: ['https://example.com/'] }] });
    const echo = await startEcho();
    const conf = join(dir, 'svc-distributed.yaml');
    writeFileSync(conf, svcDistributedConfig(ports, upstreamPort, echo.port, idp.issuer, benchSigningKey()));
    const roles = (['databroker', 'authorize', 'authenticate', 'proxy'] as const).map((role) => {
      const log = join(dir, `svc-distributed-${role}.log`);
      const args = role === 'proxy' || role === 'authenticate' ? ['--listen', `127.0.0.1:${ports[role]}`] : ['--grpc-listen', `127.0.0.1:${ports[role]}`];
      const metrics = role === 'authorize' ? ports.authorizeMetrics : role === 'databroker' ? ports.databrokerMetrics : undefined;
      const env: Record<string, string> = { SERVICES: role, ...(metrics !== undefined ? { METRICS_ADDRESS: `127.0.0.1:${metrics}` } : {}) };
      return { role, log, ...startSvc(conf, 1, PROXY, log, { args, env }) };
    });
    const proxy = roles.find((r) => r.role === 'proxy')!;
    const logs = () => roles.map((r) => `${r.role} log tail (${r.log}):\n${tail(r.log, 10)}`).join('\n');
    try {
      for (const r of roles) await waitLogLine(`svc-distributed ${r.role}`, r.child, r.log, /"msg":"listening"/, 120_000);
      await waitReady('svc-distributed proxy', roles.map((r) => r.child), ports.proxy, proxy.log, 120_000, { headers: { host: HOST, accept: 'application/json' }, ok: (status) => status === 401, want: '401 to an anonymous request' });
      const browser = () =>
        new HttpBrowser((url) => {
          if (url.hostname === HOST || url.hostname.endsWith(`.${HOST}`)) return { port: ports.proxy };
          if (url.hostname === 'authenticate.localhost' && Number(url.port) === ports.authenticate) return { port: ports.authenticate };
          if (url.hostname === '127.0.0.1' && Number(url.port) === idp.port) return { port: idp.port };
          return undefined;
        });
      const value = await signInAndCheck('svc-distributed', ports.proxy, browser, logs);
      const cookie = `_svc=${value}`;
      const clock = await probe(ports.proxy, { host: `clock.${HOST}`, cookie });
      if (!('status' in clock) || clock.status !== 200 || clock.body !== 'ok\n') throw new CheckError(`svc-distributed: the uncached route did not answer 200 ok to alice\n${JSON.stringify(clock)}\n${logs()}`);
      // The proxy asked the authorize service: its Check counter moved during the checks.
      const checks = async () => countersBy(await scrape(ports.authorizeMetrics), 'svc_grpc_server_requests_total', 'grpc_method').get('Check') ?? 0;
      const brokerCalls = async () => countersBy(await scrape(ports.databrokerMetrics), 'svc_grpc_server_requests_total', 'grpc_method');
      const checked = await checks();
      if (checked === 0) throw new CheckError(`svc-distributed: the authorize service answered no Check call during the checks: the proxy did not ask it\n${logs()}`);
      const roots = roles.map((r) => r.child.pid!);
      const cores = roles.map((r) => `${r.role} ${processTree(r.child.pid!).map(coresOf).join('/')}`).join(', ');
      console.log(`  check: the authorize service answered ${checked} Check calls during the checks; the uncached route answers alice 200 ok`);

      const phase = async (label: string, kind: 'svc-distributed' | 'svc-distributed-uncached', host: string) => {
        let checks1 = 0;
        let checks2 = 0;
        let calls1 = new Map<string, number>();
        let calls2 = new Map<string, number>();
        const checks0 = await checks();
        const around = {
          afterWarmup: async () => {
            checks1 = await checks();
            calls1 = await brokerCalls();
          },
          afterMeasured: async () => {
            checks2 = await checks();
            calls2 = await brokerCalls();
          },
        };
        const row = await measure(label, kind, 1, ports.proxy, roots, cores, proxy.log, { routes: 3, headers: [`Cookie: ${cookie}`], host, around });
        if (row === undefined) throw new Error('svc-distributed is never counted (--instructions refuses it)');
        const pidRole = new Map(roles.flatMap((r) => processTree(r.child.pid!).map((p) => [p, r.role] as const)));
        const cpuByRole = new Map<string, number>();
        for (const p of row.result.cpuByProcess) {
          const role = pidRole.get(p.pid) ?? 'other';
          cpuByRole.set(role, (cpuByRole.get(role) ?? 0) + p.cores);
        }
        const one = (await wrk(wrkBin, ports.proxy, '5s', 1, LOAD, roots, join(dir, 'wrk.out'), [`Cookie: ${cookie}`], host)).wrk;
        const figures: DistributedFigures = { checksWarmup: checks1 - checks0, checksMeasured: checks2 - checks1, brokerCalls: moved(calls1, calls2), cpuByRole, oneConnection: one };
        rows[rows.indexOf(row)] = { ...row, distributed: figures };
        const calls = [...figures.brokerCalls].map(([m, n]) => `${m} ${n}`).join(', ') || 'none';
        console.log(`  ${''.padEnd(30)} Check calls answered by authorize: ${figures.checksWarmup} in the warm-up, ${figures.checksMeasured} in the measured run (${row.result.wrk.requests} requests); calls answered by the data broker in the measured run: ${calls}`);
        console.log(`  ${''.padEnd(30)} CPU by role: ${[...cpuByRole].map(([r, c]) => `${r} ${c.toFixed(2)}`).join(', ')} cores; one connection: p50 ${fmtMs(one.p50Ms)}, p99 ${fmtMs(one.p99Ms)}, ${fmtRps(one.rps)} req/s`);
      };
      await phase(`svc distributed, cached${proxy.from}`, 'svc-distributed', HOST);
      await phase(`svc distributed, uncached${proxy.from}`, 'svc-distributed-uncached', `clock.${HOST}`);
    } finally {
      for (const r of [...roles].reverse()) await stop(r.child);
      await echo.close();
      await idp.close();
    }
  };

  console.log('one core:');
  // With --rounds K every one-core target runs K times, interleaved (round 1 of each, then round 2…),
  // so a slow minute of the machine falls on every target alike; the ratios use each one's median.
  for (round = 1; round <= opts.rounds; round++) {
    if (opts.rounds > 1) console.log(`round ${round} of ${opts.rounds}:`);
    if (opts.only.has('nginx')) await runNginx(1);
    if (opts.only.has('svc')) {
      await runSvc(1, 0);
      if (opts.instructions === undefined) await runSvc(1, 10_000);
    }
    if (opts.only.has('svc-traced')) {
      await runSvcTraced();
      // A second pair in the reverse order (svc, traced, traced, svc): in repeated runs the first of
      // two identical targets measured faster, so a fixed order alone made tracing look 3-5 % dearer.
      if (opts.only.has('svc')) {
        await runSvcTraced();
        await runSvc(1, 0);
      }
    }
    if (opts.only.has('node-floor')) await runNodeFloor();
    // svc-auth first: nginx-authreq then sends the same cookie (same request size).
    if (opts.only.has('svc-auth')) await runSvcAuth('svc-auth');
    // The same target from another checkout (`--baseline DIR`, built), right after: before/after in one run.
    if (opts.only.has('svc-auth') && opts.baseline !== undefined) {
      await runSvcAuth('svc-auth-baseline');
      await runSvcAuth('svc-auth');
    }
    if (opts.only.has('svc-auth-redis')) await runSvcAuth('svc-auth-redis');
    if (opts.only.has('svc-auth-shadow')) await runSvcAuth('svc-auth-shadow');
    if (opts.only.has('nginx-authreq')) await runNginxAuthRequest();
    if (opts.only.has('apache-oidc')) await runApacheOidc('apache-oidc');
    if (opts.only.has('apache-oidc-cookie')) await runApacheOidc('apache-oidc-cookie');
    if (opts.only.has('svc-distributed')) await runSvcDistributed();
  }
  round = 1;
  if (opts.instructions !== undefined) {
    await stop(upstream);
    reportCounted(counted);
    return 0;
  }
  console.log('two cores:');
  if (ALL !== undefined) repin(upstream.pid!, ALL); // everything shares every core
  if (opts.only.has('nginx')) await runNginx(2);
  if (opts.only.has('svc')) {
    if (hasWorkers) await runSvc(2, 0);
    else console.log('  two-core svc: not available yet');
  }
  await stop(upstream);
  const load1 = loadavg();

  report(rows, opts.connections, hasWorkers, opts.rounds);
  console.log('');
  console.log(`load average at end: ${load1.map((l) => l.toFixed(2)).join(' ')}`);
  return 0;
}

/** A target's instructions per request (`--instructions`). */
interface Counted extends Breakdown {
  readonly label: string;
  readonly kind: Row['kind'];
  readonly perRequest: number;
}

/**
 * The instructions of a counted request without the JIT compiler's and the garbage collector's:
 * under callgrind a target still compiles and may run a mark-compact within the counted requests
 * (its threads run one at a time, 50 times slower), which a process at full speed has done within
 * its first seconds of load (the warm-up); its allocation shows in `--trace-gc`'s KB per request instead.
 */
function running(c: Counted): number {
  return c.perRequest - (c.byKind.get('JIT compiler') ?? 0) - (c.byKind.get('garbage collector') ?? 0);
}

/** The `--instructions` report: each target's count, and svc's against node-floor's and against the baseline's. */
function reportCounted(counted: readonly Counted[]): void {
  const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
  const kinds = [...new Set(counted.flatMap((c) => [...c.byKind.keys()]))].sort((a, b) => (counted[0]!.byKind.get(b) ?? 0) - (counted[0]!.byKind.get(a) ?? 0));
  console.log('');
  console.log(`| instructions per request | ${counted.map((c) => c.label).join(' | ')} |`);
  console.log(`|:--|${counted.map(() => '--:').join('|')}|`);
  console.log(`| all | ${counted.map((c) => fmt(c.perRequest)).join(' | ')} |`);
  for (const k of kinds) console.log(`| ${k} | ${counted.map((c) => fmt(c.byKind.get(k) ?? 0)).join(' | ')} |`);
  console.log(`| **without the JIT compiler and the GC** | ${counted.map((c) => `**${fmt(running(c))}**`).join(' | ')} |`);
  for (const c of counted) {
    if (c.svcFunctions.size === 0) continue;
    const top = [...c.svcFunctions].sort((a, b) => b[1] - a[1]).slice(0, 15);
    console.log('');
    console.log(`svc's own JavaScript in ${c.label}, the 15 dearest functions (instructions per request):`);
    for (const [name, v] of top) console.log(`  ${fmt(v).padStart(7)}  ${name.replace(/^JS:[*~^+']*/, '').replace(/ file:\/\/\S*\/(dist|runtime)\//, ' $1/')}`);
  }
  const floor = counted.find((c) => c.kind === 'node-floor');
  const svc = counted.find((c) => c.kind === 'svc');
  const auth = counted.filter((c) => c.kind === 'svc-auth');
  const baseline = counted.find((c) => c.kind === 'svc-auth-baseline');
  console.log('');
  if (floor) {
    console.log(`against the Node floor (${Math.round(floor.perRequest).toLocaleString('en-US')} instructions per request; user space only, so not the CPU ratio):`);
    if (svc) console.log(`  svc/node-floor:      ${(svc.perRequest / floor.perRequest).toFixed(3)}x, without the JIT compiler and the GC ${(running(svc) / running(floor)).toFixed(3)}x`);
    for (const a of auth) console.log(`  svc-auth/node-floor: ${(a.perRequest / floor.perRequest).toFixed(3)}x, without the JIT compiler and the GC ${(running(a) / running(floor)).toFixed(3)}x`);
  }
  if (baseline && auth.length > 0) console.log(`svc-auth against the baseline, without the JIT compiler and the GC: ${(auth.map(running).reduce((x, y) => x + y) / auth.length / running(baseline)).toFixed(3)}x (this checkout's mean over its ${auth.length} runs)`);
}

/** CPU time the target's processes spent per answered request, in µs. */
function cpuPerRequestUs(r: Row): number {
  return (r.result.cpuCores * 1e6) / r.result.wrk.rps;
}

/** The user-time part of `cpuPerRequestUs`, in µs. */
function userPerRequestUs(r: Row): number {
  return (r.result.userCores * 1e6) / r.result.wrk.rps;
}

/** `0/4 %`: each CPU's steal during the run, in percent of its time. */
function fmtSteal(steal: readonly number[]): string {
  return steal.length === 0 ? '?' : `${steal.map((f) => (f * 100).toFixed(0)).join('/')} %`;
}

function report(rows: readonly Row[], connections: number, hasWorkers: boolean, rounds: number): void {
  console.log('');
  const header = ['target', 'cores', 'requests/s', 'p50', 'p99', 'RSS total', 'RSS/worker', 'RSS at start', 'CPU used', 'CPU/request', 'user/request', 'steal', 'non-2xx', 'socket errors'];
  const body = rows.map((r) => {
    const w = r.result.wrk;
    const se = w.socketErrors;
    return [
      r.label,
      String(r.cores),
      fmtRps(w.rps),
      fmtMs(w.p50Ms),
      fmtMs(w.p99Ms),
      fmtMb(r.result.end.rssTotal),
      fmtMb(r.result.end.rssMaxProcess),
      fmtMb(r.startRss),
      `${r.result.cpuCores.toFixed(2)} cores`,
      `${cpuPerRequestUs(r).toFixed(0)} µs`,
      `${userPerRequestUs(r).toFixed(0)} µs`,
      fmtSteal(r.result.steal),
      String(w.non2xx),
      `c${se.connect} r${se.read} w${se.write} t${se.timeout}`,
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: readonly string[]) => `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  console.log(line(header));
  console.log(`|${widths.map((w, i) => (i === 0 ? `:${'-'.repeat(w + 1)}` : `${'-'.repeat(w + 1)}:`)).join('|')}|`);
  for (const b of body) console.log(line(b));
  console.log('RSS total: every process of the target at the end of the measured run (nginx: master + workers; svc: primary,');
  console.log("workers and tsx's esbuild service, which bin/svc starts to run from source). RSS/worker: the largest serving");
  console.log('process. CPU used: user + system time of those processes over the measured run, in cores. CPU/request:');
  console.log('that CPU time divided by the requests answered (less sensitive than requests/s to other work on the machine);');
  console.log("user/request: its user-time part (the kernel's is mostly socket I/O, alike for every proxy). steal: each CPU's");
  console.log("time the hypervisor gave to other guests during the run (cpu0/cpu1): a run with steal on the proxy's core was slowed by them.");
  // A one-core proxy that did not use its core was held back by something else (wrk and the upstream
  // on the load core, or other work on the machine): its figure measures that, not the proxy.
  const idle = rows.filter((r) => r.cores === 1 && r.kind !== 'direct' && r.result.cpuCores < 0.85);
  if (idle.length > 0) {
    console.log('');
    for (const r of idle) console.log(`note: ${r.label} used ${r.result.cpuCores.toFixed(2)} of its one core: the load side or other work on the machine limited it, so ratios against it are not proxy against proxy`);
  }

  // With --rounds, a target's row for the ratios is its median round by CPU per request (the lower
  // of the two middle ones for an even count).
  const find = (kind: Row['kind'], cores: 1 | 2, routes?: number) => {
    const all = rows.filter((r) => r.kind === kind && r.cores === cores && (routes === undefined || r.routes === routes)).sort((a, b) => cpuPerRequestUs(a) - cpuPerRequestUs(b));
    return all[(all.length - 1) >> 1];
  };
  if (rounds > 1) {
    console.log('');
    console.log(`${rounds} rounds: each ratio below uses the target's median round by CPU per request (${['node-floor', 'svc', 'svc-auth', 'nginx-authreq', 'apache-oidc'].flatMap((k) => { const r = find(k as Row['kind'], 1, k === 'svc' ? 1 : undefined); return r ? [`${k} ${cpuPerRequestUs(r).toFixed(0)} µs`] : []; }).join(', ')})`);
  }
  const direct = find('direct', 1);
  const nginx1 = find('nginx', 1);
  const nginx2 = find('nginx', 2);
  const svc1 = find('svc', 1, 1);
  const svc10k = find('svc', 1, 10_001);
  const svc2 = find('svc', 2, 1);
  const ratio = (a: Row | undefined, b: Row | undefined) => (a && b ? a.result.wrk.rps / b.result.wrk.rps : undefined);
  const verdict = (ok: boolean) => (ok ? 'met' : 'NOT met');
  // svc-traced/svc over both pairs (in either order), as a geometric mean; the pairs are printed too.
  const tracedPairs = rows
    .filter((r) => r.kind === 'svc-traced')
    .map((t, i) => ratio(t, rows.filter((r) => r.kind === 'svc' && r.cores === 1 && r.routes === 1)[i]))
    .filter((x): x is number => x !== undefined);
  const rt = tracedPairs.length === 0 ? undefined : Math.exp(tracedPairs.reduce((a, x) => a + Math.log(x), 0) / tracedPairs.length);

  console.log('');
  console.log('ratios and the targets of issue 4:');
  const r1 = ratio(svc1, nginx1);
  if (r1 !== undefined) console.log(`  svc/nginx, one core:   ${r1.toFixed(2)}   target ≥ 0.40: ${verdict(r1 >= 0.4)}`);
  const r2 = ratio(svc2, nginx2);
  if (r2 !== undefined) console.log(`  svc/nginx, two cores:  ${r2.toFixed(2)}   target ≥ 0.55: ${verdict(r2 >= 0.55)}`);
  else if (!hasWorkers) console.log('  svc/nginx, two cores:  two-core svc: not available yet   target ≥ 0.55');
  const rd = ratio(svc1, direct);
  if (rt !== undefined) {
    const pairs = tracedPairs.length > 1 ? ` (pairs in both orders: ${tracedPairs.map((x) => x.toFixed(3)).join(', ')})` : '';
    console.log(`  svc-traced/svc, one core:  ${rt.toFixed(3)}${pairs}   target ≥ 0.97 (tracing at the default rate costs under 3 %): ${verdict(rt >= 0.97)}`);
  }
  if (rd !== undefined) console.log(`  svc/direct, one core:  ${rd.toFixed(2)}   (no target; nginx proxy/direct: ${ratio(nginx1, direct)?.toFixed(2) ?? '-'})`);
  for (const s of [svc1, svc2, svc10k]) {
    if (!s) continue;
    const p99 = s.result.wrk.p99Ms;
    console.log(`  p99 at ${connections} connections, ${s.label}: ${fmtMs(p99)}   target < 5 ms${connections === 64 ? '' : ' (at 64)'}: ${verdict(p99 < 5)}`);
  }
  for (const s of [svc1, svc2, svc10k]) {
    if (!s) continue;
    const m = s.result.peak.rssMaxProcess;
    console.log(`  RSS per process (peak during load), ${s.label}: ${fmtMb(m)}   target < 150 MB per worker: ${verdict(m < 150 * MB)}`);
  }
  const rr = ratio(svc10k, svc1);
  if (rr !== undefined) console.log(`  10,001 routes vs 1 route, one core: ${rr.toFixed(3)}   target ≥ 0.95 (no more than 5% slower): ${verdict(rr >= 0.95)}`);

  const svcAuth = find('svc-auth', 1);
  const authReq = find('nginx-authreq', 1);
  // Node's floor (node-floor.mjs): what svc costs beyond a proxy on the same HTTP stack that checks nothing.
  const floor = find('node-floor', 1);
  if (floor && (svc1 || svcAuth)) {
    console.log('');
    console.log(`against the Node floor (node:http + undici dispatch, ${cpuPerRequestUs(floor).toFixed(0)} µs CPU per request, RSS ${fmtMb(floor.result.peak.rssMaxProcess)}):`);
    if (svcAuth) console.log(`  svc-auth/node-floor, CPU per request: ${(cpuPerRequestUs(svcAuth) / cpuPerRequestUs(floor)).toFixed(2)}x   target ≤ 1.15x: ${verdict(cpuPerRequestUs(svcAuth) <= 1.15 * cpuPerRequestUs(floor))}`);
    if (svc1) console.log(`  svc/node-floor, CPU per request:      ${(cpuPerRequestUs(svc1) / cpuPerRequestUs(floor)).toFixed(2)}x   target ≤ 1.05x (the public route): ${verdict(cpuPerRequestUs(svc1) <= 1.05 * cpuPerRequestUs(floor))}`);
    for (const s of [svc1, svcAuth]) if (s) console.log(`  RSS per worker, ${s.label}: ${fmtMb(s.result.peak.rssMaxProcess)}   target ≤ node-floor + 25 MB: ${verdict(s.result.peak.rssMaxProcess <= floor.result.peak.rssMaxProcess + 25 * MB)}`);
  }
  const baselines = rows.filter((r) => r.kind === 'svc-auth-baseline');
  if (baselines.length > 0) {
    const current = rows.filter((r) => r.kind === 'svc-auth');
    const mean = (rs: Row[]) => rs.reduce((a, r) => a + cpuPerRequestUs(r), 0) / rs.length;
    console.log('');
    console.log(`before/after (svc-auth, this checkout against --baseline, alternated): CPU per request ${mean(current).toFixed(0)} µs (${current.map((r) => cpuPerRequestUs(r).toFixed(0)).join(', ')}) against ${mean(baselines).toFixed(0)} µs (${baselines.map((r) => cpuPerRequestUs(r).toFixed(0)).join(', ')}): ${(mean(current) / mean(baselines)).toFixed(3)}x`);
  }
  if (svcAuth || authReq) {
    console.log('');
    console.log('authenticated route, one core (session cookie, policy by group, identity headers):');
    // The same ratio from CPU time per request (requests per CPU-second): what each would do with
    // its core to itself, less moved by other work on the machine than requests/s.
    const byCpu = (a: Row | undefined, b: Row | undefined) => (a && b ? `   (by CPU per request: ${(cpuPerRequestUs(b) / cpuPerRequestUs(a)).toFixed(2)})` : '');
    const ra = ratio(svcAuth, nginx1);
    if (ra !== undefined) console.log(`  svc-auth/nginx:          ${ra.toFixed(2)}   target ≥ 0.35: ${verdict(ra >= 0.35)}${byCpu(svcAuth, nginx1)}`);
    const rq = ratio(svcAuth, authReq);
    if (rq !== undefined) console.log(`  svc-auth/nginx-authreq:  ${rq.toFixed(2)}   target > 1.00 (ahead of nginx + auth_request to Node): ${verdict(rq > 1)}${byCpu(svcAuth, authReq)}`);
    const rs = ratio(svcAuth, svc1);
    if (rs !== undefined) console.log(`  svc-auth/svc:            ${rs.toFixed(2)}   (cost of the identity work; no target)${byCpu(svcAuth, svc1)}`);
    const svcAuthShadow = find('svc-auth-shadow', 1);
    if (svcAuth && svcAuthShadow) {
      const cost = cpuPerRequestUs(svcAuthShadow) / cpuPerRequestUs(svcAuth);
      console.log(`  svc-auth-shadow/svc-auth, CPU per request: ${cost.toFixed(3)}x   target ≤ 1.10 (a shadow plan deciding every request costs under 10 %): ${verdict(cost <= 1.1)}`);
    }
    const svcAuthRedis = find('svc-auth-redis', 1);
    const rr2 = ratio(svcAuthRedis, svcAuth);
    if (rr2 !== undefined) console.log(`  svc-auth-redis/svc-auth: ${rr2.toFixed(3)}   target ≥ 0.95 (Redis store within 5 % of the memory store): ${verdict(rr2 >= 0.95)}${byCpu(svcAuthRedis, svcAuth)}`);
    for (const kind of ['apache-oidc', 'apache-oidc-cookie'] as const) {
      const peer = find(kind, 1);
      if (svcAuth && peer) console.log(`  svc-auth/${kind}:${' '.repeat(Math.max(1, 19 - kind.length))}${(cpuPerRequestUs(peer) / cpuPerRequestUs(svcAuth)).toFixed(2)}x ahead by CPU per request   target ≥ 2x: ${verdict(cpuPerRequestUs(peer) >= 2 * cpuPerRequestUs(svcAuth))}   (requests/s ${ratio(svcAuth, peer)?.toFixed(2)})`);
    }
    const rn = ratio(authReq, nginx1);
    if (rn !== undefined) console.log(`  nginx-authreq/nginx:     ${rn.toFixed(2)}   (cost of auth_request to a Node service; no target)${byCpu(authReq, nginx1)}`);
    const perRequest = [nginx1, floor, authReq, find('apache-oidc', 1), find('apache-oidc-cookie', 1), svc1, svcAuth, find('svc-auth-redis', 1)].filter((r): r is Row => r !== undefined).map((r) => `${r.kind} ${cpuPerRequestUs(r).toFixed(0)} µs`);
    console.log(`  CPU per request:         ${perRequest.join(', ')}`);
    if (svcAuth) {
      const p99 = svcAuth.result.wrk.p99Ms;
      console.log(`  p99 at ${connections} connections, ${svcAuth.label}: ${fmtMs(p99)}${authReq ? ` (nginx + auth_request: ${fmtMs(authReq.result.wrk.p99Ms)})` : ''}`);
    }
  }

  const distributed = find('svc-distributed', 1);
  const uncached = find('svc-distributed-uncached', 1);
  if (distributed || uncached) {
    console.log('');
    console.log('distributed roles, one core (issue 16: data broker, authorize, authenticate and proxy as four svc run processes, all on the proxy core):');
    const byRole = (r: Row) => [...(r.distributed?.cpuByRole ?? [])].map(([role, cores]) => `${role} ${((cores * 1e6) / r.result.wrk.rps).toFixed(0)} µs`).join(', ');
    if (distributed && svcAuth) {
      const rps = distributed.result.wrk.rps / svcAuth.result.wrk.rps;
      const cpu = cpuPerRequestUs(svcAuth) / cpuPerRequestUs(distributed);
      console.log(`  svc-distributed (cached decision)/svc-auth: ${rps.toFixed(2)} by requests/s, ${cpu.toFixed(2)} by CPU per request   target ≥ 0.90 (within 10 % of all-in-one): ${verdict(rps >= 0.9)} by requests/s, ${verdict(cpu >= 0.9)} by CPU`);
      console.log(`  CPU per request: svc-auth ${cpuPerRequestUs(svcAuth).toFixed(0)} µs, svc-distributed ${cpuPerRequestUs(distributed).toFixed(0)} µs (${byRole(distributed)})`);
    } else if (distributed) console.log('  svc-distributed/svc-auth: run svc-auth too (`--only svc-auth,svc-distributed`) for the ratio');
    const f = distributed?.distributed;
    if (distributed && f) {
      const onPath = [...f.brokerCalls].filter(([m]) => REQUEST_PATH_METHODS.has(m));
      const background = [...f.brokerCalls].filter(([m]) => !REQUEST_PATH_METHODS.has(m));
      const onPathCalls = onPath.reduce((a, [, n]) => a + n, 0);
      console.log(
        `  cached decision, no gRPC round trip: in the measured run authorize answered ${f.checksMeasured} Check calls (${f.checksWarmup} in the warm-up), the data broker ${onPathCalls} session reads (${[...REQUEST_PATH_METHODS].join(', ')}), for ${distributed.result.wrk.requests} requests   target 0: ${verdict(f.checksMeasured === 0 && onPathCalls === 0)}`,
      );
      if (background.length > 0) console.log(`    (the data broker's background calls meanwhile, from any role, not per request: ${background.map(([m, n]) => `${m} ${n}`).join(', ')})`);
      console.log('    (the session and decision caches keep an entry 30 s: a run that outlasts it sees each refreshed; concurrent misses of one decision share one Check call)');
    }
    const u = uncached?.distributed;
    if (uncached && u) {
      console.log(`  uncached decision (a policy that reads the clock, never cached: every request a Check call): ${u.checksMeasured} Check calls for ${uncached.result.wrk.requests} requests`);
      if (distributed && f) {
        const extra = cpuPerRequestUs(uncached) - cpuPerRequestUs(distributed);
        const proxyUs = (r: Row) => (((r.distributed?.cpuByRole.get('proxy') ?? 0) * 1e6) / r.result.wrk.rps);
        const authorizeUs = (r: Row) => (((r.distributed?.cpuByRole.get('authorize') ?? 0) * 1e6) / r.result.wrk.rps);
        const latency = (u.oneConnection.p50Ms - f.oneConnection.p50Ms) * 1000;
        console.log(`    CPU per request: ${cpuPerRequestUs(uncached).toFixed(0)} µs uncached vs ${cpuPerRequestUs(distributed).toFixed(0)} µs cached: +${extra.toFixed(0)} µs (proxy +${(proxyUs(uncached) - proxyUs(distributed)).toFixed(0)} µs, authorize +${(authorizeUs(uncached) - authorizeUs(distributed)).toFixed(0)} µs; uncached by role: ${byRole(uncached)})`);
        console.log(`    latency, one connection: p50 ${fmtMs(u.oneConnection.p50Ms)} uncached vs ${fmtMs(f.oneConnection.p50Ms)} cached: +${latency.toFixed(0)} µs per request (p99 ${fmtMs(u.oneConnection.p99Ms)} vs ${fmtMs(f.oneConnection.p99Ms)})`);
        console.log(`    requests/s on the one core: ${fmtRps(uncached.result.wrk.rps)} uncached vs ${fmtRps(distributed.result.wrk.rps)} cached (${(uncached.result.wrk.rps / distributed.result.wrk.rps).toFixed(2)}); p50 at ${connections} connections ${fmtMs(uncached.result.wrk.p50Ms)} vs ${fmtMs(distributed.result.wrk.p50Ms)}`);
      }
    }
  }

  const failing = rows.filter((r) => r.result.wrk.non2xx > 0 || Object.values(r.result.wrk.socketErrors).some((n) => n > 0));
  for (const r of failing) {
    console.log('');
    console.log(`errors under load, ${r.label}:`);
    console.log(r.result.wrk.raw.trimEnd());
    console.log(`log tail (${r.logFile}):`);
    console.log(tail(r.logFile));
    if (r.kind !== 'direct' && r.kind !== 'nginx' && r.kind !== 'nginx-authreq') {
      console.log('last log lines other than a 200 request:');
      console.log(tail(r.logFile, 20, (l) => !l.includes('"msg":"request"') || !l.includes('"status":200')) || '(none in the last 64 KiB)');
    }
  }
}

let code = 1;
try {
  code = await main();
} catch (e) {
  console.error(`bench:proxy failed: ${e instanceof CheckError ? `check before the load: ${e.message}` : ((e as Error).stack ?? String(e))}`);
} finally {
  if (!interrupted) await cleanup();
}
process.exitCode = code;
