import type { Span } from '../source/source-file.ts';
import type { MapEntry, MapNode, Node } from '../source/tree.ts';

/** Where a config path's value and key were read from. */
export interface Located {
  readonly node: Node;
  readonly keySpan: Span | undefined;
}

/** Finds where a config path (`routes[0].from`, as `childPath` joins them) was read from. */
export interface PathIndex {
  get(path: string): Located | undefined;
  /**
   * True when no two nodes of the tree can share a path: no map key is empty, `__proto__`, holds
   * `.` or `[`, or is written twice in its map. Then the node of a map's path joined with one of
   * its keys is that entry's value, and a caller holding the map may read its entries directly.
   */
  readonly distinct: boolean;
}

/** Maps with more entries than this are searched through a key table, not entry by entry. */
const SCAN_LIMIT = 16;

const DOT = 46; // '.'
const OPEN = 91; // '['
const CLOSE = 93; // ']'

/**
 * The index of a tree's config paths. It answers as a map from every path of the tree to its node
 * would, where a later node in tree order (pre-order, entries and items in order) replaces an
 * earlier one of the same path (a key holding `.` or `[`, or written twice, can make two nodes
 * share one), but it walks the tree down the path asked for instead of holding such a map: a
 * compile asks for a small share of the paths (a 10,000-route config has ~90,000).
 */
export function pathIndex(root: Node, distinct: boolean): PathIndex {
  const search = new Search(root);
  return { get: (path) => search.find(path), distinct };
}

/** One search at a time (`find` is not reentrant): the path asked for and the last node found with it. */
class Search {
  private readonly keyTables = new WeakMap<MapNode, Map<string, number[]>>();
  private path = '';
  private found: Located | undefined;

  constructor(private readonly root: Node) {}

  find(path: string): Located | undefined {
    this.path = path;
    this.found = undefined;
    this.visit(this.root, undefined, 0);
    const found = this.found;
    this.found = undefined;
    return found;
  }

  /** Visits `node`, whose own path is `path.slice(0, end)`, and the nodes under it that may have `path`. */
  private visit(node: Node, keySpan: Span | undefined, end: number): void {
    const path = this.path;
    if (end === path.length) this.found = { node, keySpan };
    if (node.kind === 'list') {
      // `[i]` follows the parent's path, the empty one too.
      const item = listItem(path, end, node.items.length);
      if (item !== undefined) this.visit(node.items[item.index]!, undefined, item.end);
    } else if (node.kind === 'map') {
      // `.key` follows the parent's path, except the empty path, which a key follows with no `.`.
      if (end !== 0 && path.charCodeAt(end) !== DOT) return;
      const start = end === 0 ? 0 : end + 1;
      if (node.entries.length <= SCAN_LIMIT) {
        const first = path.charCodeAt(start);
        for (const e of node.entries) {
          // The first code unit rules most keys out before startsWith is asked.
          if (e.key.length === 0 || (e.key.charCodeAt(0) === first && path.startsWith(e.key, start))) this.visitEntry(e, start + e.key.length);
        }
      } else {
        for (const [i, keyEnd] of entriesByKey(this.keyTable(node), path, start)) this.visitEntry(node.entries[i]!, keyEnd);
      }
    }
  }

  /**
   * A map entry whose key is `path` from its start up to `keyEnd`: its value has `path` when that is
   * all of it, and can hold a node that has it when `path` goes on with `.` or `[` (or when the
   * value's path is the empty one).
   */
  private visitEntry(e: MapEntry, keyEnd: number): void {
    const path = this.path;
    if (keyEnd === path.length || keyEnd === 0 || path.charCodeAt(keyEnd) === DOT || path.charCodeAt(keyEnd) === OPEN) this.visit(e.value, e.keySpan, keyEnd);
  }

  /** A large map's entry positions by key, made on first use. */
  private keyTable(node: MapNode): Map<string, number[]> {
    let table = this.keyTables.get(node);
    if (table === undefined) {
      table = new Map();
      for (let i = 0; i < node.entries.length; i++) {
        const key = node.entries[i]!.key;
        const at = table.get(key);
        if (at === undefined) table.set(key, [i]);
        else at.push(i);
      }
      this.keyTables.set(node, table);
    }
    return table;
  }
}

/** The item `[i]` that `path` names at `end`, and where its path ends; `i` written as `childPath` writes it. */
function listItem(path: string, end: number, length: number): { index: number; end: number } | undefined {
  if (path.charCodeAt(end) !== OPEN) return undefined;
  // Decimal digits, no leading zero but in `0` itself, then `]`.
  let index = 0;
  let i = end + 1;
  for (; i < path.length; i++) {
    const c = path.charCodeAt(i);
    if (c < 48 || c > 57) break;
    if (i > end + 1 && index === 0) return undefined;
    index = index * 10 + (c - 48);
    if (index >= length) return undefined;
  }
  if (i === end + 1 || path.charCodeAt(i) !== CLOSE) return undefined;
  return { index, end: i + 1 };
}

/**
 * The entries of a large map, by position and in order, whose key is `path` from `start` up to the
 * end of `path` or up to a `.` or `[` (only those can be on the way to `path`), each with where its
 * key ends.
 */
function entriesByKey(table: ReadonlyMap<string, readonly number[]>, path: string, start: number): [number, number][] {
  const out: [number, number][] = [];
  for (let keyEnd = start; keyEnd <= path.length; keyEnd++) {
    if (keyEnd !== start && keyEnd < path.length && path.charCodeAt(keyEnd) !== DOT && path.charCodeAt(keyEnd) !== OPEN) continue;
    const at = table.get(path.slice(start, keyEnd));
    if (at !== undefined) for (const i of at) out.push([i, keyEnd]);
  }
  return out.sort((a, b) => a[0] - b[0]);
}
