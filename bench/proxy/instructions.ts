/**
 * bench/proxy `--instructions N`: the instructions a proxy executes per request, counted by
 * valgrind's callgrind, instead of CPU time. CPU time per request moves by 20 % from one run to the
 * next on a shared virtual machine; an instruction count is the same within about 1 % whatever else
 * the machine is doing, so a change of a few percent shows. It counts user space only (the kernel's
 * share of a socket write is not in it) and runs about 50 times slower than the process alone.
 *
 * The target runs under `valgrind --tool=callgrind`. After a warm-up of N requests (so the JIT has
 * compiled the request path) its counters are zeroed, exactly N more requests are sent over the
 * bench's connection count, and the counters are dumped: the dump's total divided by N.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Pool } from 'undici';

/** The command and leading arguments that run a program under callgrind, its dumps written into `dir`. */
export function underCallgrind(valgrind: string, dir: string): { readonly cmd: string; readonly args: readonly string[] } {
  // No per-instruction or per-line data: only the totals are read, and the dumps stay small.
  return { cmd: valgrind, args: ['--tool=callgrind', `--callgrind-out-file=${join(dir, 'callgrind.%p.out')}`, '--dump-instr=no', '--dump-line=no', '--compress-strings=no'] };
}

/**
 * Sends exactly `n` GET requests to `127.0.0.1:port` over `connections` keep-alive connections,
 * each with `headers`, and reads every body; returns how many got each status.
 */
export async function countedLoad(port: number, n: number, connections: number, headers: Readonly<Record<string, string>>): Promise<ReadonlyMap<number, number>> {
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections, pipelining: 1, headersTimeout: 600_000, bodyTimeout: 600_000 });
  const statuses = new Map<number, number>();
  let left = n;
  const worker = async () => {
    while (left > 0) {
      left--;
      const r = await pool.request({ path: '/', method: 'GET', headers });
      await r.body.dump();
      statuses.set(r.statusCode, (statuses.get(r.statusCode) ?? 0) + 1);
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(connections, n) }, worker));
  } finally {
    await pool.close();
  }
  return statuses;
}

/** wrk's `Name: value` header lines as an object, with the Host. */
export function headerObject(host: string, lines: readonly string[]): Record<string, string> {
  const headers: Record<string, string> = { host };
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return headers;
}

/** Zeroes the counters of the callgrind process `pid`. */
export function zeroCounters(pid: number): void {
  control(pid, '--zero');
}

/** Dumps the counters of the callgrind process `pid` into `dir` and returns the instructions counted since they were zeroed. */
export function dumpInstructions(pid: number, dir: string): number {
  control(pid, '--dump');
  const dump = lastDump(pid, dir);
  const text = readFileSync(join(dir, dump), 'utf8');
  const summary = /^summary:\s*(\d+)/m.exec(text) ?? /^totals:\s*(\d+)/m.exec(text);
  if (!summary) throw new Error(`callgrind dump ${dump} has no summary line`);
  return Number(summary[1]);
}

function control(pid: number, command: '--zero' | '--dump'): void {
  const r = spawnSync('callgrind_control', [command, String(pid)], { encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0 || !/OK/.test(r.stdout)) throw new Error(`callgrind_control ${command} ${pid} failed: ${r.stdout}${r.stderr}`);
}

/** Where a target's counted instructions went, per request, by kind of code. */
export interface Breakdown {
  readonly byKind: ReadonlyMap<string, number>;
  /** JavaScript functions of svc itself (its dist/ or sources), by instructions per request. */
  readonly svcFunctions: ReadonlyMap<string, number>;
}

/**
 * Reads the last dump of callgrind process `pid` in `dir` and sorts each function's own
 * instructions (per request, of `n`) by kind. JIT-compiled JavaScript has no symbol in the dump: it
 * is named through the perf map Node writes with `--perf-basic-prof` (`/tmp/perf-PID.map`).
 */
export function breakdown(pid: number, dir: string, n: number): Breakdown {
  const self = ownCosts(readFileSync(join(dir, lastDump(pid, dir)), 'utf8'));
  const jit = perfMap(pid);
  const byKind = new Map<string, number>();
  const svcFunctions = new Map<string, number>();
  for (const [fn, cost] of self) {
    const named = fn.startsWith('0x') ? jit(Number.parseInt(fn, 16)) : undefined;
    const kind = kindOf(named ?? fn, named !== undefined);
    byKind.set(kind, (byKind.get(kind) ?? 0) + cost / n);
    if (kind === 'svc (JavaScript)' && named !== undefined) svcFunctions.set(named, (svcFunctions.get(named) ?? 0) + cost / n);
  }
  return { byKind, svcFunctions };
}

function lastDump(pid: number, dir: string): string {
  const prefix = `callgrind.${pid}.out.`;
  const last = readdirSync(dir)
    .filter((f) => f.startsWith(prefix))
    .map((f) => Number(f.slice(prefix.length)))
    .sort((a, b) => b - a)[0];
  if (last === undefined) throw new Error(`callgrind wrote no dump for pid ${pid} in ${dir}`);
  return `${prefix}${last}`;
}

/** Each function's own (exclusive) instructions in a callgrind dump: its cost lines, not those after a `calls=` line (a call's inclusive cost). */
function ownCosts(dump: string): Map<string, number> {
  const self = new Map<string, number>();
  let fn = '';
  let callCost = false;
  for (const line of dump.split('\n')) {
    if (line.startsWith('fn=')) {
      fn = line.slice(3);
      callCost = false;
    } else if (line.startsWith('calls=')) callCost = true;
    else if (/^[0-9+\-*]/.test(line)) {
      if (callCost) callCost = false;
      else {
        const cost = Number(line.split(' ')[1] ?? 0);
        if (cost > 0) self.set(fn, (self.get(fn) ?? 0) + cost);
      }
    }
  }
  return self;
}

/**
 * The name of the JIT code at an address, from Node's perf map; undefined without one or outside it.
 * The map only grows: code freed by the GC leaves its line, and new code may take its addresses, so
 * of the lines covering an address the one written last names it.
 */
function perfMap(pid: number): (address: number) => string | undefined {
  let text: string;
  try {
    text = readFileSync(`/tmp/perf-${pid}.map`, 'utf8');
  } catch {
    return () => undefined;
  }
  const entries = text
    .split('\n')
    .map((l) => /^([0-9a-f]+) ([0-9a-f]+) (.*)$/.exec(l))
    .filter((m) => m !== null)
    .map((m, written) => ({ start: Number.parseInt(m[1]!, 16), size: Number.parseInt(m[2]!, 16), name: m[3]!, written }))
    .sort((a, b) => a.start - b.start);
  const longest = entries.reduce((most, e) => Math.max(most, e.size), 0);
  return (address) => {
    // The last entry starting at or before the address, then back over every one that could reach it.
    let lo = 0;
    let hi = entries.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (entries[mid]!.start <= address) lo = mid + 1;
      else hi = mid - 1;
    }
    let named: { readonly name: string; readonly written: number } | undefined;
    for (let i = hi; i >= 0 && entries[i]!.start + longest > address; i--) {
      const e = entries[i]!;
      if (address < e.start + e.size && (named === undefined || e.written > named.written)) named = e;
    }
    return named?.name;
  };
}

/** The kind of a function: JIT code by its script, native code by its symbol. */
function kindOf(name: string, jit: boolean): string {
  if (jit) {
    if (!name.startsWith('JS:')) return name.startsWith('RegExp:') ? 'regular expressions' : 'V8 builtins';
    // undici's HTTP parser is llhttp compiled to WebAssembly (node:http's is native: `llhttp__…`).
    if (name.startsWith('JS:wasm')) return 'undici';
    if (name.includes(' node:')) return 'Node (JavaScript)';
    if (name.includes('/node_modules/undici/')) return 'undici';
    if (name.includes('/node_modules/')) return 'other packages';
    if (name.includes('bench/proxy/')) return 'node-floor (JavaScript)';
    return 'svc (JavaScript)';
  }
  if (name.startsWith('0x')) return 'JIT code without a name';
  if (name.startsWith('Builtins_')) return 'V8 builtins';
  if (/v8::internal::(compiler|maglev|turboshaft)::/.test(name)) return 'JIT compiler';
  if (/Mark|Sweep|Scaveng|heap::|Heap::|Evacuat|Compact|RememberedSet|SlotSet|Worklist|MemoryChunk|PageMetadata|SizeFromMap|IterateObjectCache|BodyDescriptor/.test(name)) return 'garbage collector';
  if (name.startsWith('llhttp')) return 'llhttp (HTTP parser)';
  if (/^(EVP_|SHA|sha|AES|aes|BN_|bn_|ec_|ecp_|CRYPTO_|ossl_|OPENSSL_|HMAC)/.test(name)) return 'OpenSSL';
  if (/^(__memcpy|__memmove|__memset|__strlen|__memcmp|malloc|free|_int_|cfree)/.test(name)) return 'libc';
  return 'other native (V8, Node, libuv, kernel entry)';
}
