import type { Node } from '../source/tree.ts';
import { pathIndex, type PathIndex } from './path-index.ts';

type Schema = Record<string, unknown>;

/** Plain data of the merged tree plus, for every config path, the node it came from. */
export interface Coerced {
  readonly data: Record<string, unknown>;
  readonly index: PathIndex;
}

/** Joins a config path: `routes[0].from`. */
export function childPath(parent: string, key: string | number): string {
  if (typeof key === 'number') return `${parent}[${key}]`;
  return parent === '' ? key : `${parent}.${key}`;
}

function resolve(schema: Schema | undefined, root: Schema): Schema | undefined {
  let s = schema;
  for (let i = 0; s && typeof s['$ref'] === 'string' && i < 8; i++) {
    const parts = (s['$ref'] as string).replace(/^#\//, '').split('/');
    let cur: unknown = root;
    for (const p of parts) cur = (cur as Record<string, unknown> | undefined)?.[p];
    s = cur as Schema | undefined;
  }
  return s;
}

/** The JSON types a schema accepts: its `type`, or those of its `anyOf` shapes. */
function types(schema: Schema | undefined, root: Schema): string[] {
  const t = schema?.['type'];
  if (typeof t === 'string') return [t];
  const shapes = schema?.['anyOf'];
  return Array.isArray(shapes) ? (shapes as Schema[]).flatMap((x) => types(resolve(x, root), root)) : [];
}

/**
 * Converts the merged tree to plain data. Untyped scalars (env, `.properties`) are coerced to the
 * type the schema expects where that type cannot be a string: `"true"` to a boolean, `"42"` to a
 * number. Anything else is left as is, for the schema check to report. A string at one of
 * `commaLists` (config paths), typed or not, is read as a comma-separated list, unless it is
 * untyped JSON text (`[...]`, `{...}`), which is parsed as for any list or map.
 */
export function coerce(root: Node, schema: Schema, commaLists: ReadonlySet<string> = new Set()): Coerced {
  // `$ref`s resolved once each (a route field's schema is asked for once per route).
  const resolved = new Map<Schema, Schema | undefined>();
  const resolveRef = (s: Schema | undefined): Schema | undefined => {
    if (!s || typeof s['$ref'] !== 'string') return s;
    let r = resolved.get(s);
    if (r === undefined && !resolved.has(s)) resolved.set(s, (r = resolve(s, schema)));
    return r;
  };
  // A node's path is kept only on the way to a comma list (no other node needs it): the path of
  // every node under a node starts with that node's path.
  const onTheWay = (path: string): string | undefined => {
    for (const c of commaLists) if (c.startsWith(path)) return path;
    return undefined;
  };
  // Whether no two nodes can share a path (PathIndex.distinct): every key is checked on the way.
  let distinct = true;
  const walk = (node: Node, s: Schema | undefined, path: string | undefined): unknown => {
    const sch = resolveRef(s);
    switch (node.kind) {
      case 'map': {
        const out: Record<string, unknown> = {};
        const props = (sch?.['properties'] ?? {}) as Record<string, Schema>;
        const addl = sch?.['additionalProperties'];
        for (const e of node.entries) {
          const k = e.key;
          if (distinct && (k === '' || k === '__proto__' || k.includes('.') || k.includes('[') || Object.hasOwn(out, k))) distinct = false;
          const child = props[e.key] ?? (typeof addl === 'object' ? (addl as Schema) : undefined);
          out[e.key] = walk(e.value, child, path === undefined ? undefined : onTheWay(childPath(path, e.key)));
        }
        return out;
      }
      case 'list': {
        const items = sch?.['items'] as Schema | undefined;
        return node.items.map((n, i) => walk(n, items, path === undefined ? undefined : onTheWay(childPath(path, i))));
      }
      case 'scalar': {
        const v = node.value;
        if (typeof v === 'string' && path !== undefined && commaLists.has(path)) return commaListValue(v, node.untyped);
        if (!node.untyped || typeof v !== 'string') return v;
        const t = types(sch, schema);
        if (t.includes('string') || t.length === 0) return v;
        const trimmed = v.trim();
        if (t.includes('boolean') && /^(true|false)$/i.test(trimmed)) return trimmed.toLowerCase() === 'true';
        if ((t.includes('integer') || t.includes('number')) && /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(trimmed)) return Number(trimmed);
        if ((t.includes('array') || t.includes('object')) && /^[[{]/.test(trimmed)) {
          try {
            return JSON.parse(trimmed) as unknown;
          } catch {
            return v;
          }
        }
        if (t.includes('array')) return commaItems(trimmed);
        return v;
      }
    }
  };
  const data = walk(root, schema, '');
  return { data: (data && typeof data === 'object' && !Array.isArray(data) ? data : {}) as Record<string, unknown>, index: pathIndex(root, distinct) };
}

/** The value of a comma-list setting written as a string: untyped JSON text parsed, else its items. */
function commaListValue(v: string, untyped: boolean): unknown {
  const trimmed = v.trim();
  if (untyped && /^[[{]/.test(trimmed)) {
    try {
      return JSON.parse(trimmed) as unknown;
    } catch {
      return v;
    }
  }
  return commaItems(trimmed);
}

/** `a, b,,c` → `['a', 'b', 'c']`: comma-separated items, trimmed, empty items dropped. */
function commaItems(text: string): string[] {
  return text.split(',').map((x) => x.trim()).filter((x) => x !== '');
}
