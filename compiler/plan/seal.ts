import { createHash } from 'node:crypto';
import { canonicalData, canonicalJson, INDEX_KEY, NO_JSON_FORM } from './canonical-json.ts';
import type { PlanBody, PlanEnvelope, SourceMap } from './types.ts';
import { deepFreeze } from './deep-freeze.ts';

export const FORMAT_VERSION = 1;
export const GENERATOR = 'svc-compiler/0.1.0';

/** `sha256:` of the canonical JSON of a plan body. Spans and provenance are outside it. */
export function checksumOf(body: PlanBody): string {
  return `sha256:${createHash('sha256').update(canonicalJson(body)).digest('hex')}`;
}

/**
 * Seals a plan. The body goes through its canonical JSON once, so what is checksummed is exactly
 * what is written and loaded (no undefined, no prototype, key order irrelevant). The body kept is
 * parsed back from that JSON, so none of the caller's objects is kept (canonical JSON is a fixed
 * point of parse-then-canonicalize); it is frozen as parsed, and deepFreeze then stops at it.
 */
export function seal(body: PlanBody, inputs: readonly string[], sourceMap: SourceMap): PlanEnvelope {
  const text = canonicalJson(body);
  return envelope(text, freezeData(JSON.parse(text)) as PlanBody, inputs, sourceMap);
}

/**
 * Stage 10: seals a body built for this plan alone, which the caller hands over and never touches
 * again. Where the body already is what parsing its canonical JSON would give (`canonicalData`:
 * lowering builds routes so), it is kept as it is, frozen in place as it is checked, instead of a
 * parsed copy; what is not is copied. The plan is the one `seal` makes of the same body, byte for byte.
 */
export function sealBuilt(body: PlanBody, inputs: readonly string[], sourceMap: SourceMap): PlanEnvelope {
  const data = canonicalData(body, true);
  if (data === INDEX_KEY || data === NO_JSON_FORM) return seal(body, inputs, sourceMap);
  return envelope(JSON.stringify(data), data as PlanBody, inputs, sourceMap);
}

function envelope(text: string, body: PlanBody, inputs: readonly string[], sourceMap: SourceMap): PlanEnvelope {
  return deepFreeze({
    formatVersion: FORMAT_VERSION,
    generator: GENERATOR,
    checksum: `sha256:${createHash('sha256').update(text).digest('hex')}`,
    inputs: [...new Set(inputs)].sort(),
    sourceMap,
    body,
  });
}

/**
 * Freezes what JSON.parse just returned, deeply. Such a value holds only plain objects and arrays
 * whose own enumerable string keys are all their keys, so this walk is leaner than deepFreeze's.
 */
function freezeData(value: unknown): unknown {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      if (typeof item === 'object' && item !== null) freezeData(item);
    }
  } else {
    const obj = value as Record<string, unknown>;
    for (const key in obj) {
      if (!Object.hasOwn(obj, key)) continue;
      const member = obj[key];
      if (typeof member === 'object' && member !== null) freezeData(member);
    }
  }
  return Object.freeze(value);
}
