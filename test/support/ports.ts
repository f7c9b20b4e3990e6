/**
 * Port numbers for processes a test must tell their port before they start (svc's listeners and
 * metrics address, redis-server, pebble, nginx, Prometheus), safe while vitest runs several test
 * files at once. A server a test starts itself in this process listens on port 0 and reads its
 * port back instead; it needs nothing from here.
 *
 * Contract of {@link freePort}:
 * - Each vitest worker (`VITEST_POOL_ID` 1…n) draws from its own block of {@link BLOCK_SIZE} ports,
 *   so two files running side by side never draw the same number. The blocks lie just below the
 *   kernel's ephemeral range (Linux: /proc/sys/net/ipv4/ip_local_port_range, 32768 by default),
 *   where port-0 listeners and outgoing connections get their ports, so those cannot take one either.
 * - One process never hands out a port twice (a file that starts ten processes gets ten ports).
 * - A port is handed out only if nothing listens on it on any address right now, and only after it
 *   is claimed machine-wide by a file named after it in `<tmpdir>/svc-test-ports/` holding this
 *   process's id: another vitest run on the same machine (another working tree) that draws the same
 *   block skips it. A claim whose process is gone is stale and taken over; claims are removed when
 *   this process exits.
 * The test still starts the process that binds the port; between the hand-out and that bind only a
 * program that ignores these claims can take it.
 */
import { chmodSync, closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomInt } from 'node:crypto';

/** Ports per vitest worker. A file uses a few dozen at most. */
export const BLOCK_SIZE = 500;
/** Workers with a block of their own; worker ids beyond this share blocks (modulo). */
const BLOCKS = 16;

/** The first port of the kernel's ephemeral range (Linux's default when it cannot be read). */
function ephemeralStart(): number {
  try {
    const first = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(first) && first > BLOCKS * BLOCK_SIZE + 1024) return first;
  } catch {
    // Not Linux: its default is used (macOS's range starts higher, at 49152).
  }
  return 32768;
}

function poolIndex(): number {
  const id = Number(process.env['VITEST_POOL_ID'] ?? '1');
  return Number.isInteger(id) && id > 0 ? (id - 1) % BLOCKS : 0;
}

const BLOCK_START = ephemeralStart() - (BLOCKS - poolIndex()) * BLOCK_SIZE;
const CLAIMS_DIR = join(tmpdir(), 'svc-test-ports');

/** Where the next search starts, as an offset in the block: random, so that files run one after another in one worker (and other runs) do not start on the same port. */
let cursor = randomInt(BLOCK_SIZE);
const handedOut = new Set<number>();
const claimed: string[] = [];
function releaseClaims(): void {
  for (const file of claimed.splice(0)) {
    try {
      unlinkSync(file);
    } catch {
      // Already gone (taken over as stale, or the directory was cleaned): nothing to release.
    }
  }
}
process.once('exit', releaseClaims);
// vitest ends a forks worker with SIGTERM, whose default action skips 'exit': release, then die of it
// as before (unless someone else handles the signal).
process.once('SIGTERM', () => {
  releaseClaims();
  if (process.listenerCount('SIGTERM') === 0) process.kill(process.pid, 'SIGTERM');
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Claims `port` for this process machine-wide; false when another live process holds the claim. */
function claim(port: number): boolean {
  const file = join(CLAIMS_DIR, String(port));
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(file, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      claimed.push(file);
      return true;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') {
        mkdirSync(CLAIMS_DIR, { recursive: true });
        try {
          chmodSync(CLAIMS_DIR, 0o1777); // Shared by every user's runs, as /tmp is.
        } catch {
          // Made by another user: theirs to open up.
        }
        continue;
      }
      // A directory this user cannot write: the worker's own block still keeps parallel files apart.
      if (code !== 'EEXIST') return true;
      let holder = 0;
      try {
        holder = Number(readFileSync(file, 'utf8'));
      } catch {
        // Removed meanwhile: held a moment ago, so skipped.
      }
      // An empty claim is one being written: held.
      if (!Number.isInteger(holder) || holder <= 0 || alive(holder)) return false;
      try {
        unlinkSync(file); // Its process is gone: stale.
      } catch {
        // Another process took it over first: the next attempt sees its claim.
      }
    }
  }
  return false;
}

/** Whether nothing listens on `port` on any address (a dual-stack bind of the wildcard address fails if anything does). */
function listenable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen({ port }, () => probe.close(() => resolve(true)));
  });
}

/** A loopback port for a process to listen on, per the contract above; throws when the block is used up. */
export async function freePort(): Promise<number> {
  for (let tried = 0; tried < BLOCK_SIZE; tried++) {
    const port = BLOCK_START + cursor;
    cursor = (cursor + 1) % BLOCK_SIZE;
    if (handedOut.has(port)) continue;
    if (!claim(port)) continue;
    handedOut.add(port);
    if (await listenable(port)) return port;
  }
  throw new Error(`no free port left in ${BLOCK_START}–${BLOCK_START + BLOCK_SIZE - 1} (vitest worker ${process.env['VITEST_POOL_ID'] ?? 'none'})`);
}

/** `count` ports from {@link freePort}, all different. */
export async function freePorts(count: number): Promise<number[]> {
  const ports: number[] = [];
  for (let i = 0; i < count; i++) ports.push(await freePort());
  return ports;
}
