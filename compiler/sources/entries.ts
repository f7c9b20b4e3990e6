/**
 * Building blocks every format adapter shares: map entries with duplicate-key detection, the
 * nesting limit, and the tidying of library error messages into our message style.
 */
import { DuplicateKey } from '../diagnostics/codes/sources.ts';
import type { Reporter } from '../diagnostics/diagnostic.ts';
import { formatLocation, type Span } from '../source/source-file.ts';
import type { MapEntry, Node } from '../source/tree.ts';

/**
 * How deep lists and maps may nest in any source. Real configurations use fewer than ten levels;
 * the limit keeps recursive walkers far from the call-stack limit on hostile input.
 */
export const MAX_DEPTH = 128;

/**
 * A line whose leading indentation and block indicators (`- `, `? `, `: `) run longer than this is
 * refused before a YAML reader sees it: very deep compact sequences (`- - - … x`) can exhaust
 * V8 fatally inside the `yaml` library, which no `catch` can recover from.
 */
const MAX_LEADING_INDICATORS = 1000;

/** The offset of a line that starts with too long a run of indentation and indicators, if any. */
export function deepLineOffset(text: string): number | undefined {
  let run = 0;
  let lineStart = 0;
  let leading = true;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 10) {
      run = 0;
      leading = true;
      lineStart = i + 1;
      continue;
    }
    if (!leading) continue;
    const next = text.charCodeAt(i + 1);
    const isSpace = c === 32 || c === 9;
    const isIndicator = (c === 45 || c === 63 || c === 58) && (next === 32 || next === 9); // - ? :
    if (isSpace || isIndicator) {
      if (++run > MAX_LEADING_INDICATORS) return lineStart;
    } else leading = false;
  }
  return undefined;
}

/**
 * Collects the entries of one map in source order. A key given twice is reported as
 * `duplicate-key` at the second key, and the second entry is dropped.
 */
export class EntryList {
  readonly entries: MapEntry[] = [];
  private readonly seen = new Map<string, Span>();

  constructor(private readonly r: Reporter) {}

  /** Adds an entry; returns false (after reporting) when the key was already present. */
  add(key: string, keySpan: Span, value: Node): boolean {
    const first = this.seen.get(key);
    if (first !== undefined) {
      this.r.report(DuplicateKey, keySpan, { key, first: formatLocation(first) });
      return false;
    }
    this.seen.set(key, keySpan);
    this.entries.push({ key, keySpan, value });
    return true;
  }

  has(key: string): boolean {
    return this.seen.has(key);
  }
}

/**
 * A library's error message in our style: the first line only, lower-case first letter, no
 * position suffix (we locate by span) and no final period.
 */
export function tidyMessage(message: string): string {
  let m = message.split('\n')[0] ?? '';
  m = m.replace(/\s+at (row|line) \d+,? col(umn)? \d+.*$/i, '').replace(/\s+in JSON at position \d+.*$/, '');
  m = m.trim().replace(/[.:]+$/, '');
  if (m === '') return 'invalid text';
  return m.charAt(0).toLowerCase() + m.slice(1);
}

/** How a node is described in messages: `a list`, `a map`, `the string \`x\``. */
export function describeNode(node: Node): string {
  switch (node.kind) {
    case 'map':
      return 'a map';
    case 'list':
      return 'a list';
    case 'scalar':
      return node.value === null ? 'empty' : `a ${typeof node.value}`;
  }
}
