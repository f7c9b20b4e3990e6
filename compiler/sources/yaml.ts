/**
 * The YAML adapter: YAML text to the format-neutral tree, with a span for every key and value.
 *
 * Contract:
 * - YAML 1.2 core schema: `on`, `yes`, `off` stay strings; `true`/`false`, numbers and `null` are typed.
 * - Every syntax error the `yaml` library finds is reported, located (`yaml-syntax`).
 * - A key given twice in one map is `duplicate-key`, located at the second key.
 * - Non-string keys become their text as written (`1.10: x` has the key `1.10`); list or map keys
 *   are rejected (`yaml-complex-key`).
 * - Tags outside the core schema (`!!binary`, `!!timestamp`, `!custom`) are rejected
 *   (`yaml-tag-unsupported`).
 * - Anchors and aliases are resolved: an alias reads as a copy of its anchored node. The copy's
 *   outer span is the alias (where it is used); spans inside it are the anchored text (where the
 *   values are written). Cycles and "billion laughs" expansions are rejected. Merge keys
 *   (`<<: *base`, `<<: [*a, *b]`) are resolved as in YAML 1.1: keys written in the map win, then
 *   earlier merge sources.
 * - An empty document (or one holding only comments) is an empty map.
 * - A tree is returned only when the text was read without errors; otherwise `undefined`.
 *
 * How it is read: first by the fast path (yaml-fast.ts, js-yaml underneath), which reads the
 * common shape of a config several times faster and returns a tree only where it is the very tree
 * this file's reader would return, with the same spans and no diagnostic; for any other text it
 * declines, and the reader below (the `yaml` library's document, walked) reads it. Every
 * diagnostic therefore comes from the reader below, which is also callable on its own
 * (`parseYamlWithLibrary`).
 */
import { isAlias, isMap, isScalar, isSeq, parseDocument, type Document } from 'yaml';
import {
  NestingTooDeep,
  NumberNotRepresentable,
  YamlAliasCycle,
  YamlAliasExpansionLimit,
  YamlComplexKey,
  YamlMergeInvalid,
  YamlSyntax,
  YamlTagUnsupported,
  YamlWarning,
} from '../diagnostics/codes/sources.ts';
import type { Reporter } from '../diagnostics/diagnostic.ts';
import { span, wholeSpan, type SourceFile, type Span } from '../source/source-file.ts';
import { listNode, mapNode, scalar, type MapEntry, type Node } from '../source/tree.ts';
import { deepLineOffset, EntryList, MAX_DEPTH, tidyMessage } from './entries.ts';
import { LIBRARY_OPTIONS, readYamlFast } from './yaml-fast.ts';

/** Tags of the YAML 1.2 core schema, plus `!` (the non-specific tag, which means "string"). */
const CORE_TAGS: ReadonlySet<string> = new Set(
  ['str', 'int', 'float', 'bool', 'null', 'map', 'seq'].map((t) => `tag:yaml.org,2002:${t}`).concat('!'),
);

/** How many values alias resolution may produce in one document. */
export const MAX_ALIAS_EXPANSION = 10_000;

/** Parses YAML text into a tree; reports problems to `r` and returns `undefined` after any error. */
export function parseYaml(source: SourceFile, r: Reporter): Node | undefined {
  return readYamlFast(source) ?? parseYamlWithLibrary(source, r);
}

/** The reader behind the fast path, and the one every diagnostic comes from: the `yaml` library's document, walked. */
export function parseYamlWithLibrary(source: SourceFile, r: Reporter): Node | undefined {
  const deep = deepLineOffset(source.text);
  if (deep !== undefined) {
    r.report(NestingTooDeep, span(source, deep, deep + 1), { limit: MAX_DEPTH });
    return undefined;
  }
  const doc = parseDocument(source.text, LIBRARY_OPTIONS);
  const errorsBefore = r.errorCount;
  for (const e of doc.errors) {
    const sp = span(source, e.pos[0], e.pos[1]);
    if (/call stack/i.test(e.message)) r.report(NestingTooDeep, sp, { limit: MAX_DEPTH });
    else r.report(YamlSyntax, sp, { problem: tidyMessage(e.message) });
  }
  if (doc.errors.length > 0) return undefined;
  // Tags the library cannot resolve (`!custom`, `!!map` on a list) are errors, located at the tag.
  const reportedTags = new Set<number>();
  for (const w of doc.warnings) {
    const sp = span(source, w.pos[0], w.pos[1]);
    if (w.code === 'TAG_RESOLVE_FAILED') {
      reportedTags.add(sp.start);
      r.report(YamlTagUnsupported, sp, { tag: source.text.slice(sp.start, sp.end) });
    } else r.report(YamlWarning, sp, { problem: tidyMessage(w.message) });
  }
  const reader = new YamlReader(source, doc, r, reportedTags);
  const root = doc.contents === null ? mapNode([], wholeSpan(source)) : reader.node(doc.contents, 0, wholeSpan(source));
  return r.errorCount > errorsBefore ? undefined : root;
}

/** The parts of a `yaml` node the reader uses (the library's node classes share them). */
interface YamlNodeLike {
  readonly range?: readonly [number, number, number] | null;
  readonly tag?: string | undefined;
}

/** Walks the library's document into our tree. Reports problems; `undefined` marks a dropped value. */
class YamlReader {
  /** Alias targets being resolved, to detect an alias inside its own anchor. */
  private readonly resolving = new Set<unknown>();
  private expanded = 0;
  private reportedDepth = false;
  private reportedExpansion = false;

  constructor(
    private readonly source: SourceFile,
    private readonly doc: Document,
    private readonly r: Reporter,
    /** Offsets of tags already reported from the library's warnings. */
    private readonly reportedTags: ReadonlySet<number>,
  ) {}

  private spanOf(n: unknown, fallback: Span): Span {
    const range = (n as YamlNodeLike | null)?.range;
    return range ? span(this.source, range[0], range[1]) : fallback;
  }

  node(n: unknown, depth: number, fallback: Span): Node | undefined {
    const sp = this.spanOf(n, fallback);
    if (depth > MAX_DEPTH) {
      if (!this.reportedDepth) this.r.report(NestingTooDeep, sp, { limit: MAX_DEPTH });
      this.reportedDepth = true;
      return undefined;
    }
    if (this.resolving.size > 0 && ++this.expanded > MAX_ALIAS_EXPANSION) {
      if (!this.reportedExpansion) this.r.report(YamlAliasExpansionLimit, sp, { limit: MAX_ALIAS_EXPANSION });
      this.reportedExpansion = true;
      return undefined;
    }
    if (n === null || n === undefined) return scalar(null, fallback);
    if (isAlias(n)) {
      const target = n.resolve(this.doc);
      if (target === undefined) {
        this.r.report(YamlSyntax, sp, { problem: `alias \`*${n.source}\` refers to no anchor` });
        return undefined;
      }
      if (this.resolving.has(target)) {
        this.r.report(YamlAliasCycle, sp, { alias: n.source });
        return undefined;
      }
      this.resolving.add(target);
      const value = this.node(target, depth, sp);
      this.resolving.delete(target);
      return value === undefined ? undefined : { ...value, span: sp };
    }
    const tag = (n as YamlNodeLike).tag;
    if (tag !== undefined && !CORE_TAGS.has(tag)) {
      const tagStart = propertyStart(this.source.text, sp.start, '!') ?? sp.start;
      const written = /^![^\s]*/.exec(this.source.text.slice(tagStart, sp.start))?.[0] ?? tag;
      if (!this.reportedTags.has(tagStart)) this.r.report(YamlTagUnsupported, { ...sp, start: tagStart }, { tag: written });
      return undefined;
    }
    if (isScalar(n)) {
      const v: unknown = n.value;
      if (typeof v === 'number' && !Number.isFinite(v)) {
        this.r.report(NumberNotRepresentable, sp, { text: n.source ?? String(v) });
        return undefined;
      }
      if (v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return scalar(v, sp);
      this.r.report(YamlTagUnsupported, sp, { tag: tag ?? typeof v });
      return undefined;
    }
    if (isSeq(n)) {
      const items: Node[] = [];
      for (const item of n.items) {
        const v = this.node(item, depth + 1, sp);
        if (v !== undefined) items.push(v);
      }
      return listNode(items, sp);
    }
    if (isMap(n)) return this.map(n.items, depth, sp);
    this.r.report(YamlSyntax, sp, { problem: 'unexpected value' });
    return undefined;
  }

  private map(pairs: readonly { key: unknown; value: unknown }[], depth: number, sp: Span): Node | undefined {
    const entries = new EntryList(this.r);
    // Keys written in the map win over merged ones, wherever the merge key stands.
    const written = new Set<string>();
    for (const p of pairs) {
      if (!isMergeKey(p.key)) {
        const k = this.key(p.key, sp, false);
        if (k !== undefined) written.add(k.key);
      }
    }
    for (const p of pairs) {
      if (isMergeKey(p.key)) {
        for (const e of this.mergeSources(p.value, depth, this.spanOf(p.key, sp))) {
          if (!written.has(e.key) && !entries.has(e.key)) entries.add(e.key, e.keySpan, e.value);
        }
        continue;
      }
      const k = this.key(p.key, sp, true);
      if (k === undefined) continue;
      const v = this.node(p.value, depth + 1, { ...k.span, start: k.span.end });
      if (v !== undefined) entries.add(k.key, k.span, v);
    }
    return mapNode(entries.entries, sp);
  }

  /** The entries a merge key brings in: its value must be a map or a list of maps (usually aliases). */
  private mergeSources(value: unknown, depth: number, keySpan: Span): MapEntry[] {
    const sources = isSeq(value) ? value.items : [value];
    const out: MapEntry[] = [];
    for (const s of sources) {
      const n = this.node(s, depth + 1, keySpan);
      if (n === undefined) continue;
      if (n.kind !== 'map') {
        this.r.report(YamlMergeInvalid, n.span, {});
        continue;
      }
      out.push(...n.entries);
    }
    return out;
  }

  /** A map key as a string: scalars as written; a missing key is `""`; lists and maps are refused. */
  private key(k: unknown, fallback: Span, report: boolean): { key: string; span: Span } | undefined {
    const sp = this.spanOf(k, fallback);
    const target = isAlias(k) ? k.resolve(this.doc) : k;
    if (target === null || target === undefined) return { key: '', span: { ...fallback, end: fallback.start } };
    if (isScalar(target)) {
      const v: unknown = target.value;
      return { key: typeof v === 'string' ? v : (target.source ?? String(v)), span: sp };
    }
    if (report) this.r.report(YamlComplexKey, sp, {});
    return undefined;
  }
}

/**
 * Where the node property (tag `!…` or anchor `&…`) starting with `mark` is written before a node
 * at `start`: the library's node ranges begin after the properties. Looks back over at most two
 * white-space-separated tokens (a tag and an anchor, in either order).
 */
function propertyStart(text: string, start: number, mark: '!' | '&'): number | undefined {
  let i = start;
  for (let token = 0; token < 2; token++) {
    while (i > 0 && /\s/.test(text[i - 1]!)) i--;
    const end = i;
    while (i > 0 && !/[\s[\]{},]/.test(text[i - 1]!)) i--;
    if (i === end) return undefined;
    if (text[i] === mark) return i;
    if (text[i] !== '!' && text[i] !== '&') return undefined;
  }
  return undefined;
}

/** A plain (unquoted) `<<` key: YAML's merge key. A quoted `"<<"` is an ordinary key. */
function isMergeKey(k: unknown): boolean {
  return isScalar(k) && k.value === '<<' && k.type === 'PLAIN';
}
