/** lineCol (binary search over cached line starts) agrees with counting line breaks by hand. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { lineCol, sourceFile } from '../../../compiler/source/source-file.ts';

function naive(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, Math.max(0, Math.min(offset, text.length)));
  const lines = before.split('\n');
  return { line: lines.length, column: lines.at(-1)!.length + 1 };
}

describe('lineCol', () => {
  it('matches a naive count for every offset, including past the end', () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom('a', 'é', '\n', '\r', ' ') }), fc.integer({ min: -2, max: 60 }), (text, offset) => {
        expect(lineCol(sourceFile('c.yaml', text), offset)).toEqual(naive(text, offset));
      }),
    );
  });

  it('counts columns in UTF-16 code units after the last line break', () => {
    expect(lineCol(sourceFile('c.yaml', 'a: 1\nbb: 😀x\n'), 10)).toEqual({ line: 2, column: 6 });
  });
});
