/**
 * Where `svc run` writes its log lines (standard output): each line costs one UTF-8 copy into a
 * preallocated chunk; a full chunk is handed whole to sonic-boom (in its buffer mode), which
 * writes chunks in order, asynchronously, and deals with the file descriptor (partial writes,
 * EAGAIN on a non-blocking pipe, the synchronous write at exit).
 *
 * Why not sonic-boom alone: in its string mode every `write` measures the UTF-8 length of the
 * whole pending string (up to 16 KiB) again, about 4 µs per access line at proxy rates, several
 * times what the line itself costs. Handing it a few large buffers keeps it off the request path.
 *
 * CONTRACT:
 * - Lines come out whole and in the order written, whatever their length or characters.
 * - Nothing is written until a chunk fills or {@link ChunkedDestination.flush} /
 *   {@link ChunkedDestination.flushSync} runs: the caller flushes on a timer and at exit.
 * - `flush(cb)` calls back once every line written before it has reached the file descriptor.
 * - `flushSync()` writes what is held before it returns, but cannot wait for a write already in
 *   flight (sonic-boom's asynchronous one): lines held then may reach the file before that write's.
 *   A caller that needs the order awaits `flush` first (cli/run-command.ts does before it exits).
 * - Standard output closed by its reader (EPIPE) ends the logging, not svc: later lines are dropped.
 *   Any other write error is thrown, as an unhandled 'error' event.
 */
import { writeSync } from 'node:fs';
import sonicBoom from 'sonic-boom';

// A CommonJS package: its named export is reachable only through the default one.
const { SonicBoom } = sonicBoom;

/** Bytes per chunk: about 180 access lines per write(2) (16 KiB chunks cost twice as much per line). */
export const CHUNK_BYTES = 64 * 1024;

/** UTF-8 takes at most 3 bytes per UTF-16 code unit (a surrogate pair: 4 bytes for 2 units). */
const MAX_UTF8_PER_UNIT = 3;

export interface ChunkedDestination {
  write(line: string): void;
  /** Starts writing what is buffered; `cb` runs once it is all written (or with the write error). */
  flush(cb?: (err?: Error) => void): void;
  /** Writes everything buffered before returning (svc stopping). */
  flushSync(): void;
}

export function chunkedDestination(fd: number, chunkBytes: number = CHUNK_BYTES): ChunkedDestination {
  // minLength 0: sonic-boom writes whatever it holds until it holds nothing. (With a minLength it
  // stops with up to that many bytes still held, and its own flush then calls back early.)
  const out = new SonicBoom({ fd, sync: false, minLength: 0, maxWrite: CHUNK_BYTES, contentMode: 'buffer' });
  let chunk = Buffer.allocUnsafe(chunkBytes);
  let used = 0;
  let brokenPipe = false;
  // Bytes handed to sonic-boom, and bytes it reported written: a flush is done when they meet.
  let handed = 0;
  let written = 0;
  let waiting: { readonly upTo: number; readonly cb: (err?: Error) => void }[] = [];
  const callBack = (err?: Error) => {
    const done = err === undefined ? waiting.filter((w) => w.upTo <= written) : waiting;
    if (done.length === 0) return;
    waiting = err === undefined ? waiting.filter((w) => w.upTo > written) : [];
    for (const w of done) w.cb(err);
  };
  out.on('write', (n: number) => {
    written += n;
    callBack();
  });
  const onError = (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') {
      brokenPipe = true;
      callBack();
      waiting.splice(0).forEach((w) => w.cb());
      return;
    }
    callBack(err);
    out.off('error', onError);
    out.emit('error', err);
  };
  out.on('error', onError);
  const writeBuffer = (b: Buffer) => {
    handed += b.length;
    // Buffer mode takes buffers; sonic-boom's types name only strings.
    out.write(b as unknown as string);
  };
  const handOver = () => {
    if (used === 0 || brokenPipe) return;
    writeBuffer(chunk.subarray(0, used));
    chunk = Buffer.allocUnsafe(chunkBytes);
    used = 0;
  };
  return {
    write(line) {
      if (brokenPipe) return;
      const most = line.length * MAX_UTF8_PER_UNIT;
      if (used + most > chunkBytes) {
        handOver();
        // A line longer than a chunk goes as a buffer of its own (after what came before it).
        if (most > chunkBytes) {
          writeBuffer(Buffer.from(line, 'utf8'));
          return;
        }
      }
      used += chunk.write(line, used, 'utf8');
    },
    flush(cb) {
      if (brokenPipe) return cb?.();
      handOver();
      if (cb === undefined) return;
      if (written >= handed) process.nextTick(cb);
      else waiting.push({ upTo: handed, cb });
    },
    flushSync() {
      if (brokenPipe) return;
      try {
        // What sonic-boom holds first (not a write in flight: that lands when it lands), then the
        // held chunk, written here: handed over, it would start one more asynchronous write.
        if (written < handed) out.flushSync();
        if (used > 0) writeAllSync(fd, chunk.subarray(0, used));
        used = 0;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EPIPE') throw e;
        brokenPipe = true;
      }
    },
  };
}

/** Writes all of `b` to `fd` now; a full non-blocking pipe (EAGAIN) is waited out 10 ms at a time. */
function writeAllSync(fd: number, b: Buffer): void {
  let rest = b;
  while (rest.length > 0) {
    try {
      rest = rest.subarray(writeSync(fd, rest));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EAGAIN') throw e;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
    }
  }
}
