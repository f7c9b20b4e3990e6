import * as D from '../diagnostics/codes/schema.ts';
import type { Reporter } from '../diagnostics/diagnostic.ts';
import { REMOVED_KEYS, REMOVED_ROUTE_FIELDS, SETTINGS_BY_KEY } from '../settings/table.ts';
import type { Span } from '../source/source-file.ts';
import { listNode, mapNode, type MapNode, type Node } from '../source/tree.ts';

/** The environment variable a key was read from (`HEADERS`), or undefined for a file's key. */
function envVariableOf(keySpan: Span | undefined): string | undefined {
  const name = keySpan?.source.name;
  return name?.startsWith('env:') ? name.slice('env:'.length) : undefined;
}

/** The replacement named for a removed key; undefined for any other key, `constructor` and `toString` included. */
function removedReplacement(table: Readonly<Record<string, string>>, key: string): string | undefined {
  return Object.hasOwn(table, key) ? table[key] : undefined;
}

function dropFromRoutes(node: Node, r: Reporter, top: string): Node {
  if (node.kind !== 'list') return node;
  return listNode(
    node.items.map((item, i) => {
      if (item.kind !== 'map') return item;
      // A route without removed fields (the common case) is kept as it is, not copied.
      if (!item.entries.some((e) => removedReplacement(REMOVED_ROUTE_FIELDS, e.key) !== undefined)) return item;
      const kept = item.entries.filter((e) => {
        const replacement = removedReplacement(REMOVED_ROUTE_FIELDS, e.key);
        if (replacement === undefined) return true;
        r.report(D.RemovedKey, e.keySpan, { key: e.key, replacement }, `${top}[${i}].${e.key}`);
        return false;
      });
      return mapNode(kept, item.span);
    }),
    node.span,
  );
}

/**
 * Reports keys removed in the release notes (naming the replacement) and drops them, so the schema
 * stage does not report them again as unknown. Warns about deprecated keys.
 */
export function dropRemovedKeys(root: MapNode, r: Reporter): MapNode {
  const entries = [];
  for (const e of root.entries) {
    const replacement = removedReplacement(REMOVED_KEYS, e.key);
    if (replacement !== undefined) {
      const variable = envVariableOf(e.keySpan);
      if (variable === undefined) r.report(D.RemovedKey, e.keySpan, { key: e.key, replacement }, e.key);
      else r.report(D.RemovedKey, e.keySpan, { key: variable, replacement: replacement.replace(/`([a-z0-9_]+)`/g, (m, k: string) => (SETTINGS_BY_KEY.has(k) ? `\`${k.toUpperCase()}\`` : m)) }, e.key);
      continue;
    }
    if (e.key === 'policy') r.report(D.DeprecatedKey, e.keySpan, { key: 'policy', replacement: 'move these routes under `routes`' }, 'policy');
    entries.push(e.key === 'routes' || e.key === 'policy' ? { ...e, value: dropFromRoutes(e.value, r, e.key) } : e);
  }
  return mapNode(entries, root.span);
}
