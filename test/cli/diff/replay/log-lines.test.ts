/** cli/diff/replay/log-lines.ts: access logs streamed line by line, plain or gzip'd, cut or huge. */
import { createWriteStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { isGzip, lineStats, readLogLines, type LineStats, type LogLine } from '../../../../cli/diff/replay/log-lines.ts';

const dir = mkdtempSync(join(tmpdir(), 'svc-replay-lines-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function all(path: string, max?: number): Promise<{ lines: LogLine[]; stats: LineStats }> {
  const stats = lineStats();
  const lines: LogLine[] = [];
  for await (const l of readLogLines(path, stats, max)) lines.push(l);
  return { lines, stats };
}

describe('readLogLines', () => {
  it('reads a plain file line by line, numbered from 1, without newlines or a final \\r', async () => {
    const p = join(dir, 'access.log');
    writeFileSync(p, 'a\nb\r\n\nlast');
    const { lines, stats } = await all(p);
    expect(lines).toEqual([
      { text: 'a', line: 1 },
      { text: 'b', line: 2 },
      { text: '', line: 3 },
      { text: 'last', line: 4 },
    ]);
    expect(stats).toMatchObject({ lines: 4, gzip: false, truncated: false, overlong: 0 });
  });

  it('recognizes gzip by its magic bytes, whatever the name (a rotated access.log.1 compressed by logrotate)', async () => {
    const p = join(dir, 'access.log.1');
    writeFileSync(p, gzipSync('{"x":1}\n{"x":2}\n'));
    expect(await isGzip(p)).toBe(true);
    const { lines, stats } = await all(p);
    expect(lines.map((l) => l.text)).toEqual(['{"x":1}', '{"x":2}']);
    expect(stats.gzip).toBe(true);
    const named = join(dir, 'plain.gz');
    writeFileSync(named, 'not gzip\n');
    expect((await all(named)).lines.map((l) => l.text)).toEqual(['not gzip']);
  });

  it('reads concatenated gzip members (logs appended to a compressed file)', async () => {
    const p = join(dir, 'members.gz');
    writeFileSync(p, Buffer.concat([gzipSync('one\n'), gzipSync('two\n')]));
    expect((await all(p)).lines.map((l) => l.text)).toEqual(['one', 'two']);
  });

  it('ends a gzip file cut in the middle without failing: the lines before, the cut line, and `truncated` (docs/security.md S69)', async () => {
    const full = gzipSync(Array.from({ length: 2000 }, (_, i) => `{"n":${i},"pad":"${'x'.repeat(40)}"}`).join('\n') + '\n');
    const p = join(dir, 'cut.gz');
    writeFileSync(p, full.subarray(0, Math.floor(full.length / 2)));
    const { lines, stats } = await all(p);
    expect(stats.truncated).toBe(true);
    expect(lines.length).toBeGreaterThan(10);
    expect(lines.slice(0, -1).every((l, i) => l.text === `{"n":${i},"pad":"${'x'.repeat(40)}"}`)).toBe(true);
  });

  it('hands on a plain file\'s last line even when cut in the middle (the caller finds it is not JSON)', async () => {
    const p = join(dir, 'cut.log');
    writeFileSync(p, '{"msg":"request"}\n{"msg":"req');
    expect((await all(p)).lines.map((l) => l.text)).toEqual(['{"msg":"request"}', '{"msg":"req']);
  });

  it('skips a line longer than the limit without buffering it, and keeps counting lines (docs/security.md S69)', async () => {
    const p = join(dir, 'long.log');
    writeFileSync(p, `short\n${'y'.repeat(5000)}\nafter\n${'z'.repeat(5000)}`);
    const { lines, stats } = await all(p, 1024);
    expect(lines).toEqual([
      { text: 'short', line: 1 },
      { text: 'after', line: 3 },
    ]);
    expect(stats.overlong).toBe(2);
  });

  it('never holds more than the limit of a line with no end: a 16 MiB line without a newline, plain and gzip\'d (docs/security.md S69)', async () => {
    const huge = Buffer.concat([Buffer.from('first\n'), Buffer.alloc(16 * 1024 * 1024, 0x61)]);
    for (const [name, data] of [['huge.log', huge], ['huge.log.gz', gzipSync(huge)]] as const) {
      const p = join(dir, name);
      writeFileSync(p, data);
      const { lines, stats } = await all(p, 64 * 1024);
      expect(lines).toEqual([{ text: 'first', line: 1 }]);
      expect(stats.overlong).toBe(1);
      expect(stats.maxHeldBytes).toBeLessThanOrEqual(64 * 1024);
    }
  });

  it('fails on a file that cannot be read', async () => {
    await expect(all(join(dir, 'missing.log'))).rejects.toThrow(/ENOENT/);
  });

  it('holds one line at a time however big the log (a counter of lines retained, not a timing)', async () => {
    const p = join(dir, 'big.log');
    const out = createWriteStream(p);
    const line = `{"level":"info","msg":"request","path":"/${'p'.repeat(200)}"}\n`;
    for (let i = 0; i < 100_000; i++) if (!out.write(line)) await once(out, 'drain');
    out.end();
    await once(out, 'close');
    const stats = lineStats();
    let n = 0;
    for await (const l of readLogLines(p, stats)) {
      expect(l.text.length).toBe(line.length - 1);
      n++;
    }
    expect(n).toBe(100_000);
    expect(stats.maxRetainedLines).toBe(1);
    expect(stats.maxHeldBytes).toBeLessThan(line.length);
  });
});
