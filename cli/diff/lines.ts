/**
 * A line diff (longest common subsequence) for showing two policy texts side by side. Policies are
 * a handful of lines, so the quadratic table is fine; hand-written because no dependency we carry
 * does line diffs.
 */
import type { LineChange } from './types.ts';

/** Diffs two texts line by line: kept lines in order, removals before additions at each change. */
export function diffLines(a: string, b: string): LineChange[] {
  const x = a === '' ? [] : a.split('\n');
  const y = b === '' ? [] : b.split('\n');
  // lcs[i][j]: length of the longest common subsequence of x[i..] and y[j..].
  const lcs: number[][] = Array.from({ length: x.length + 1 }, () => new Array<number>(y.length + 1).fill(0));
  for (let i = x.length - 1; i >= 0; i--) {
    for (let j = y.length - 1; j >= 0; j--) {
      lcs[i]![j] = x[i] === y[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
    }
  }
  const out: LineChange[] = [];
  let i = 0;
  let j = 0;
  while (i < x.length || j < y.length) {
    if (i < x.length && j < y.length && x[i] === y[j]) {
      out.push({ op: 'keep', text: x[i]! });
      i++;
      j++;
    } else if (j >= y.length || (i < x.length && lcs[i + 1]![j]! >= lcs[i]![j + 1]!)) {
      out.push({ op: 'remove', text: x[i]! });
      i++;
    } else {
      out.push({ op: 'add', text: y[j]! });
      j++;
    }
  }
  return out;
}
