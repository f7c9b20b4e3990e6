import { mapNode, type MapEntry, type MapNode } from '../source/tree.ts';
import { wholeSpan, sourceFile } from '../source/source-file.ts';

/**
 * Stage 3: merges configuration layers, later layers winning key by key at the top level
 * (precedence environment > file > defaults; defaults are applied by lowering). Every value keeps
 * the span of the layer it came from, so provenance is the value's own source.
 */
export function mergeLayers(layers: readonly (MapNode | undefined)[]): MapNode {
  const byKey = new Map<string, MapEntry>();
  for (const layer of layers) {
    if (!layer) continue;
    for (const e of layer.entries) {
      byKey.delete(e.key); // re-insert so the winning layer's order is kept deterministically
      byKey.set(e.key, e);
    }
  }
  const base = layers.find((l) => l !== undefined);
  return mapNode([...byKey.values()], base?.span ?? wholeSpan(sourceFile('<empty>', '')));
}
