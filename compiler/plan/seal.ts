import { createHash } from 'node:crypto';
import { canonicalJson } from './canonical-json.ts';
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
  // The body kept is parsed from the canonical JSON that is checksummed, so what is checksummed is
  // exactly what is written and loaded, and none of the caller's objects is kept (canonical JSON
  // is a fixed point of parse-then-canonicalize). It is frozen as parsed; deepFreeze below then
  // stops at the frozen body.
  const text = canonicalJson(body);
  const canonical = freezeParsed(JSON.parse(text)) as PlanBody;
  return deepFreeze({
    formatVersion: FORMAT_VERSION,
    generator: GENERATOR,
    checksum: `sha256:${createHash('sha256').update(text).digest('hex')}`,
    inputs: [...new Set(inputs)].sort(),
    sourceMap,
    body: canonical,
  });
}

/**
 * Freezes what JSON.parse just returned, deeply. Such a value holds only plain objects and arrays
 * whose own enumerable string keys are all their keys, so this walk is leaner than deepFreeze's.
 */
function freezeParsed(value: unknown): unknown {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      if (typeof item === 'object' && item !== null) freezeParsed(item);
    }
  } else {
    const obj = value as Record<string, unknown>;
    for (const key in obj) {
      if (!Object.hasOwn(obj, key)) continue;
      const member = obj[key];
      if (typeof member === 'object' && member !== null) freezeParsed(member);
    }
  }
  return Object.freeze(value);
}
