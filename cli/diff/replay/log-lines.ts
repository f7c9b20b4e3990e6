/**
 * The lines of one log file, streamed: plain or gzip'd (recognized by its magic bytes `1f 8b`, not
 * by its name, so a rotated `access.log.1` that logrotate compressed reads as well as `x.gz`), never
 * read whole. Memory stays bounded whatever the file's size: one chunk of the stream, plus at most
 * `maxLineBytes` of the line being assembled; a longer line is skipped (counted as `overlong`),
 * never buffered. Hand-written rather than `node:readline`, which buffers a line of any length.
 *
 * A file cut in the middle (a gzip member without its end, a last line without its newline, as when
 * svc was writing while the file was copied) ends the file: its partial last line is still handed
 * on (the caller finds it is not JSON), and `truncated` says the gzip stream ended early.
 */
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';

/** The default longest line kept: access lines are a few hundred bytes, bounded (replay-attributes.ts). */
export const MAX_LINE_BYTES = 256 * 1024;

/** What reading a file found besides its lines. */
export interface LineStats {
  /** Lines handed on (complete, or the partial last one). */
  lines: number;
  /** Lines longer than `maxLineBytes`, skipped. */
  overlong: number;
  /** The gzip stream ended before its end (the file was cut). */
  truncated: boolean;
  gzip: boolean;
  /**
   * The most lines this reader held at once, split out and not yet handed on: the bounded-memory
   * claim, as a counter tests can assert on (it is 1: each line is handed on as soon as it is found).
   */
  maxRetainedLines: number;
  /** The most bytes of an unfinished line held at once: never more than `maxLineBytes`. */
  maxHeldBytes: number;
}

/** One line: its text (UTF-8, without the newline or a final `\r`) and its 1-based number in the file. */
export interface LogLine {
  readonly text: string;
  readonly line: number;
}

const GZIP_MAGIC = [0x1f, 0x8b] as const;

/** True when the file starts with the gzip magic bytes. */
export async function isGzip(path: string): Promise<boolean> {
  const fd = await open(path, 'r');
  try {
    const head = Buffer.alloc(2);
    const { bytesRead } = await fd.read(head, 0, 2, 0);
    return bytesRead === 2 && head[0] === GZIP_MAGIC[0] && head[1] === GZIP_MAGIC[1];
  } finally {
    await fd.close();
  }
}

/** A zlib error that means the compressed data ended early (a file copied while being written). */
function cutShort(e: unknown): boolean {
  const code = (e as { code?: unknown }).code;
  return code === 'Z_BUF_ERROR' || (e instanceof Error && /unexpected end of file/i.test(e.message));
}

/**
 * Streams the lines of `path` (see the file comment). Throws the file's open or read error (the
 * caller reports it); a gzip stream cut short is not an error (`stats.truncated`).
 */
export async function* readLogLines(path: string, stats: LineStats, maxLineBytes = MAX_LINE_BYTES): AsyncGenerator<LogLine> {
  stats.gzip = await isGzip(path);
  const file = createReadStream(path);
  const source: Readable = stats.gzip ? file.pipe(createGunzip()) : file;
  if (stats.gzip) file.on('error', (e) => source.destroy(e));
  let parts: Buffer[] = [];
  let pendingBytes = 0;
  let skipping = false;
  let number = 0;
  const take = (): LogLine => {
    number++;
    stats.lines++;
    const buf = parts.length === 1 ? parts[0]! : Buffer.concat(parts, pendingBytes);
    parts = [];
    pendingBytes = 0;
    const end = buf.length > 0 && buf[buf.length - 1] === 0x0d ? buf.length - 1 : buf.length;
    return { text: buf.toString('utf8', 0, end), line: number };
  };
  try {
    for await (const chunk of source as AsyncIterable<Buffer>) {
      let start = 0;
      for (let nl = chunk.indexOf(0x0a, start); nl >= 0; nl = chunk.indexOf(0x0a, start)) {
        if (skipping) {
          skipping = false;
          number++;
        } else {
          parts.push(chunk.subarray(start, nl));
          pendingBytes += nl - start;
          if (pendingBytes > maxLineBytes) {
            parts = [];
            pendingBytes = 0;
            number++;
            stats.overlong++;
          } else {
            // One line split out and not yet handed on.
            stats.maxRetainedLines = Math.max(stats.maxRetainedLines, 1);
            yield take();
          }
        }
        start = nl + 1;
      }
      if (start < chunk.length && !skipping) {
        pendingBytes += chunk.length - start;
        if (pendingBytes > maxLineBytes) {
          // Too long to be an access line: drop it up to its newline, never buffer it.
          parts = [];
          pendingBytes = 0;
          skipping = true;
          stats.overlong++;
        } else {
          parts.push(Buffer.from(chunk.subarray(start)));
          if (pendingBytes > stats.maxHeldBytes) stats.maxHeldBytes = pendingBytes;
        }
      }
    }
  } catch (e) {
    if (!stats.gzip || !cutShort(e)) throw e;
    stats.truncated = true;
  } finally {
    file.destroy();
  }
  if (skipping) number++;
  else if (pendingBytes > 0) {
    stats.maxRetainedLines = Math.max(stats.maxRetainedLines, 1);
    yield take();
  }
}

/** Fresh stats for {@link readLogLines}. */
export function lineStats(): LineStats {
  return { lines: 0, overlong: 0, truncated: false, gzip: false, maxRetainedLines: 0, maxHeldBytes: 0 };
}
