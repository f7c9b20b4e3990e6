import { createRequire } from 'node:module';

// `canonicalize` (RFC 8785) ships CommonJS with a default-export typing that NodeNext resolution
// cannot call; load it through require with its real signature.
const canonicalize = createRequire(import.meta.url)('canonicalize') as (value: unknown) => string | undefined;

/** The canonical JSON (RFC 8785: sorted keys, ES number form, no whitespace) of plain data. */
export function canonicalJson(value: unknown): string {
  const out = canonicalize(value);
  if (out === undefined) throw new Error('value has no JSON form');
  return out;
}

/** Deterministic human-readable JSON: keys sorted (RFC 8785 order), two-space indent, final newline. */
export function prettyJson(value: unknown): string {
  return `${JSON.stringify(JSON.parse(canonicalJson(value)), null, 2)}\n`;
}
