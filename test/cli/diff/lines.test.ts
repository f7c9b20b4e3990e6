/** lines.ts: the line diff used to show policy changes. */
import { describe, expect, it } from 'vitest';
import { diffLines } from '../../../cli/diff/lines.ts';

describe('diffLines', () => {
  it('keeps common lines and marks removals before additions', () => {
    expect(diffLines('a\nb\nc', 'a\nx\nc')).toEqual([
      { op: 'keep', text: 'a' },
      { op: 'remove', text: 'b' },
      { op: 'add', text: 'x' },
      { op: 'keep', text: 'c' },
    ]);
  });

  it('handles empty sides', () => {
    expect(diffLines('', 'a')).toEqual([{ op: 'add', text: 'a' }]);
    expect(diffLines('a', '')).toEqual([{ op: 'remove', text: 'a' }]);
    expect(diffLines('', '')).toEqual([]);
  });

  it('rebuilds both sides from its output', () => {
    const a = 'allow if a\ndeny if b\nallow if c\nallow if d';
    const b = 'deny if b\nallow if e\nallow if d\nallow if a';
    const d = diffLines(a, b);
    expect(d.filter((l) => l.op !== 'add').map((l) => l.text).join('\n')).toBe(a);
    expect(d.filter((l) => l.op !== 'remove').map((l) => l.text).join('\n')).toBe(b);
    expect(d.filter((l) => l.op === 'keep')).toHaveLength(2);
  });
});
