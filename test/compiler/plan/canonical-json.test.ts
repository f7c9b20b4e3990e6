/** canonicalJson agrees byte for byte with the `canonicalize` package (RFC 8785) on arbitrary data. */
import { createRequire } from 'node:module';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalCopy, canonicalJson, INDEX_KEY, NO_JSON_FORM } from '../../../compiler/plan/canonical-json.ts';

// CommonJS with a default-export typing NodeNext cannot call; load it through require.
const reference = createRequire(import.meta.url)('canonicalize') as (value: unknown) => string | undefined;

describe('canonicalJson', () => {
  it('matches the RFC 8785 reference implementation', () => {
    const json = fc.jsonValue({ maxDepth: 4 });
    const keyish = fc.oneof(fc.string(), fc.constantFrom('10', '9', '0', '-1', '01', 'é', 'a\u0000', '\ud800', 'Z', 'a'));
    const data = fc.letrec((tie) => ({
      value: fc.oneof({ depthSize: 'small' }, json, fc.array(tie('value'), { maxLength: 4 }), fc.dictionary(keyish, tie('value'), { maxKeys: 5 })),
    })).value;
    fc.assert(fc.property(data, (v) => {
      expect(canonicalJson(v)).toBe(reference(v));
    }), { numRuns: 500 });
  });

  it('sorts integer-like keys as strings, unlike object enumeration order', () => {
    expect(canonicalJson({ 9: 'a', 10: 'b', b: 1, a: [undefined, -0, 1e21] })).toBe('{"10":"b","9":"a","a":[null,0,1e+21],"b":1}');
  });

  it('refuses values without a JSON form', () => {
    expect(() => canonicalJson({ a: [Number.NaN] })).toThrow(/\.a\[0\] is NaN/);
    expect(() => canonicalJson({ a: 1n })).toThrow(/bigint/);
  });
});

describe('canonicalCopy', () => {
  it('parses back equal to its canonical JSON, or marks what the fast path cannot take', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), (v) => {
        const copy = canonicalCopy(v);
        if (copy === INDEX_KEY) return;
        expect(copy).toEqual(JSON.parse(canonicalJson(v)));
        expect(JSON.stringify(copy)).toBe(reference(v));
      }),
    );
  });
  it('marks index-like keys and values without a JSON form', () => {
    expect(canonicalCopy({ a: { 10: 1 } })).toBe(INDEX_KEY);
    expect(canonicalCopy({ a: [Number.POSITIVE_INFINITY] })).toBe(NO_JSON_FORM);
    expect(canonicalCopy({ '1a': 1, '01': 2, '4294967295': 3 })).toEqual({ '01': 2, '1a': 1, '4294967295': 3 });
  });
});

describe('a `__proto__` key', () => {
  it('is kept as data by both paths, never as a prototype', () => {
    const v = JSON.parse('{"b":{"__proto__":{"polluted":1}},"a":1}') as unknown;
    const copy = canonicalCopy(v) as { b: object };
    expect(Object.getPrototypeOf(copy.b)).toBe(Object.prototype);
    expect(Object.keys(copy.b)).toEqual(['__proto__']);
    expect(canonicalJson(v)).toBe('{"a":1,"b":{"__proto__":{"polluted":1}}}');
    expect(canonicalJson(v)).toBe(reference(v));
  });
});
