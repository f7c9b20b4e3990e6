import { ReservedKey } from '../diagnostics/codes/sources.ts';
import type { Reporter } from '../diagnostics/diagnostic.ts';
import type { Node } from '../source/tree.ts';

/** Keys that plain JavaScript objects cannot hold as data (`obj['__proto__'] = v` sets the prototype). */
const RESERVED = new Set(['__proto__']);

/**
 * Reports every map key of the merged tree that is reserved (`reserved-key`), at the key. Run before
 * the tree becomes plain data, so no stage can lose such a key silently. Iterative: the tree's
 * depth is bounded by the readers, but the walk should not depend on that.
 */
export function reportReservedKeys(root: Node, r: Reporter): void {
  const stack: Node[] = [root];
  while (stack.length > 0) {
    const node = stack.pop()!;
    if (node.kind === 'map') {
      for (const e of node.entries) {
        if (RESERVED.has(e.key)) r.report(ReservedKey, e.keySpan, { key: e.key });
        stack.push(e.value);
      }
    } else if (node.kind === 'list') stack.push(...node.items);
  }
}
