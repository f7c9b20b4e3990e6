/**
 * runtime/observe/log/chunked-destination.ts: log lines reach the file descriptor whole and in
 * order, across chunk boundaries, multi-byte characters and lines longer than a chunk; `flush`
 * calls back only once they are written; `flushSync` writes them before it returns; a reader that
 * closes standard output ends the logging, not the process.
 */
import { spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { chunkedDestination } from '../../../../runtime/observe/log/chunked-destination.ts';

const dir = mkdtempSync(join(tmpdir(), 'svc-chunked-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

/** A fresh file, its descriptor, and a reader of what reached it. */
function file() {
  const path = join(dir, `log-${files++}`);
  const fd = openSync(path, 'w');
  return { fd, read: () => readFileSync(path, 'utf8'), close: () => closeSync(fd) };
}

const flushed = (d: { flush(cb: (err?: Error) => void): void }) => new Promise<void>((resolve, reject) => d.flush((err) => (err ? reject(err) : resolve())));

describe('chunkedDestination', () => {
  it('writes every line whole and in order, whatever the chunk size and the characters', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.string({ unit: 'binary', maxLength: 300 }), { maxLength: 60 }), fc.integer({ min: 16, max: 600 }), async (texts, chunkBytes) => {
        const f = file();
        const d = chunkedDestination(f.fd, chunkBytes);
        const lines = texts.map((t) => `${t}\n`);
        for (const l of lines) d.write(l);
        await flushed(d);
        expect(f.read()).toBe(lines.join(''));
        f.close();
      }),
      { numRuns: 200 },
    );
  });

  it('holds lines until a chunk fills or a flush', async () => {
    const f = file();
    const d = chunkedDestination(f.fd, 64);
    d.write('short line\n');
    await new Promise((r) => setTimeout(r, 20));
    expect(f.read()).toBe('');
    d.write('x'.repeat(30) + '\n'); // 11 + 31 bytes at up to 3 bytes a unit: the first line goes out
    await flushed(d);
    expect(f.read()).toBe(`short line\n${'x'.repeat(30)}\n`);
    f.close();
  });

  it('flushSync writes everything held before it returns; after an awaited flush, in order', async () => {
    const f = file();
    const d = chunkedDestination(f.fd, 1024);
    const lines = Array.from({ length: 500 }, (_, i) => `{"n":${i},"text":"é ✓ 𝄞"}\n`);
    for (const l of lines.slice(0, 490)) d.write(l);
    await flushed(d);
    for (const l of lines.slice(490)) d.write(l); // fewer than a chunk: held, nothing in flight
    d.flushSync();
    expect(f.read()).toBe(lines.join(''));
    f.close();
  });

  it('a flush calls back only once the last byte is written, even one byte past a chunk', async () => {
    // sonic-boom with a minLength stops with that many bytes held: a flush must not call back then.
    for (let n = 1; n <= 3; n++) {
      const f = file();
      const d = chunkedDestination(f.fd, 16);
      d.write('\u0000𐀀𐀀\n'); // longer than a chunk at 3 bytes a unit: a buffer of its own
      d.write('x'.repeat(n - 1) + '\n');
      await flushed(d);
      expect(f.read()).toBe(`\u0000𐀀𐀀\n${'x'.repeat(n - 1)}\n`);
      f.close();
    }
  });

  it('a reader that closes standard output ends the logging, and the process goes on', async () => {
    // A child writes lines to its standard output, a pipe this test closes after the first bytes.
    const script = `
      import { chunkedDestination } from ${JSON.stringify(new URL('../../../../runtime/observe/log/chunked-destination.ts', import.meta.url).href)};
      const d = chunkedDestination(1, 4096);
      let n = 0;
      const t = setInterval(() => {
        for (let i = 0; i < 200; i++) d.write('line ' + n++ + '\\n');
        d.flush();
        if (n >= 40000) { clearInterval(t); d.flushSync(); process.stderr.write('still running\\n'); }
      }, 1);
    `;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
    child.stdout.destroy();
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(stderr).toContain('still running');
    expect(code).toBe(0);
  });
});
