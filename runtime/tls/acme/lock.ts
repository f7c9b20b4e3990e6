/**
 * A lock file per name in the shared autocert directory, so that of several instances (or cluster
 * workers) sharing it, one orders a given name at a time and the others pick up the result.
 *
 * The lock is a file created with O_EXCL holding its owner (pid, host, random id). The holder
 * touches it while it works; a lock untouched for `staleMs` belongs to an instance that died and
 * is taken over (removed, then created again with O_EXCL, so two instances taking over at once
 * still end with one holder). Hand-written: the lock libraries on npm (proper-lockfile) do the
 * same in more code and are not installed here.
 */
import { randomBytes } from 'node:crypto';
import { openSync, closeSync, writeSync, statSync, utimesSync, readFileSync, rmSync } from 'node:fs';
import { hostname } from 'node:os';

export interface HeldLock {
  /** Marks the lock alive (the holder calls it while it works). */
  touch(): void;
  release(): void;
}

/** Default: a lock untouched this long is stale. Renewed every `staleMs / 4` while held. */
export const STALE_LOCK_MS = 60_000;

/** Takes the lock at `path`, or returns undefined when a live holder has it. Never waits. */
export function tryLock(path: string, staleMs = STALE_LOCK_MS, now: () => number = Date.now): HeldLock | undefined {
  const id = `${process.pid}@${hostname()}#${randomBytes(6).toString('hex')}`;
  if (!create(path, id)) {
    let mtimeMs: number;
    try {
      mtimeMs = statSync(path).mtimeMs;
    } catch {
      return create(path, id) ? held(path, id, staleMs) : undefined;
    }
    if (now() - mtimeMs < staleMs) return undefined;
    // Stale: its holder stopped touching it. Remove it only if it is still the same stale file.
    try {
      if (statSync(path).mtimeMs === mtimeMs) rmSync(path, { force: true });
    } catch {
      // Gone already: another instance took it over first.
    }
    if (!create(path, id)) return undefined;
  }
  return held(path, id, staleMs);
}

function create(path: string, id: string): boolean {
  try {
    const fd = openSync(path, 'wx', 0o600);
    writeSync(fd, id);
    closeSync(fd);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw e;
  }
}

function held(path: string, id: string, staleMs: number): HeldLock {
  const mine = () => {
    try {
      return readFileSync(path, 'utf8') === id;
    } catch {
      return false;
    }
  };
  const touch = () => {
    if (!mine()) return;
    const t = new Date();
    try {
      utimesSync(path, t, t);
    } catch {
      // Removed under us (a takeover after a long pause): nothing to keep alive.
    }
  };
  const timer = setInterval(touch, Math.max(1_000, staleMs / 4));
  timer.unref();
  return {
    touch,
    release: () => {
      clearInterval(timer);
      if (mine()) rmSync(path, { force: true });
    },
  };
}
