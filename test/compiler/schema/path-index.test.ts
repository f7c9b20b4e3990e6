/**
 * pathIndex answers exactly as a map from every config path of a tree to its node, filled in tree
 * order (later nodes replacing earlier ones of the same path), would: on trees whose keys hold `.`,
 * `[`, `]`, digits or nothing, are written twice, or are many (the key-table search).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { childPath, coerce } from '../../../compiler/schema/coerce.ts';
import { pathIndex, type Located } from '../../../compiler/schema/path-index.ts';
import { sourceFile, span } from '../../../compiler/source/source-file.ts';
import { listNode, mapNode, scalar, type MapEntry, type Node } from '../../../compiler/source/tree.ts';

const source = sourceFile('config.yaml', 'x'.repeat(1000));
let offset = 0;
const sp = () => span(source, offset % 1000, (offset++ % 1000) + 1);

/** The map the index stands for: every path of the tree, set in pre-order. */
function referenceIndex(root: Node): Map<string, Located> {
  const index = new Map<string, Located>();
  const walk = (node: Node, path: string, keySpan: Located['keySpan']): void => {
    index.set(path, { node, keySpan });
    if (node.kind === 'map') for (const e of node.entries) walk(e.value, childPath(path, e.key), e.keySpan);
    else if (node.kind === 'list') node.items.forEach((n, i) => walk(n, childPath(path, i), undefined));
  };
  walk(root, '', undefined);
  return index;
}

const key = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('a', 'b', 'routes', 'from', '0', '1', '10') },
  { weight: 2, arbitrary: fc.constantFrom('', '.', 'a.b', 'a[0]', '[0]', 'a.', '.b', ']', '[', 'a[', 'routes[1].from', '[1]', 'b[01]') },
  { weight: 1, arbitrary: fc.stringMatching(/^[ab.[\]0-9]{0,5}$/) },
);

type Shape = { map: [string, Shape][] } | { list: Shape[] } | { leaf: null };
const small = fc.letrec<{ node: Shape }>((tie) => ({
  node: fc.oneof(
    { maxDepth: 4, withCrossShrink: true },
    fc.constant({ leaf: null }),
    fc.record({ map: fc.array(fc.tuple(key, tie('node')), { maxLength: 4 }) }),
    fc.record({ list: fc.array(tie('node'), { maxLength: 5 }) }),
  ),
})).node;
/** Small trees, or a large map of them (more keys than a map is scanned for). */
const shape: fc.Arbitrary<Shape> = fc.oneof(small, fc.record({ map: fc.array(fc.tuple(key, small), { minLength: 17, maxLength: 30 }) }));

/** The tree of a shape; with `plainKeys`, keys without `.` or `[` (so that some trees are distinct). */
function build(s: Shape, plainKeys = false): Node {
  if ('leaf' in s) return scalar('v', sp());
  if ('list' in s) return listNode(s.list.map((x) => build(x, plainKeys)), sp());
  return mapNode(s.map.map(([k, v]): MapEntry => ({ key: plainKeys ? k.replace(/[.[]/g, '_') : k, keySpan: sp(), value: build(v, plainKeys) })), sp());
}

/** Paths the tree has, and near misses of them: prefixes, extensions, other indexes. */
function probes(paths: readonly string[]): string[] {
  const out = new Set<string>(['', '.', '[', '[0]', 'a', 'a.b', 'routes[1].from', '[00]', '[0', 'a]']);
  for (const p of paths) {
    out.add(p);
    out.add(p.slice(0, -1));
    out.add(`${p}.a`);
    out.add(`${p}[0]`);
    out.add(`${p}[99]`);
    out.add(p.replace(/\[(\d+)\]/, '[0$1]'));
  }
  return [...out];
}

describe('pathIndex', () => {
  it('answers as the map of every path, filled in tree order, would', () => {
    fc.assert(
      fc.property(shape, (s) => {
        const root = build({ map: 'map' in s ? s.map : [['a', s]] });
        const reference = referenceIndex(root);
        const index = pathIndex(root, false);
        for (const p of probes([...reference.keys()])) {
          const want = reference.get(p);
          const got = index.get(p);
          expect(got?.node, p).toBe(want?.node);
          expect(got?.keySpan, p).toBe(want?.keySpan);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('finds a route field among 10,000 routes, and the last of two nodes sharing a path', () => {
    const routes = Array.from({ length: 10_000 }, () => mapNode([{ key: 'from', keySpan: sp(), value: scalar('https://a', sp()) }], sp()));
    const shared = scalar('literal key', sp());
    const root = mapNode([{ key: 'routes', keySpan: sp(), value: listNode(routes, sp()) }, { key: 'routes[9999].from', keySpan: sp(), value: shared }], sp());
    const index = pathIndex(root, false);
    expect(index.get('routes[1234].from')?.node).toBe(routes[1234]!.entries[0]!.value);
    expect(index.get('routes[9999].from')?.node).toBe(shared);
    expect(index.get('routes[10000]')).toBeUndefined();
    expect(index.get('routes[01]')).toBeUndefined();
  });

  it('is distinct, as coerce finds it, only when no two nodes of the tree share a path', () => {
    let distinctSeen = 0;
    fc.assert(
      fc.property(shape, fc.boolean(), (s, plainKeys) => {
        const root = build({ map: 'map' in s ? s.map : [['a', s]] }, plainKeys);
        const nodes = countNodes(root);
        const { index } = coerce(root, {});
        if (index.distinct) distinctSeen++;
        if (index.distinct) expect(referenceIndex(root).size).toBe(nodes);
      }),
      { numRuns: 300 },
    );
    expect(distinctSeen).toBeGreaterThan(20);
  });
});

function countNodes(node: Node): number {
  if (node.kind === 'map') return 1 + node.entries.reduce((n, e) => n + countNodes(e.value), 0);
  if (node.kind === 'list') return 1 + node.items.reduce((n, item) => n + countNodes(item), 0);
  return 1;
}
