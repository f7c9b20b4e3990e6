/**
 * Helpers for the source-adapter tests: run an adapter, show diagnostics as
 * `CODE line:col \`underlined text\``, find nodes by config path, compare trees by value.
 */
import { Reporter } from '../../../compiler/diagnostics/diagnostic.ts';
import { lineCol, sourceFile, type SourceFile, type Span } from '../../../compiler/source/source-file.ts';
import type { Node } from '../../../compiler/source/tree.ts';

export type Adapter<T> = (source: SourceFile, r: Reporter) => T;

export interface Run<T> {
  readonly node: T;
  readonly source: SourceFile;
  readonly r: Reporter;
  /** Every diagnostic as `CODE line:col \`text under the span\``. */
  readonly diags: string[];
}

/** Runs an adapter on `text` as the file `name`. */
export function run<T>(adapter: Adapter<T>, text: string, name = 'config'): Run<T> {
  const source = sourceFile(name, text);
  const r = new Reporter();
  const node = adapter(source, r);
  return { node, source, r, diags: r.diagnostics.map(show) };
}

/** A diagnostic as `CODE line:col \`text\`` (env sources: `CODE env:NAME`). */
export function show(d: { code: string; span: Span | undefined }): string {
  if (d.span === undefined) return d.code;
  if (d.span.source.isEnv) return `${d.code} ${d.span.source.name}`;
  return `${d.code} ${at(d.span)} \`${text(d.span)}\``;
}

/** `line:col` of a span's start. */
export function at(sp: Span): string {
  const { line, column } = lineCol(sp.source, sp.start);
  return `${line}:${column}`;
}

/** The source text a span covers. */
export function text(sp: Span): string {
  return sp.source.text.slice(sp.start, sp.end);
}

/** A located view of a node: `line:col` and text of its value span (and key span, if any). */
export function loc(root: Node | undefined, path: string): { key: string | undefined; value: string; keyText: string | undefined; valueText: string } {
  const { node, keySpan } = find(root, path);
  return {
    key: keySpan && at(keySpan),
    keyText: keySpan && text(keySpan),
    value: at(node.span),
    valueText: text(node.span),
  };
}

/** The node at a config path (`routes[0].to[1]`), with the key span of its entry. */
export function find(root: Node | undefined, path: string): { node: Node; keySpan: Span | undefined } {
  if (root === undefined) throw new Error('no tree');
  let node: Node = root;
  let keySpan: Span | undefined;
  for (const m of path.matchAll(/([^.[\]]+)|\[(\d+)\]/g)) {
    if (m[2] !== undefined) {
      if (node.kind !== 'list') throw new Error(`not a list at ${m[0]} in ${path}`);
      const item: Node | undefined = node.items[Number(m[2])];
      if (item === undefined) throw new Error(`no item ${m[0]} in ${path}`);
      node = item;
      keySpan = undefined;
    } else {
      if (node.kind !== 'map') throw new Error(`not a map at ${m[0]} in ${path}`);
      const e = node.entries.find((x) => x.key === m[1]);
      if (e === undefined) throw new Error(`no key ${m[1]} in ${path}`);
      node = e.value;
      keySpan = e.keySpan;
    }
  }
  return { node, keySpan };
}

/**
 * Plain data of a tree with every scalar as a string (`true` → `"true"`, `30` → `"30"`), so trees
 * from typed formats (YAML, JSON, TOML) and untyped ones (`.properties`, env) compare by value.
 */
export function asStrings(node: Node): unknown {
  switch (node.kind) {
    case 'scalar':
      return String(node.value);
    case 'list':
      return node.items.map(asStrings);
    case 'map':
      return Object.fromEntries(node.entries.map((e) => [e.key, asStrings(e.value)]));
  }
}

/** Every node of a tree, depth first. */
export function* walk(node: Node): Generator<Node> {
  yield node;
  if (node.kind === 'list') for (const i of node.items) yield* walk(i);
  if (node.kind === 'map') for (const e of node.entries) yield* walk(e.value);
}
