/**
 * The YAML fast path: reads the common shape of a config (block and flow maps and lists, plain and
 * quoted scalars on one line, block scalars, comments) with js-yaml, several times faster than the
 * `yaml` library, and builds the same tree as the library reader in yaml.ts, with the same spans to
 * the character.
 *
 * Contract: `readYamlFast` returns a tree only where the library reader would return that very
 * tree without any diagnostic; for anything else it returns `undefined` ("not mine") and the
 * caller reads the text with the library reader, which then reports whatever there is to report.
 * It is "not mine" whenever js-yaml refuses the text or warns, and for everything the fast path
 * does not read itself: a BOM, tabs, carriage returns other than in CRLF line ends, control
 * characters, document markers and directives, anchors, aliases, tags, explicit (`?`) and merge
 * (`<<`) keys, duplicate keys, keys that are lists or maps, scalars or flow collections over more
 * than one line, empty list items, empty values in flow maps, non-finite numbers, nesting deeper
 * than js-yaml's default limit, a document whose top is not a list or a map, and comment lines
 * placed where the library would count them into a collection's span.
 *
 * A text with CRLF line ends (a config saved on Windows) is read without its carriage returns, and
 * every span is then moved back onto the text as written: one character on for each CRLF line
 * end before it, so a span that ends at a line end ends before its `\r`, as the library's do.
 *
 * Only the shape and the offsets come from js-yaml (through its `listener`, which is told where
 * each node opens and closes). Every scalar's value comes from the `yaml` library itself: quoted
 * and block scalars are decoded by its scalar resolver, plain scalars are resolved with its
 * core-schema tags, so the two readers cannot disagree on `0o17`, `1_000`, `.inf` or `~`.
 */
import { FAILSAFE_SCHEMA, load, type LoaderState } from 'js-yaml';
import { CST, Document, isScalar, type ScalarTag } from 'yaml';
import type { SourceFile, Span } from '../source/source-file.ts';
import { listNode, mapNode, scalar, type MapEntry, type Node, type ScalarValue } from '../source/tree.ts';

/** How the library reader reads YAML; the fast path resolves scalars with the same schema and options. */
export const LIBRARY_OPTIONS = {
  version: '1.2',
  schema: 'core',
  uniqueKeys: false, // duplicates are reported by the reader, at the second key
  merge: false, // `<<` is resolved by the reader, with spans
  prettyErrors: false,
} as const;

const LIBRARY_DOC = new Document(undefined, LIBRARY_OPTIONS);
const SCALAR_TAGS = LIBRARY_DOC.schema.tags.filter((t): t is ScalarTag => !('collection' in t && t.collection));
const STRING_TAG = SCALAR_TAGS.find((t) => t.tag === 'tag:yaml.org,2002:str');

/**
 * One test that matches a text exactly when some scalar tag's own test does (their union), so
 * that text no tag can claim resolves to itself without trying each tag; the string tag resolves
 * a text to itself. Undefined, and every tag tried, should a test carry flags or the string tag
 * not be the identity.
 */
const ANY_TAG_TEST = (() => {
  const tests = SCALAR_TAGS.flatMap((t) => (t.test === undefined ? [] : [t.test]));
  if (tests.some((t) => t.flags !== '') || STRING_TAG?.resolve('x', () => {}, LIBRARY_DOC.options) !== 'x') return undefined;
  return new RegExp(tests.map((t) => `(?:${t.source})`).join('|'));
})();

/**
 * Characters and lines the fast path leaves to the library: tabs, carriage returns, control
 * characters, line and paragraph separators, BOMs, noncharacters and lone surrogates, lines that
 * start with a document marker or a directive, and lines that start with more indentation and
 * block indicators than the library reader accepts (a superset of what `deepLineOffset` finds).
 */
const NOT_MINE_TEXT =
  /[\t\r\x00-\x08\x0B-\x1F\x7F-\x9F\u2028\u2029\uFEFF\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]|^(?:---|\.\.\.|%|[ ?:-]{1001})/m;

/** A carriage return that does not start a CRLF line end. */
const LONE_CR = /\r(?!\n)/;

/**
 * Where the line feeds of `written`'s CRLF line ends stand once its `\r\n` are made `\n`, in
 * order (a file may mix LF and CRLF line ends: only these moved).
 */
function crlfEndsOf(written: string): number[] {
  const ends: number[] = [];
  for (let at = written.indexOf('\r\n'); at >= 0; at = written.indexOf('\r\n', at + 2)) ends.push(at - ends.length);
  return ends;
}

/** How many of `lineEnds` (ascending) come before `offset`. */
function countBefore(lineEnds: readonly number[], offset: number): number {
  let lo = 0;
  let hi = lineEnds.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (lineEnds[mid]! < offset) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** `node` with every span moved back onto the text as written: one character on per CRLF line end before it. */
function movedOnto(node: Node, lineEnds: readonly number[]): Node {
  const moved = (sp: Span): Span => ({ source: sp.source, start: sp.start + countBefore(lineEnds, sp.start), end: sp.end + countBefore(lineEnds, sp.end) });
  switch (node.kind) {
    case 'scalar':
      return scalar(node.value, moved(node.span), node.untyped);
    case 'list':
      return listNode(
        node.items.map((item) => movedOnto(item, lineEnds)),
        moved(node.span),
      );
    case 'map':
      return mapNode(
        node.entries.map((e) => ({ key: e.key, keySpan: moved(e.keySpan), value: movedOnto(e.value, lineEnds) })),
        moved(node.span),
      );
  }
}

/** Thrown from inside js-yaml's listener to give the text up. */
const NOT_MINE = new Error('not read by the YAML fast path');

/**
 * The longest a key may run up to its `:` in the fast path. The library refuses an implicit key
 * whose `:` stands more than 1024 characters after its start.
 */
const MAX_KEY_RUN = 1000;

/** Characters the library's plain-scalar reader refuses to start with: tab , % | > @ ` */
const PLAIN_BAD_START: ReadonlySet<number> = new Set([0x09, 0x2c, 0x25, 0x7c, 0x3e, 0x40, 0x60]);

const NO_KIDS: readonly Built[] = [];

const SPACE = 32;
const NEWLINE = 10;
const HASH = 35;

/** Reads `source` as the library reader would, or returns `undefined` when the text is not the fast path's to read. */
export function readYamlFast(source: SourceFile): Node | undefined {
  const crlf = source.text.includes('\r');
  if (crlf && LONE_CR.test(source.text)) return undefined;
  const text = crlf ? source.text.replaceAll('\r\n', '\n') : source.text;
  if (NOT_MINE_TEXT.test(text)) return undefined;
  const reader = new FastReader(source, text, crlf ? crlfEndsOf(source.text) : undefined);
  try {
    load(text, {
      schema: FAILSAFE_SCHEMA,
      onWarning: () => {
        throw NOT_MINE;
      },
      listener: (event, state) => {
        if (event === 'open') reader.open(state.position);
        else reader.close(state);
      },
    });
  } catch {
    return undefined; // js-yaml refused the text, or the reader gave it up
  }
  return reader.root();
}

/** Up to this many keys, a map is searched for a duplicate key entry by entry; beyond, through a set. */
const FEW_KEYS = 16;

/** A plain or quoted scalar on one line, as read. */
type ScalarBuilt = Extract<Built, { t: 'plain' | 'quoted' }>;

/** What one node read by js-yaml became. */
type Built =
  /** Nothing was read: an empty value, or js-yaml's attempt at a key where a map had ended. */
  | { readonly t: 'none'; readonly open: number; readonly close: number }
  /** A plain or quoted scalar on one line; `value` is the library's reading of its text. */
  | { readonly t: 'plain' | 'quoted'; readonly start: number; readonly end: number; readonly value: string; readonly result: unknown }
  | {
      readonly t: 'block';
      readonly start: number;
      readonly end: number;
      readonly value: string;
      readonly result: unknown;
      /** Indentation of the first content line, and of the line that ended the scalar (0 at the end of the text). */
      readonly contentIndent: number;
      readonly stopIndent: number;
    }
  /** A list or map; `end` is the end of its span (`range[1]` in the library). */
  | { readonly t: 'flow' | 'block-collection'; readonly node: Node; readonly end: number; readonly result: unknown };

/** Turns js-yaml's open and close events into our tree. Every method throws NOT_MINE to give up. */
class FastReader {
  private readonly text: string;
  private readonly len: number;
  /** Per node being read (innermost last): where it opened, and where its children start in `built`. */
  private readonly opens: number[] = [];
  private readonly firstKid: number[] = [];
  /** Nodes read whose parent is still open, in order: the first `count` of `built`. */
  private readonly built: Built[] = [];
  private count = 0;
  /** The last gap `deepestComment` looked at, and its answer. */
  private gapFrom = -1;
  private gapTo = -1;
  private gapDeepest = -1;
  private top: Built | undefined;

  /**
   * `text` is the source's text, less the `\r` of its CRLF line ends when `lineEnds` (where those
   * line ends' line feeds stand in `text`) is given. Spans are offsets into `text` while the reader
   * reads (it reads some back); the finished tree's are moved onto the source's own text.
   */
  constructor(
    private readonly source: SourceFile,
    text: string,
    private readonly lineEnds: readonly number[] | undefined,
  ) {
    this.text = text;
    this.len = text.length;
  }

  root(): Node | undefined {
    const top = this.top;
    const node = top !== undefined && (top.t === 'flow' || top.t === 'block-collection') ? top.node : undefined;
    return node === undefined || this.lineEnds === undefined ? node : movedOnto(node, this.lineEnds);
  }

  open(position: number): void {
    this.opens.push(position);
    this.firstKid.push(this.count);
  }

  close(state: LoaderState): void {
    const open = this.opens.pop();
    const first = this.firstKid.pop();
    if (open === undefined || first === undefined) throw NOT_MINE;
    const kids = first === this.count ? NO_KIDS : this.built.slice(first, this.count);
    const built = this.build(open, kids, state);
    this.count = first;
    if (this.opens.length > 0) this.built[this.count++] = built;
    else if (this.top === undefined) this.top = built;
    else throw NOT_MINE;
  }

  private build(open: number, kids: readonly Built[], state: LoaderState): Built {
    if (state.anchor !== null) throw NOT_MINE;
    const { kind, tag, result } = state;
    const position = Math.min(state.position, this.len);
    if (kind === null) {
      if (tag !== null || result !== null) throw NOT_MINE; // an alias, or a tag on nothing
      for (const k of kids) if (k.t !== 'none') throw NOT_MINE;
      return { t: 'none', open, close: position };
    }
    if (kind === 'scalar') {
      if (typeof result !== 'string') throw NOT_MINE;
      let phantoms = 0;
      for (const k of kids) if (k.t === 'none') phantoms++;
      if (phantoms < kids.length) {
        // js-yaml read a scalar as a would-be map key that no `:` followed: that scalar is this node.
        const only = kids[0]!;
        if (kids.length === 1 && (only.t === 'plain' || only.t === 'quoted') && only.result === result) return only;
        throw NOT_MINE;
      }
      if (tag === '?') return this.plain(open, position, result);
      if (tag !== null) throw NOT_MINE;
      const start = this.contentStart(open);
      const c = this.text.charCodeAt(start);
      if (c === 0x22 || c === 0x27) return this.quoted(start, position, result); // " '
      if (c === 0x7c || c === 0x3e) return this.block(start, position, result); // | >
      throw NOT_MINE;
    }
    if ((kind === 'sequence' || kind === 'mapping') && tag === null) {
      // A flow collection read as a would-be map key that no `:` followed.
      if (kids.length === 1 && kids[0]!.t === 'flow' && (kids[0] as { result: unknown }).result === result) return kids[0]!;
      const start = this.contentStart(open);
      const c = this.text.charCodeAt(start);
      if (kind === 'sequence') return c === 0x5b ? this.flowList(start, position, kids, result) : this.blockList(start, position, kids, result); // [
      return c === 0x7b ? this.flowMap(start, position, kids, result) : this.blockMap(start, position, kids, result); // {
    }
    throw NOT_MINE;
  }

  // --- scalars ---------------------------------------------------------------------------------

  private plain(open: number, position: number, result: string): Built {
    const text = this.text;
    const start = this.contentStart(open);
    let end = position;
    while (end > start && (text.charCodeAt(end - 1) === SPACE || text.charCodeAt(end - 1) === NEWLINE)) end--;
    if (end <= start || this.hasNewline(start, end)) throw NOT_MINE;
    // The library reads a plain scalar on one line as its text, and refuses one starting with a
    // character js-yaml refuses too; the check keeps the two in step should either change.
    if (PLAIN_BAD_START.has(text.charCodeAt(start))) throw NOT_MINE;
    // js-yaml's reading of a plain scalar on one line is its text, from the same start: no new
    // string is needed.
    if (result.length !== end - start || result.charCodeAt(0) !== text.charCodeAt(start)) throw NOT_MINE;
    return { t: 'plain', start, end, value: result, result };
  }

  private quoted(start: number, end: number, result: string): Built {
    const text = this.text;
    if (end - start < 2 || text.charCodeAt(end - 1) !== text.charCodeAt(start) || this.hasNewline(start, end)) throw NOT_MINE;
    if (text.charCodeAt(end) === HASH) throw NOT_MINE; // a comment must be set off by a space
    const type = text.charCodeAt(start) === 0x22 ? 'double-quoted-scalar' : 'single-quoted-scalar';
    const value = resolveScalarText({ type, offset: start, indent: 0, source: text.slice(start, end), end: [] });
    return { t: 'quoted', start, end, value, result };
  }

  /**
   * A block scalar (`|`, `>`, with `-` or `+`; an explicit indentation digit is not the fast
   * path's). Its extent follows the `yaml` library's lexer: content lines run while they are
   * blank or indented at least as deep as the first content line; then, unless the scalar keeps
   * its final line breaks (`+`), trailing lines of no more spaces than that are left out.
   */
  private block(start: number, position: number, result: string): Built {
    const text = this.text;
    const len = this.len;
    let i = start + 1;
    let keep = false;
    for (;; i++) {
      const c = text.charCodeAt(i);
      if (c === 0x2b) keep = true; // +
      else if (c >= 0x30 && c <= 0x39) throw NOT_MINE; // an explicit indentation indicator
      else if (c !== 0x2d) break; // -
    }
    const props: CST.SourceToken[] = [{ type: 'block-scalar-header', offset: start, indent: 0, source: text.slice(start, i) }];
    let j = i;
    while (text.charCodeAt(j) === SPACE) j++;
    if (j > i) props.push({ type: 'space', offset: i, indent: 0, source: text.slice(i, j) });
    if (text.charCodeAt(j) === HASH) {
      const eol = text.indexOf('\n', j);
      if (j === i || eol < 0) throw NOT_MINE;
      props.push({ type: 'comment', offset: j, indent: 0, source: text.slice(j, eol) });
      j = eol;
    }
    if (text.charCodeAt(j) !== NEWLINE) throw NOT_MINE;
    props.push({ type: 'newline', offset: j, indent: 0, source: '\n' });
    const bodyStart = j + 1;

    // The first content line: its indentation is the scalar's.
    let nl = j;
    let indent = 0;
    let p = bodyStart;
    for (; p < len; p++) {
      const c = text.charCodeAt(p);
      if (c === SPACE) indent++;
      else if (c === NEWLINE) {
        nl = p;
        indent = 0;
      } else break;
    }
    if (p >= len) throw NOT_MINE; // no content at all
    const contentIndent = indent;
    // Lines go on while blank or indented at least as deep.
    for (;;) {
      const lineStart = nl + 1;
      let q = lineStart;
      while (q < len && text.charCodeAt(q) === SPACE) q++;
      const blank = q < len && text.charCodeAt(q) === NEWLINE;
      if (!blank && q - lineStart < contentIndent) break;
      const next = q < len ? text.indexOf('\n', q) : -1;
      if (next < 0) {
        nl = len;
        break;
      }
      nl = next;
    }
    const stopLine = nl + 1;
    if (!keep) {
      for (;;) {
        const lastChar = nl - 1;
        let k = lastChar;
        while (k >= 0 && text.charCodeAt(k) === SPACE) k--;
        if (k >= bodyStart && text.charCodeAt(k) === NEWLINE && k + 1 + contentIndent > lastChar) nl = k;
        else break;
      }
    }
    const end = Math.min(nl + 1, len);
    // js-yaml must have ended the scalar on the same line (or both at the end of the text).
    const jsStopLine = position >= len ? len : this.lineStart(position);
    if (!(position >= len ? stopLine >= len : jsStopLine === stopLine)) throw NOT_MINE;
    const stopIndent = position >= len ? 0 : position - jsStopLine;
    const value = resolveScalarText({ type: 'block-scalar', offset: start, indent: 0, props, source: text.slice(bodyStart, end) });
    return { t: 'block', start, end, value, result, contentIndent, stopIndent };
  }

  // --- collections -----------------------------------------------------------------------------

  private blockList(start: number, position: number, kids: readonly Built[], result: unknown): Built {
    if (!Array.isArray(result) || kids.length !== result.length || kids.length === 0) throw NOT_MINE;
    const column = start - this.lineStart(start);
    const items: Node[] = [];
    let end = start;
    for (const k of kids) {
      if (k.t === 'none') throw NOT_MINE; // an empty item
      items.push(this.valueNode(k, column));
      end = this.endOf(k);
    }
    this.checkTrailingComments(end, position, false);
    return { t: 'block-collection', node: listNode(items, this.span(start, end)), end, result };
  }

  private blockMap(start: number, position: number, kids: readonly Built[], result: unknown): Built {
    // Each key is followed by its value (js-yaml reads a value, maybe empty, after every `key:`);
    // an odd one out at the end is js-yaml's attempt at a key where the map ended. The count of
    // js-yaml's own entries must agree: an explicit key (`?`) may stand without a value.
    const n = this.entryCount(result);
    if (n === 0 || !(kids.length === 2 * n || (kids.length === 2 * n + 1 && kids[2 * n]!.t === 'none'))) throw NOT_MINE;
    const text = this.text;
    const column = start - this.lineStart(start);
    const entries: MapEntry[] = [];
    const index = n > FEW_KEYS ? new Set<string>() : undefined;
    let end = start;
    let lastIsEmpty = false;
    for (let e = 0; e < n; e++) {
      const k = this.key(kids[2 * e]!, entries, index);
      const v = kids[2 * e + 1]!;
      // A key starts its line, or follows the `- ` of a list item it is the first key of.
      const before = this.previousNonSpace(k.start);
      if (!(before < 0 || text.charCodeAt(before) === NEWLINE || text.charCodeAt(before) === 0x2d)) throw NOT_MINE;
      let value: Node;
      if (v.t === 'none') {
        // An empty value sits after the `:` and the spaces that follow it on the line.
        let at = v.open;
        while (text.charCodeAt(at) === SPACE) at++;
        const c = text.charCodeAt(at);
        if (!(at >= this.len || c === NEWLINE || c === HASH)) throw NOT_MINE;
        value = scalar(null, this.span(at, at));
        end = at;
        lastIsEmpty = true;
      } else {
        value = this.valueNode(v, column);
        end = this.endOf(v);
        lastIsEmpty = false;
      }
      entries.push({ key: k.value, keySpan: this.span(k.start, k.end), value });
    }
    this.checkTrailingComments(end, position, lastIsEmpty);
    return { t: 'block-collection', node: mapNode(entries, this.span(start, end)), end, result };
  }

  private flowList(start: number, end: number, kids: readonly Built[], result: unknown): Built {
    if (!Array.isArray(result) || kids.length !== result.length) throw NOT_MINE;
    this.checkFlowEnd(start, end, 0x5d); // ]
    const items: Node[] = [];
    for (const k of kids) {
      if (k.t === 'none' || k.t === 'block' || k.t === 'block-collection') throw NOT_MINE;
      this.expectBefore(this.startOf(k), 0x5b, 0x2c); // [ ,
      items.push(this.valueNode(k, -1));
    }
    return { t: 'flow', node: listNode(items, this.span(start, end)), end, result };
  }

  private flowMap(start: number, end: number, kids: readonly Built[], result: unknown): Built {
    const n = this.entryCount(result);
    if (kids.length !== 2 * n) throw NOT_MINE;
    this.checkFlowEnd(start, end, 0x7d); // }
    const entries: MapEntry[] = [];
    const index = n > FEW_KEYS ? new Set<string>() : undefined;
    for (let e = 0; e < n; e++) {
      const k = this.key(kids[2 * e]!, entries, index);
      const v = kids[2 * e + 1]!;
      this.expectBefore(k.start, 0x7b, 0x2c); // { ,
      if (v.t === 'none' || v.t === 'block' || v.t === 'block-collection') throw NOT_MINE;
      this.expectBefore(this.startOf(v), 0x3a, 0x3a); // :
      entries.push({ key: k.value, keySpan: this.span(k.start, k.end), value: this.valueNode(v, -1) });
    }
    return { t: 'flow', node: mapNode(entries, this.span(start, end)), end, result };
  }

  /**
   * A map key: a plain or quoted scalar on one line, followed by its `:`, not yet in `entries`
   * (the map's entries so far; `index` holds their keys once there are many).
   */
  private key(k: Built, entries: readonly MapEntry[], index: Set<string> | undefined): ScalarBuilt {
    if (k.t !== 'plain' && k.t !== 'quoted') throw NOT_MINE;
    if (k.t === 'plain') {
      if (k.value === '<<') throw NOT_MINE; // a merge key
      resolvePlain(k.value, true); // a key keeps its text; resolving it only checks it resolves
    }
    let colon = k.end;
    while (this.text.charCodeAt(colon) === SPACE) colon++;
    if (this.text.charCodeAt(colon) !== 0x3a || colon - k.start > MAX_KEY_RUN) throw NOT_MINE;
    // A duplicate key: the library reader reports it.
    if (index !== undefined) {
      if (index.has(k.value)) throw NOT_MINE;
      index.add(k.value);
    } else for (const e of entries) if (e.key === k.value) throw NOT_MINE;
    return k;
  }

  /** The node a built value stands for inside a collection whose entries start at `column` (-1 in flow). */
  private valueNode(b: Built, column: number): Node {
    switch (b.t) {
      case 'plain':
        return scalar(resolvePlain(b.value, false), this.span(b.start, b.end));
      case 'quoted':
        return scalar(b.value, this.span(b.start, b.end));
      case 'block':
        // Content deeper than the collection, ended by a line no deeper than it.
        if (b.contentIndent <= column || b.stopIndent > column) throw NOT_MINE;
        return scalar(b.value, this.span(b.start, b.end));
      case 'flow':
      case 'block-collection':
        return b.node;
      case 'none':
        throw NOT_MINE;
    }
  }

  /**
   * Where a value's node ends for its collection's span (the library's `range[2]` of the value):
   * after a scalar or flow collection, the rest of its line (spaces, a comment, the line break);
   * a block scalar or block collection ends where its own span does.
   */
  private endOf(b: Built): number {
    switch (b.t) {
      case 'plain':
      case 'quoted':
      case 'flow':
        return this.restOfLine(b.end);
      case 'block':
      case 'block-collection':
        return b.end;
      case 'none':
        throw NOT_MINE;
    }
  }

  private startOf(b: Built): number {
    switch (b.t) {
      case 'plain':
      case 'quoted':
      case 'block':
        return b.start;
      case 'flow':
      case 'block-collection':
        return b.node.span.start;
      case 'none':
        return b.open;
    }
  }

  private restOfLine(at: number): number {
    const text = this.text;
    let p = at;
    while (text.charCodeAt(p) === SPACE) p++;
    if (text.charCodeAt(p) === HASH) {
      const eol = text.indexOf('\n', p);
      p = eol < 0 ? this.len : eol;
    }
    if (text.charCodeAt(p) === NEWLINE) p++;
    return p;
  }

  /**
   * Comment lines between a block collection's last value (ending at `from`) and the next line
   * (at `to`) may be counted into the span of the collection (or of its last value) by the
   * library. They are not when every one of them is indented no deeper than the next line (or
   * stands in column 1 at the end of the text): they then belong to a collection that goes on.
   * After an empty last value, any comment may be counted in.
   */
  private checkTrailingComments(from: number, to: number, lastIsEmpty: boolean): void {
    if (to < from) throw NOT_MINE; // js-yaml ended the collection before its last value ended
    const deepest = this.deepestComment(from, to);
    if (deepest < 0) return;
    if (lastIsEmpty || deepest > (to >= this.len ? 0 : to - this.lineStart(to))) throw NOT_MINE;
  }

  /**
   * The indentation of the most indented comment in `[from, to)` (white space and comments only),
   * or -1. Collections that end together share their gap: the last answer is kept.
   */
  private deepestComment(from: number, to: number): number {
    if (from === this.gapFrom && to === this.gapTo) return this.gapDeepest;
    const text = this.text;
    let deepest = -1;
    let lineStart = this.lineStart(from);
    for (let p = from; p < to; p++) {
      const c = text.charCodeAt(p);
      if (c === NEWLINE) lineStart = p + 1;
      else if (c === HASH) {
        deepest = Math.max(deepest, p - lineStart);
        const eol = text.indexOf('\n', p);
        if (eol < 0) break;
        p = eol - 1;
      }
    }
    this.gapFrom = from;
    this.gapTo = to;
    this.gapDeepest = deepest;
    return deepest;
  }

  /** A flow collection: on one line, closed by `close`, and not followed straight by a comment. */
  private checkFlowEnd(start: number, end: number, close: number): void {
    if (this.text.charCodeAt(end - 1) !== close || this.hasNewline(start, end) || this.text.charCodeAt(end) === HASH) throw NOT_MINE;
  }

  /** Requires the last non-space character before `at` to be `a` or `b`. */
  private expectBefore(at: number, a: number, b: number): void {
    const before = this.previousNonSpace(at);
    const c = before < 0 ? -1 : this.text.charCodeAt(before);
    if (c !== a && c !== b) throw NOT_MINE;
  }

  private entryCount(result: unknown): number {
    if (typeof result !== 'object' || result === null || Array.isArray(result)) throw NOT_MINE;
    return Object.keys(result).length;
  }

  // --- text ------------------------------------------------------------------------------------

  /** The first offset at or after `at` that is not a space, a line break or inside a comment. */
  private contentStart(at: number): number {
    const text = this.text;
    let p = at;
    for (;;) {
      const c = text.charCodeAt(p);
      if (c === SPACE || c === NEWLINE) p++;
      else if (c === HASH) {
        const eol = text.indexOf('\n', p);
        if (eol < 0) return this.len;
        p = eol;
      } else return p;
    }
  }

  private previousNonSpace(at: number): number {
    let p = at - 1;
    while (p >= 0 && this.text.charCodeAt(p) === SPACE) p--;
    return p;
  }

  private lineStart(at: number): number {
    return at <= 0 ? 0 : this.text.lastIndexOf('\n', at - 1) + 1;
  }

  /** Looks at `[start, end)` only: searching on to the line's end would make a long line of flow items quadratic. */
  private hasNewline(start: number, end: number): boolean {
    const text = this.text;
    for (let p = start; p < end; p++) if (text.charCodeAt(p) === NEWLINE) return true;
    return false;
  }

  /** A span of the source; offsets here are always within it (as `span` from source-file.ts would make them). */
  private span(start: number, end: number): Span {
    return { source: this.source, start, end };
  }
}

/** The library's reading of a scalar's text (unquoted, unescaped, unfolded); gives up on any complaint. */
function resolveScalarText(token: CST.FlowScalar | CST.BlockScalar): string {
  const resolved = CST.resolveAsScalar(token, true, () => {
    throw NOT_MINE;
  });
  if (resolved === null) throw NOT_MINE;
  return resolved.value;
}

/** A plain scalar's value under the library's core schema, found as its composer finds it. */
function resolvePlain(text: string, atKey: boolean): ScalarValue {
  // Most plain scalars are text: one test tells them apart from those some tag may claim.
  if (ANY_TAG_TEST !== undefined && !ANY_TAG_TEST.test(text)) return text;
  const tag =
    SCALAR_TAGS.find((t) => (t.default === true || (atKey && t.default === 'key')) && t.test?.test(text)) ?? STRING_TAG;
  if (tag === undefined) throw NOT_MINE;
  const resolved = tag.resolve(
    text,
    () => {
      throw NOT_MINE;
    },
    LIBRARY_DOC.options,
  );
  const value: unknown = isScalar(resolved) ? resolved.value : resolved;
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  throw NOT_MINE; // not finite: the library reader reports it
}
