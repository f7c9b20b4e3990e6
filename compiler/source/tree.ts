import type { Span } from './source-file.ts';

/**
 * The format-neutral configuration tree. Every format adapter (YAML, JSON, TOML, properties, env)
 * produces this shape, so later stages never know which format a value came from. Every node keeps
 * the span it was read from; spans never reach the plan body.
 */
export type Node = MapNode | ListNode | ScalarNode;

export interface MapEntry {
  readonly key: string;
  readonly keySpan: Span;
  readonly value: Node;
}

export interface MapNode {
  readonly kind: 'map';
  readonly span: Span;
  readonly entries: readonly MapEntry[];
}

export interface ListNode {
  readonly kind: 'list';
  readonly span: Span;
  readonly items: readonly Node[];
}

export type ScalarValue = string | number | boolean | null;

export interface ScalarNode {
  readonly kind: 'scalar';
  readonly span: Span;
  readonly value: ScalarValue;
  /**
   * True when the value came from untyped text (env vars, `.properties`): `"true"` may then stand
   * for a boolean and `"42"` for a number, and the schema stage coerces it by the expected type.
   */
  readonly untyped: boolean;
}

export function scalar(value: ScalarValue, sp: Span, untyped = false): ScalarNode {
  return { kind: 'scalar', span: sp, value, untyped };
}

export function mapNode(entries: MapEntry[], sp: Span): MapNode {
  return { kind: 'map', span: sp, entries };
}

export function listNode(items: Node[], sp: Span): ListNode {
  return { kind: 'list', span: sp, items };
}

/** The entry of `key` in a map node (the last one if a format allowed duplicates). */
export function getEntry(node: MapNode, key: string): MapEntry | undefined {
  for (let i = node.entries.length - 1; i >= 0; i--) {
    const e = node.entries[i]!;
    if (e.key === key) return e;
  }
  return undefined;
}

/** Plain JSON data of a tree (no coercion). */
export function toPlain(node: Node): unknown {
  switch (node.kind) {
    case 'scalar':
      return node.value;
    case 'list':
      return node.items.map(toPlain);
    case 'map': {
      const out: Record<string, unknown> = {};
      for (const e of node.entries) {
        // `__proto__` is data here, as JSON.parse keeps it; an assignment would set the prototype
        // instead (the compile refuses such keys anyway: SVC1006 reserved-key).
        if (e.key === '__proto__') Object.defineProperty(out, e.key, { value: toPlain(e.value), enumerable: true, writable: true, configurable: true });
        else out[e.key] = toPlain(e.value);
      }
      return out;
    }
  }
}
