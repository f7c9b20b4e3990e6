/**
 * Finds where each key and value of a TOML document is written.
 *
 * Hand-written because no TOML library in our stack keeps positions: @iarna/toml returns plain
 * values only. The locator runs only on text @iarna/toml has already accepted, so it never judges
 * validity; it follows the TOML 1.0 lexical rules closely enough to find table headers
 * (`[a.b]`, `[[a.b]]`), `key = value` lines (bare, quoted and dotted keys), strings of all four kinds,
 * and values inside arrays and inline tables (even when they span several lines). For any text it
 * terminates and does not throw.
 */
import { span, type SourceFile, type Span } from '../source/source-file.ts';

/** One segment of a value's path: a table key or an array index. */
export type TomlPathSegment = string | number;

export interface TomlLocation {
  /** The key as written (its last segment for dotted keys); absent for array items. */
  readonly key: Span | undefined;
  /** The value as written; for tables, the header (or the line of the first dotted key). */
  readonly value: Span;
}

/** The lookup key of a path in the locator's result. */
export function pathKey(path: readonly TomlPathSegment[]): string {
  return JSON.stringify(path);
}

interface KeySegment {
  readonly name: string;
  readonly span: Span;
}

/**
 * Locates every key and value of a TOML document, by path (`pathKey(['routes', 0, 'to', 1])`).
 * Paths count arrays of tables in document order, as @iarna/toml builds them.
 */
export function locateToml(source: SourceFile): Map<string, TomlLocation> {
  return new Locator(source).run();
}

class Locator {
  private pos = 0;
  private readonly text: string;
  private readonly out = new Map<string, TomlLocation>();
  /** Length so far of each array of tables, by concrete path. */
  private readonly arrayLengths = new Map<string, number>();

  constructor(private readonly source: SourceFile) {
    this.text = source.text;
  }

  run(): Map<string, TomlLocation> {
    let table: TomlPathSegment[] = [];
    const t = this.text;
    while (this.pos < t.length) {
      const before = this.pos;
      this.skipBlank();
      const c = t[this.pos];
      if (c === undefined) break;
      if (c === '\n' || c === '\r') {
        this.pos++;
      } else if (c === '#') {
        this.skipComment();
      } else if (c === '[') {
        const headerStart = this.pos;
        const isArray = t[this.pos + 1] === '[';
        this.pos += isArray ? 2 : 1;
        const segs = this.key();
        this.skipBlank();
        this.pos += isArray ? 2 : 1; // `]]` or `]`
        const header = span(this.source, headerStart, this.pos);
        table = this.header(segs, isArray, header);
        this.skipLine();
      } else {
        this.keyValue(table, this.pos);
        this.skipLine();
      }
      if (this.pos === before) this.pos++; // INVARIANT (progress): every turn consumes text
    }
    return this.out;
  }

  private record(path: readonly TomlPathSegment[], loc: TomlLocation, overwrite: boolean): void {
    const k = pathKey(path);
    if (overwrite || !this.out.has(k)) this.out.set(k, loc);
  }

  /** Resolves a header to the concrete path of the table it opens, and records its location. */
  private header(segs: readonly KeySegment[], isArray: boolean, header: Span): TomlPathSegment[] {
    const path: TomlPathSegment[] = [];
    segs.forEach((s, i) => {
      path.push(s.name);
      const last = i === segs.length - 1;
      this.record(path, { key: s.span, value: header }, last && !isArray);
      const length = this.arrayLengths.get(pathKey(path));
      if (last && isArray) {
        const index = length ?? 0;
        this.arrayLengths.set(pathKey(path), index + 1);
        path.push(index);
        this.record(path, { key: undefined, value: header }, true);
      } else if (length !== undefined && length > 0) {
        path.push(length - 1); // a table inside the latest element of an array of tables
      }
    });
    return path;
  }

  /** Reads `key = value` (starting at `start`) inside `table` or an inline table. */
  private keyValue(table: readonly TomlPathSegment[], start: number): void {
    const segs = this.key();
    if (segs.length === 0) return;
    this.skipBlank();
    if (this.text[this.pos] !== '=') return;
    this.pos++;
    this.skipBlank();
    const path = [...table];
    const valueStart = this.pos;
    segs.forEach((s, i) => {
      path.push(s.name);
      if (i < segs.length - 1) this.record(path, { key: s.span, value: span(this.source, start, valueStart) }, false);
    });
    const last = segs[segs.length - 1]!;
    const end = this.value(path);
    this.record(path, { key: last.span, value: span(this.source, valueStart, end) }, true);
  }

  /** Reads a dotted key: segments separated by `.`, each bare, "basic" or 'literal'. */
  private key(): KeySegment[] {
    const t = this.text;
    const segs: KeySegment[] = [];
    for (;;) {
      this.skipBlank();
      const start = this.pos;
      const c = t[this.pos];
      let name: string;
      if (c === '"') {
        this.pos = this.basicStringEnd(this.pos);
        name = decodeBasic(t.slice(start + 1, this.pos - 1));
      } else if (c === "'") {
        const close = t.indexOf("'", start + 1);
        this.pos = close < 0 ? t.length : close + 1;
        name = t.slice(start + 1, this.pos - 1);
      } else {
        while (this.pos < t.length && /[A-Za-z0-9_-]/.test(t[this.pos]!)) this.pos++;
        name = t.slice(start, this.pos);
        if (name === '') return segs;
      }
      segs.push({ name, span: span(this.source, start, this.pos) });
      this.skipBlank();
      if (t[this.pos] !== '.') return segs;
      this.pos++;
    }
  }

  /** Skips one value at `pos`, recording values nested in arrays and inline tables; returns its end. */
  private value(path: readonly TomlPathSegment[]): number {
    const t = this.text;
    const c = t[this.pos];
    if (t.startsWith('"""', this.pos) || t.startsWith("'''", this.pos)) {
      const quote = t.slice(this.pos, this.pos + 3);
      const close = quote === '"""' ? this.unescapedIndex(quote, this.pos + 3) : t.indexOf(quote, this.pos + 3);
      let i = close < 0 ? t.length : close + 3;
      // Up to two quotes right before the closing delimiter belong to the content.
      for (let extra = 0; extra < 2 && close >= 0 && t[i] === quote[0]; extra++) i++;
      this.pos = i;
    } else if (c === '"') {
      this.pos = this.basicStringEnd(this.pos);
    } else if (c === "'") {
      const close = t.indexOf("'", this.pos + 1);
      this.pos = close < 0 ? t.length : close + 1;
    } else if (c === '[') {
      this.pos++;
      for (let i = 0; ; i++) {
        this.skipSpaceAndComments();
        if (this.pos >= t.length) break;
        if (t[this.pos] === ']') {
          this.pos++;
          break;
        }
        const itemStart = this.pos;
        const end = this.value([...path, i]);
        this.record([...path, i], { key: undefined, value: span(this.source, itemStart, end) }, true);
        this.skipSpaceAndComments();
        if (t[this.pos] === ',') this.pos++;
        else if (t[this.pos] !== ']') {
          if (this.pos === itemStart) this.pos++; // INVARIANT (progress)
        }
      }
    } else if (c === '{') {
      this.pos++;
      for (;;) {
        this.skipSpaceAndComments();
        if (this.pos >= t.length) break;
        if (t[this.pos] === '}') {
          this.pos++;
          break;
        }
        const before = this.pos;
        this.keyValue(path, this.pos);
        this.skipSpaceAndComments();
        if (t[this.pos] === ',') this.pos++;
        if (this.pos === before) this.pos++; // INVARIANT (progress)
      }
    } else {
      // Bare values: numbers, booleans, dates (which may hold one space: `1979-05-27 07:32:00`).
      const start = this.pos;
      while (this.pos < t.length && !',]}#\r\n'.includes(t[this.pos]!)) this.pos++;
      let end = this.pos;
      while (end > start && (t[end - 1] === ' ' || t[end - 1] === '\t')) end--;
      return end;
    }
    return this.pos;
  }

  /** The end (after the closing quote) of the basic string opening at `at`. */
  private basicStringEnd(at: number): number {
    const t = this.text;
    let i = at + 1;
    while (i < t.length && t[i] !== '"' && t[i] !== '\n') i += t[i] === '\\' ? 2 : 1;
    return Math.min(i + 1, t.length);
  }

  /** The index of the next `quote` from `from` that is not escaped by a backslash. */
  private unescapedIndex(quote: string, from: number): number {
    const t = this.text;
    for (let i = from; i < t.length; i++) {
      if (t[i] === '\\') i++;
      else if (t.startsWith(quote, i)) return i;
    }
    return -1;
  }

  /** Skips spaces and tabs. */
  private skipBlank(): void {
    while (this.text[this.pos] === ' ' || this.text[this.pos] === '\t') this.pos++;
  }

  /** Skips whitespace, line breaks and comments (allowed between array items). */
  private skipSpaceAndComments(): void {
    const t = this.text;
    while (this.pos < t.length) {
      const c = t[this.pos];
      if (c === ' ' || c === '\t' || c === '\n' || c === '\r') this.pos++;
      else if (c === '#') this.skipComment();
      else break;
    }
  }

  private skipComment(): void {
    const nl = this.text.indexOf('\n', this.pos);
    this.pos = nl < 0 ? this.text.length : nl;
  }

  /** Skips the rest of the current line (a trailing comment), leaving `pos` at the line break. */
  private skipLine(): void {
    const nl = this.text.indexOf('\n', this.pos);
    this.pos = nl < 0 ? this.text.length : nl;
  }
}

/** Decodes the content of a TOML basic string (used for quoted keys). */
function decodeBasic(s: string): string {
  return s.replace(/\\(u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)/g, (_m, e: string) => {
    if (e.length > 1) {
      const cp = parseInt(e.slice(1), 16);
      return cp <= 0x10ffff ? String.fromCodePoint(cp) : '\ufffd';
    }
    return { b: '\b', t: '\t', n: '\n', f: '\f', r: '\r', e: '\x1b', '"': '"', '\\': '\\' }[e] ?? e;
  });
}
