/**
 * Test helper: YAML text → the format-neutral config tree (compiler/source/tree.ts) with spans, so
 * policy tests can feed `lowerPolicyNode` real located nodes without depending on the sources stage.
 */
import { isMap, isScalar, isSeq, parseDocument, type Node as YNode } from 'yaml';
import { sourceFile, span, type SourceFile } from '../../../compiler/source/source-file.ts';
import { listNode, mapNode, scalar, type MapEntry, type Node } from '../../../compiler/source/tree.ts';

/** Parses `text` as the file `name` and returns the tree of its root value. */
export function yamlTree(text: string, name = 'config.yaml'): { node: Node; source: SourceFile } {
  const source = sourceFile(name, text);
  const doc = parseDocument(text);
  if (doc.errors.length > 0) throw new Error(`bad test YAML: ${doc.errors[0]!.message}`);
  return { node: convert(doc.contents as YNode, source), source };
}

function convert(n: YNode | null, source: SourceFile): Node {
  const [start, end] = n?.range ?? [0, 0];
  const sp = span(source, start, end);
  if (n === null) return scalar(null, sp);
  if (isMap(n)) {
    const entries: MapEntry[] = n.items.map((p) => {
      const k = p.key as YNode;
      const kr = k.range ?? [0, 0];
      return { key: String(isScalar(k) ? k.value : k), keySpan: span(source, kr[0], kr[1]), value: convert(p.value as YNode | null, source) };
    });
    return mapNode(entries, sp);
  }
  if (isSeq(n)) return listNode(n.items.map((i) => convert(i as YNode, source)), sp);
  if (isScalar(n)) {
    const v = n.value;
    return scalar(typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? v : null, sp);
  }
  throw new Error('unsupported YAML node');
}

/** The tree of `text` as one untyped string scalar spanning a whole env var (how env values arrive). */
export function envScalar(name: string, text: string): Node {
  const source = sourceFile(`env:${name}`, text, true);
  return scalar(text, span(source, 0, text.length), true);
}

/** The node at `steps` (map keys and list indexes) below `node`; throws when absent (a test bug). */
export function nodeAt(node: Node, ...steps: (string | number)[]): Node {
  let n = node;
  for (const s of steps) {
    const next = typeof s === 'number' ? (n.kind === 'list' ? n.items[s] : undefined) : n.kind === 'map' ? n.entries.find((e) => e.key === s)?.value : undefined;
    if (!next) throw new Error(`no node at ${steps.join('.')}`);
    n = next;
  }
  return n;
}
