import { createHash } from 'node:crypto';
import { canonicalCopy, canonicalJson, INDEX_KEY, NO_JSON_FORM } from './canonical-json.ts';
import type { PlanBody, PlanEnvelope, SourceMap } from './types.ts';
import { deepFreeze } from './deep-freeze.ts';

export const FORMAT_VERSION = 1;
export const GENERATOR = 'svc-compiler/0.1.0';

/** `sha256:` of the canonical JSON of a plan body. Spans and provenance are outside it. */
export function checksumOf(body: PlanBody): string {
  return `sha256:${createHash('sha256').update(canonicalJson(body)).digest('hex')}`;
}

/**
 * Stage 10: seals a plan. The body goes through its canonical JSON once, so what is checksummed
 * is exactly what is written and loaded (no undefined, no prototype, key order irrelevant).
 */
export function seal(body: PlanBody, inputs: readonly string[], sourceMap: SourceMap): PlanEnvelope {
  // The body kept is the canonical copy whose JSON is checksummed, so what is checksummed is
  // exactly what is written and loaded. A body the fast copy cannot order goes through its
  // canonical text instead (canonical JSON is a fixed point of parse-then-canonicalize).
  // The copy is frozen as it is built; deepFreeze below then stops at the frozen body.
  const copy = canonicalCopy(body, true);
  const text = copy === INDEX_KEY || copy === NO_JSON_FORM ? canonicalJson(body) : JSON.stringify(copy);
  const canonical = (copy === INDEX_KEY || copy === NO_JSON_FORM ? JSON.parse(text) : copy) as PlanBody;
  return deepFreeze({
    formatVersion: FORMAT_VERSION,
    generator: GENERATOR,
    checksum: `sha256:${createHash('sha256').update(text).digest('hex')}`,
    inputs: [...new Set(inputs)].sort(),
    sourceMap,
    body: canonical,
  });
}
