/**
 * The `.properties` adapter: Java-style properties text to the format-neutral tree.
 *
 * Hand-written: no library in our stack reads `.properties`, and we need a span for every key and
 * value. The lexical rules are Java's `Properties.load`:
 * - `key=value`, `key: value` and `key value`; white space around the separator is dropped;
 * - lines whose first non-blank character is `#` or `!` are comments;
 * - a line ending in an odd number of backslashes continues on the next line, whose leading white
 *   space is dropped;
 * - escapes `\t`, `\n`, `\r`, `\f`, `\uXXXX`; a backslash before any other character stands for that
 *   character (`\=`, `\:`, `\ `, `\\`, `\#`).
 * One deliberate difference: trailing white space of a value is dropped (Java keeps it; an invisible
 * space after a URL is a classic mistake). Escape it (`\ `) to keep it.
 *
 * A second difference: inside a quoted name `["…"]` of a key, `=`, `:` and blanks do not end the
 * key (`allowed_idp_claims["https://example.com/roles"][0]=admin`).
 *
 * Nesting (see properties-path.ts for the grammar): a dot separates map keys and `[n]` indexes a
 * list, so `routes[0].to[1]=http://b` sets the second `to` of the first route and
 * `set_response_headers.X-Frame-Options=DENY` one response header; `["a.b"]` quotes a key holding a
 * dot. List indices must run 0, 1, 2, … without gaps (`properties-list-gap`). A key given twice is
 * `duplicate-key`; giving one place two shapes (`a=1` and `a.b=2`, or `a.b` and `a[0]`) is
 * `properties-key-conflict`.
 *
 * Values are untyped scalars (`untyped: true`): the schema stage coerces `"true"` and `"30"`, and
 * splits comma-separated lists. The top-level `routes` and `policy` keys (the document keys) may
 * instead hold a whole YAML or JSON document, plain or base64 (`routes=[{"from": …}]`), read by the
 * document rule shared with environment variables.
 *
 * A tree is returned only when the text was read without errors; otherwise `undefined`.
 */
import {
  DuplicateKey,
  NestingTooDeep,
  PropertiesInvalidEscape,
  PropertiesInvalidKey,
  PropertiesKeyConflict,
  PropertiesListGap,
} from '../diagnostics/codes/sources.ts';
import type { Reporter } from '../diagnostics/diagnostic.ts';
import { formatLocation, sourceFile, span, wholeSpan, type SourceFile, type Span } from '../source/source-file.ts';
import { listNode, mapNode, scalar, type Node } from '../source/tree.ts';
import { parseDocumentValue } from './document.ts';
import { MAX_DEPTH } from './entries.ts';
import { formatPath, parseKeyPath, type PathSegment } from './properties-path.ts';

/** Top-level keys whose value may be a whole YAML/JSON document (plain or base64). */
export const DEFAULT_DOCUMENT_KEYS: readonly string[] = ['routes', 'policy'];

/** Text with the source offset of each character (`offsets.length === text.length`). */
interface Located {
  readonly text: string;
  readonly offsets: readonly number[];
}

/** One `key = value` line, continuation lines joined. */
interface LogicalLine {
  readonly key: Located;
  readonly value: Located;
  /** Where the key starts. */
  readonly keyStart: number;
  /** Where the value starts (or would start, when empty). */
  readonly valueStart: number;
}

/**
 * Parses `.properties` text into a tree; reports problems to `r` and returns `undefined` after any
 * error. `documentKeys` names the top-level keys whose value may be a YAML/JSON document.
 */
export function parseProperties(source: SourceFile, r: Reporter, documentKeys: readonly string[] = DEFAULT_DOCUMENT_KEYS): Node | undefined {
  const errorsBefore = r.errorCount;
  const builder = new TreeBuilder(source, r);
  for (const line of logicalLines(source.text)) {
    const key = unescape(line.key, source, r);
    const value = unescape(trimEnd(line.value), source, r);
    if (key === undefined || value === undefined || (key.text === '' && value.text === '')) continue;
    const keySpan = spanOf(source, key, 0, key.text.length, line.keyStart);
    const path = parseKeyPath(key.text);
    if (!path.ok) {
      r.report(PropertiesInvalidKey, keySpan, { key: key.text, problem: path.problem });
      continue;
    }
    if (path.segments.length > MAX_DEPTH) {
      r.report(NestingTooDeep, keySpan, { limit: MAX_DEPTH });
      continue;
    }
    const valueSpan = value.text === '' ? span(source, line.valueStart, line.valueStart) : spanOf(source, value, 0, value.text.length, line.valueStart);
    const segSpans = path.segments.map((s) => spanOf(source, key, s.start, s.end, line.valueStart));
    const first = path.segments[0];
    let node: Node | undefined;
    if (path.segments.length === 1 && first?.kind === 'name' && documentKeys.includes(first.name) && value.text.trim() !== '') {
      node = parseDocumentValue(
        {
          what: `\`${first.name}\``,
          plain: isVerbatim(value) ? maskedSource(source, valueSpan) : sourceFile(`${source.name} (${first.name})`, value.text),
          base64Name: `${source.name} (${first.name}, base64)`,
          whole: valueSpan,
        },
        r,
      );
      if (node === undefined) continue;
    } else {
      node = scalar(value.text, valueSpan, true);
    }
    builder.insert(path.segments, segSpans, node);
  }
  const root = builder.build();
  return r.errorCount > errorsBefore ? undefined : root;
}

function isBlank(c: string | undefined): boolean {
  return c === ' ' || c === '\t' || c === '\f';
}

/**
 * Splits the text into logical lines (comments and blank lines skipped, continuations joined), each
 * cut into its raw key and raw value (escapes not yet decoded).
 */
function logicalLines(text: string): LogicalLine[] {
  const out: LogicalLine[] = [];
  let i = 0;
  const n = text.length;
  const skipLineBreak = (): void => {
    if (text[i] === '\r') i++;
    if (text[i] === '\n') i++;
  };
  while (i < n) {
    while (i < n && (isBlank(text[i]) || (i === 0 && text[i] === '\uFEFF'))) i++;
    const c = text[i];
    if (c === undefined) break;
    if (c === '\n' || c === '\r') {
      skipLineBreak();
      continue;
    }
    if (c === '#' || c === '!') {
      while (i < n && text[i] !== '\n' && text[i] !== '\r') i++;
      skipLineBreak();
      continue;
    }
    let chars = '';
    const offsets: number[] = [];
    for (;;) {
      const lineStart = chars.length;
      while (i < n && text[i] !== '\n' && text[i] !== '\r') {
        chars += text[i];
        offsets.push(i);
        i++;
      }
      let backslashes = 0;
      for (let k = chars.length - 1; k >= lineStart && chars[k] === '\\'; k--) backslashes++;
      if (backslashes % 2 === 0) break;
      chars = chars.slice(0, -1); // the continuation backslash
      offsets.pop();
      skipLineBreak();
      if (i >= n) break;
      while (i < n && isBlank(text[i])) i++;
    }
    const lineEnd = i;
    skipLineBreak();
    out.push(splitKeyValue({ text: chars, offsets }, lineEnd));
  }
  return out;
}

/** Cuts a logical line at the first unescaped `=`, `:` or blank, dropping blanks around it. */
function splitKeyValue(line: Located, lineEnd: number): LogicalLine {
  const t = line.text;
  let j = 0;
  while (j < t.length && t[j] !== '=' && t[j] !== ':' && !isBlank(t[j])) {
    if (t.startsWith('["', j)) {
      // A quoted name may hold separators (`claims["https://x"]`); it ends at the next unescaped `"]`.
      for (j += 2; j < t.length && !t.startsWith('"]', j); j += t[j] === '\\' ? 2 : 1);
      j += 2;
    } else j += t[j] === '\\' ? 2 : 1;
  }
  j = Math.min(j, t.length);
  const key = slice(line, 0, j);
  while (j < t.length && isBlank(t[j])) j++;
  if (t[j] === '=' || t[j] === ':') j++;
  while (j < t.length && isBlank(t[j])) j++;
  const valueStart = j < t.length ? line.offsets[j]! : lineEnd;
  return { key, value: slice(line, j, t.length), keyStart: line.offsets[0] ?? lineEnd, valueStart };
}

function slice(l: Located, start: number, end: number): Located {
  return { text: l.text.slice(start, end), offsets: l.offsets.slice(start, end) };
}

/** Drops trailing blanks that are not escaped. */
function trimEnd(l: Located): Located {
  let end = l.text.length;
  while (end > 0 && isBlank(l.text[end - 1])) {
    let backslashes = 0;
    for (let k = end - 2; k >= 0 && l.text[k] === '\\'; k--) backslashes++;
    if (backslashes % 2 === 1) break;
    end--;
  }
  return slice(l, 0, end);
}

/** Decodes escapes; each decoded character keeps the offset of its first raw character. */
function unescape(l: Located, source: SourceFile, r: Reporter): Located | undefined {
  const t = l.text;
  if (!t.includes('\\')) return l;
  let text = '';
  const offsets: number[] = [];
  let ok = true;
  for (let i = 0; i < t.length; i++) {
    const c = t[i]!;
    const at = l.offsets[i]!;
    if (c !== '\\') {
      text += c;
      offsets.push(at);
      continue;
    }
    const e = t[i + 1];
    if (e === undefined) break; // a lone backslash at the very end stands for nothing
    i++;
    if (e === 'u') {
      const hex = t.slice(i + 1, i + 5);
      if (!/^[0-9a-fA-F]{4}$/.test(hex)) {
        const last = l.offsets[Math.min(i + hex.length, t.length - 1)] ?? at;
        r.report(PropertiesInvalidEscape, span(source, at, last + 1), { escape: `\\u${hex}` });
        ok = false;
        continue;
      }
      text += String.fromCharCode(parseInt(hex, 16));
      i += 4;
    } else {
      text += ({ t: '\t', n: '\n', r: '\r', f: '\f' } as Record<string, string>)[e] ?? e;
    }
    offsets.push(at);
  }
  return ok ? { text, offsets } : undefined;
}

/** The span of characters `[start, end)` of located text (empty text: at `fallback`). */
function spanOf(source: SourceFile, l: Located, start: number, end: number, fallback: number): Span {
  const s = l.offsets[start];
  const e = l.offsets[end - 1];
  if (s === undefined || e === undefined) return span(source, fallback, fallback);
  return span(source, s, e + 1);
}

/** True when the value was written as is: one line, no escapes (its offsets are consecutive). */
function isVerbatim(l: Located): boolean {
  for (let i = 1; i < l.offsets.length; i++) if (l.offsets[i] !== l.offsets[i - 1]! + 1) return false;
  return true;
}

/**
 * The file's text with everything outside `sp` blanked (line breaks kept), under the file's name:
 * a YAML/JSON document written in a property value is then parsed with offsets, lines and columns
 * that are those of the `.properties` file itself.
 */
function maskedSource(source: SourceFile, sp: Span): SourceFile {
  const t = source.text;
  const blank = (s: string): string => s.replace(/[^\n]/g, ' ');
  return sourceFile(source.name, blank(t.slice(0, sp.start)) + t.slice(sp.start, sp.end) + blank(t.slice(sp.end)), false);
}

/**
 * A place in the tree being built, with the full key that created it (for conflict messages).
 * A map's children are keyed by name (string), a list's by index (number).
 */
type Slot =
  | { readonly kind: 'leaf'; readonly node: Node; readonly key: string; readonly keySpan: Span }
  | { readonly kind: 'map' | 'list'; readonly children: Map<string | number, Slot>; readonly key: string; readonly keySpan: Span };

/** Builds the nested tree from flat key paths, reporting duplicates, conflicts and list gaps. */
class TreeBuilder {
  private readonly root: Slot;

  constructor(
    private readonly source: SourceFile,
    private readonly r: Reporter,
  ) {
    this.root = { kind: 'map', children: new Map(), key: '', keySpan: wholeSpan(source) };
  }

  insert(segments: readonly PathSegment[], segSpans: readonly Span[], node: Node): void {
    const fullKey = formatPath(segments);
    const keySpan = segSpans[segSpans.length - 1]!;
    let cur: Slot = this.root;
    for (let k = 0; k < segments.length; k++) {
      const seg = segments[k]!;
      if (cur.kind === 'leaf' || (seg.kind === 'name') !== (cur.kind === 'map')) {
        this.conflict(fullKey, keySpan, cur);
        return;
      }
      const at = seg.kind === 'name' ? seg.name : seg.index;
      const child = cur.children.get(at);
      const last = k === segments.length - 1;
      let next: Slot;
      if (last) {
        if (child?.kind === 'leaf') {
          this.r.report(DuplicateKey, keySpan, { key: fullKey, first: formatLocation(child.keySpan) });
          return;
        }
        if (child !== undefined) {
          this.conflict(fullKey, keySpan, child);
          return;
        }
        next = { kind: 'leaf', node, key: fullKey, keySpan };
      } else if (child !== undefined) {
        cur = child;
        continue;
      } else {
        const sp = segSpans[k]!;
        next = { kind: segments[k + 1]!.kind === 'name' ? 'map' : 'list', children: new Map(), key: fullKey, keySpan: sp };
      }
      cur.children.set(at, next);
      cur = next;
    }
  }

  private conflict(key: string, keySpan: Span, other: Slot): void {
    this.r.report(PropertiesKeyConflict, keySpan, { key, other: other.key, first: formatLocation(other.keySpan) });
  }

  build(): Node {
    return this.node(this.root, []);
  }

  private node(slot: Slot, path: PathSegment[]): Node {
    switch (slot.kind) {
      case 'leaf':
        return slot.node;
      case 'map': {
        const entries = [...slot.children].map(([at, child]) => {
          const name = String(at);
          const childPath: PathSegment[] = [...path, { kind: 'name', name, start: 0, end: 0 }];
          return { key: name, keySpan: child.keySpan, value: this.node(child, childPath) };
        });
        return mapNode(entries, slot === this.root ? wholeSpan(this.source) : slot.keySpan);
      }
      case 'list': {
        const indices = [...slot.children.keys()].map(Number).sort((a, b) => a - b);
        const gap = indices.findIndex((index, i) => index !== i);
        if (gap >= 0) {
          const after = slot.children.get(indices[gap]!)!;
          this.r.report(PropertiesListGap, after.keySpan, { key: formatPath(path), missing: gap });
        }
        const items = indices.map((index) => this.node(slot.children.get(index)!, [...path, { kind: 'index', index, start: 0, end: 0 }]));
        return listNode(items, slot.keySpan);
      }
    }
  }
}
