/** Levenshtein distance, for "did you mean" suggestions (small inputs only). */
export function editDistance(a: string, b: string): number {
  const prev = new Array<number>(b.length + 1);
  for (let j = 0; j <= b.length; j++) prev[j] = j;
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0]!;
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = prev[j]!;
      prev[j] = Math.min(prev[j]! + 1, prev[j - 1]! + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = tmp;
    }
  }
  return prev[b.length]!;
}

/**
 * The closest candidate to `word`, if it is a near miss: within a third of the word's length
 * (case and `-`/`_` differences are free). Ties go to the first candidate in sorted order.
 */
export function suggest(word: string, candidates: Iterable<string>): string | undefined {
  const norm = (s: string) => s.toLowerCase().replace(/-/g, '_');
  const w = norm(word);
  let best: string | undefined;
  let bestD = Infinity;
  for (const c of [...candidates].sort()) {
    const d = editDistance(w, norm(c));
    if (d < bestD) {
      bestD = d;
      best = c;
    }
  }
  return best !== undefined && bestD <= Math.max(1, Math.floor(w.length / 3)) ? best : undefined;
}
