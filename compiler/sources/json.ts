/**
 * The JSON adapter: strict JSON (RFC 8259) to the format-neutral tree, with a span for every key
 * and value.
 *
 * Hand-written scanner, on purpose: `JSON.parse` keeps no positions and its error messages carry an
 * offset only sometimes, and the YAML parser (which does keep positions) is a superset with different
 * rules (it would accept comments, single quotes and unquoted keys). The scanner follows the RFC
 * grammar exactly; `JSON.parse` then re-checks every accepted text, so V8 stays the authority on
 * what is valid JSON, and decodes each string literal.
 *
 * Contract: syntax errors are located at the failing offset (`json-syntax`); a key given twice in
 * one object is `duplicate-key` at the second key; numbers that JSON data cannot hold exactly
 * (overflowing to infinity) are `number-not-representable`; a leading byte-order mark is ignored.
 * A tree is returned only when the text was read without errors; otherwise `undefined`.
 */
import { JsonSyntax, NestingTooDeep, NumberNotRepresentable } from '../diagnostics/codes/sources.ts';
import type { Reporter } from '../diagnostics/diagnostic.ts';
import { span, type SourceFile } from '../source/source-file.ts';
import { listNode, mapNode, scalar, type Node } from '../source/tree.ts';
import { EntryList, MAX_DEPTH, tidyMessage } from './entries.ts';

/** Parses strict JSON text into a tree; reports problems to `r` and returns `undefined` after any error. */
export function parseJson(source: SourceFile, r: Reporter): Node | undefined {
  const errorsBefore = r.errorCount;
  const scanner = new JsonScanner(source, r);
  const root = scanner.document();
  if (root === undefined || r.errorCount > errorsBefore) return undefined;
  try {
    JSON.parse(source.text.replace(/^\uFEFF/, ''));
  } catch (e) {
    // The scanner accepted what V8 refuses: report V8's verdict rather than trust the scanner.
    r.report(JsonSyntax, span(source, 0, source.text.length), { problem: tidyMessage(e instanceof Error ? e.message : String(e)) });
    return undefined;
  }
  return root;
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/** Recursive descent over the RFC 8259 grammar. A method returns `undefined` after reporting. */
class JsonScanner {
  private pos = 0;
  private readonly text: string;

  constructor(
    private readonly source: SourceFile,
    private readonly r: Reporter,
  ) {
    this.text = source.text;
    if (this.text.charCodeAt(0) === 0xfeff) this.pos = 1;
  }

  document(): Node | undefined {
    this.ws();
    const v = this.value(0);
    if (v === undefined) return undefined;
    this.ws();
    if (this.pos < this.text.length) return this.fail(`unexpected ${this.describeHere()} after the document`);
    return v;
  }

  private fail(problem: string, at = this.pos): undefined {
    const end = at < this.text.length ? at + 1 : at;
    this.r.report(JsonSyntax, span(this.source, at, end), { problem });
    return undefined;
  }

  private describeHere(): string {
    if (this.pos >= this.text.length) return 'end of input';
    const c = this.text.codePointAt(this.pos)!;
    return c < 0x20 || c === 0x7f ? `control character U+${c.toString(16).padStart(4, '0')}` : `\`${String.fromCodePoint(c)}\``;
  }

  /** Skips JSON whitespace: space, tab, line feed, carriage return (nothing else). */
  private ws(): void {
    const t = this.text;
    while (this.pos < t.length) {
      const c = t.charCodeAt(this.pos);
      if (c === 32 || c === 9 || c === 10 || c === 13) this.pos++;
      else break;
    }
  }

  private value(depth: number): Node | undefined {
    if (depth > MAX_DEPTH) {
      this.r.report(NestingTooDeep, span(this.source, this.pos, this.pos + 1), { limit: MAX_DEPTH });
      return undefined;
    }
    const t = this.text;
    const c = t[this.pos];
    const start = this.pos;
    switch (c) {
      case '{':
        return this.object(depth);
      case '[':
        return this.array(depth);
      case '"': {
        const s = this.string();
        return s === undefined ? undefined : scalar(s, span(this.source, start, this.pos));
      }
      case 't':
      case 'f':
      case 'n':
        for (const [word, v] of [['true', true], ['false', false], ['null', null]] as const) {
          if (t.startsWith(word, this.pos)) {
            this.pos += word.length;
            return scalar(v, span(this.source, start, this.pos));
          }
        }
        return this.fail(`unexpected ${this.describeHere()}; expected a value`);
      default: {
        NUMBER.lastIndex = this.pos;
        const m = NUMBER.exec(t);
        if (m === null || m[0] === '' || m[0] === '-') return this.fail(this.pos >= t.length ? 'unexpected end of input; expected a value' : `unexpected ${this.describeHere()}; expected a value`);
        this.pos += m[0].length;
        const n = Number(m[0]);
        const sp = span(this.source, start, this.pos);
        if (!Number.isFinite(n)) {
          this.r.report(NumberNotRepresentable, sp, { text: m[0] });
          return undefined;
        }
        return scalar(n, sp);
      }
    }
  }

  private object(depth: number): Node | undefined {
    const start = this.pos++;
    const entries = new EntryList(this.r);
    this.ws();
    if (this.text[this.pos] === '}') {
      this.pos++;
      return mapNode([], span(this.source, start, this.pos));
    }
    for (;;) {
      this.ws();
      if (this.text[this.pos] !== '"') return this.fail(`unexpected ${this.describeHere()}; expected a double-quoted key`);
      const keyStart = this.pos;
      const key = this.string();
      if (key === undefined) return undefined;
      const keySpan = span(this.source, keyStart, this.pos);
      this.ws();
      if (this.text[this.pos] !== ':') return this.fail(`unexpected ${this.describeHere()}; expected \`:\` after a key`);
      this.pos++;
      this.ws();
      const v = this.value(depth + 1);
      if (v === undefined) return undefined;
      entries.add(key, keySpan, v);
      this.ws();
      const c = this.text[this.pos];
      if (c === ',') {
        this.pos++;
        continue;
      }
      if (c === '}') {
        this.pos++;
        return mapNode(entries.entries, span(this.source, start, this.pos));
      }
      return this.fail(`unexpected ${this.describeHere()}; expected \`,\` or \`}\``);
    }
  }

  private array(depth: number): Node | undefined {
    const start = this.pos++;
    const items: Node[] = [];
    this.ws();
    if (this.text[this.pos] === ']') {
      this.pos++;
      return listNode([], span(this.source, start, this.pos));
    }
    for (;;) {
      this.ws();
      const v = this.value(depth + 1);
      if (v === undefined) return undefined;
      items.push(v);
      this.ws();
      const c = this.text[this.pos];
      if (c === ',') {
        this.pos++;
        continue;
      }
      if (c === ']') {
        this.pos++;
        return listNode(items, span(this.source, start, this.pos));
      }
      return this.fail(`unexpected ${this.describeHere()}; expected \`,\` or \`]\``);
    }
  }

  /** Reads a string literal at `pos` (which holds `"`); returns its decoded value. */
  private string(): string | undefined {
    const t = this.text;
    const start = this.pos++;
    let simple = true;
    while (this.pos < t.length) {
      const c = t.charCodeAt(this.pos);
      if (c === 34) {
        this.pos++;
        const literal = t.slice(start, this.pos);
        return simple ? literal.slice(1, -1) : (JSON.parse(literal) as string);
      }
      if (c < 0x20) return this.fail(`control character U+${c.toString(16).padStart(4, '0')} in a string; escape it`);
      if (c === 92) {
        simple = false;
        const e = t[this.pos + 1];
        if (e === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(t.slice(this.pos + 2, this.pos + 6))) return this.fail('`\\u` must be followed by four hex digits');
          this.pos += 6;
          continue;
        }
        if (e === undefined || !'"\\/bfnrt'.includes(e)) return this.fail(`invalid escape \`\\${e ?? ''}\``);
        this.pos += 2;
        continue;
      }
      this.pos++;
    }
    return this.fail('unterminated string', start);
  }
}
