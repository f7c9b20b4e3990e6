/**
 * A piece of configuration text the compiler read: a config file, an environment variable, or text
 * decoded from one (base64 `ROUTES`). Offsets are stored; line and column are computed only when a
 * diagnostic is rendered (the esbuild habit).
 */
export interface SourceFile {
  /** How the source is named in diagnostics: `config.yaml`, `env:ROUTES`, `env:ROUTES (base64)`. */
  readonly name: string;
  readonly text: string;
  /** True for environment variables: located by name, not by line and column. */
  readonly isEnv: boolean;
}

/** A half-open byte range `[start, end)` of a source's text. */
export interface Span {
  readonly source: SourceFile;
  readonly start: number;
  readonly end: number;
}

/** Creates a source; `isEnv` sources render as `env:NAME` without a position. */
export function sourceFile(name: string, text: string, isEnv = false): SourceFile {
  return { name, text, isEnv };
}

/** A span covering the whole source (used for env vars and for whole-file problems). */
export function wholeSpan(source: SourceFile): Span {
  return { source, start: 0, end: source.text.length };
}

export function span(source: SourceFile, start: number, end: number): Span {
  const s = Math.max(0, Math.min(start, source.text.length));
  return { source, start: s, end: Math.max(s, Math.min(end, source.text.length)) };
}

/** 1-based line and column (in UTF-16 code units, as editors count) of an offset. */
export function lineCol(source: SourceFile, offset: number): { line: number; column: number } {
  const starts = lineStartsOf(source);
  const end = Math.max(0, Math.min(offset, source.text.length));
  // The last line start at or before `end` (binary search: the plan's source map locates every
  // route field, so this is called once per field of a file with thousands of lines).
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid]! <= end) lo = mid;
    else hi = mid - 1;
  }
  return { line: lo + 1, column: end - starts[lo]! + 1 };
}

const lineStartCache = new WeakMap<SourceFile, readonly number[]>();

/** Offsets where each line of a source begins (after `\n`), computed once per source. */
function lineStartsOf(source: SourceFile): readonly number[] {
  let starts = lineStartCache.get(source);
  if (starts === undefined) {
    const found = [0];
    const text = source.text;
    for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) found.push(i + 1);
    starts = found;
    lineStartCache.set(source, starts);
  }
  return starts;
}

/** The text of the line holding `offset`, without its line break. */
export function lineText(source: SourceFile, offset: number): string {
  const text = source.text;
  const start = offset > 0 ? text.lastIndexOf('\n', offset - 1) + 1 : 0;
  let end = text.indexOf('\n', offset);
  if (end < 0) end = text.length;
  return text.slice(start, end).replace(/\r$/, '');
}

/** `file:line:col`, or `env:NAME` for an environment variable. */
export function formatLocation(sp: Span): string {
  if (sp.source.isEnv) return sp.source.name;
  const { line, column } = lineCol(sp.source, sp.start);
  return `${sp.source.name}:${line}:${column}`;
}
