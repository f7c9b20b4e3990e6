/** canonicalJson agrees byte for byte with the `canonicalize` package (RFC 8785) on arbitrary data. */
import { createRequire } from 'node:module';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalData, canonicalJson, canonicalView, INDEX_KEY, NO_JSON_FORM } from '../../../compiler/plan/canonical-json.ts';

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

describe('canonicalView', () => {
  it('is written by JSON.stringify as the canonical JSON, or marks what the fast path cannot take', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), (v) => {
        const view = canonicalView(v);
        if (view === INDEX_KEY) return;
        // Only its JSON is canonical: a -0 in it stays -0 (written `0`); canonicalData is the one equal to the parsed JSON.
        expect(JSON.stringify(view)).toBe(reference(v));
      }),
    );
  });

  it('marks index-like keys and values without a JSON form', () => {
    expect(canonicalView({ a: { 10: 1 } })).toBe(INDEX_KEY);
    expect(canonicalView({ a: [Number.POSITIVE_INFINITY] })).toBe(NO_JSON_FORM);
    expect(canonicalView({ '1a': 1, '01': 2, '4294967295': 3 })).toEqual({ '01': 2, '1a': 1, '4294967295': 3 });
  });

  it('shares the objects already in canonical order, copies the others, and never changes its input', () => {
    const sorted = { b: [1, { c: 2, d: null }], e: 'x' };
    const unsorted = { z: 1, y: { b: 1, a: 2 } };
    const v = { a: sorted, b: unsorted, c: [sorted, undefined] };
    const view = canonicalView(v) as typeof v;
    expect(view).not.toBe(v);
    expect(view.a).toBe(sorted);
    expect(view.c[0]).toBe(sorted);
    expect(view.b).not.toBe(unsorted);
    expect(Object.keys(view.b)).toEqual(['y', 'z']);
    expect(Object.keys(unsorted)).toEqual(['z', 'y']);
    expect(Object.keys(unsorted.y)).toEqual(['b', 'a']);
    expect(canonicalView(sorted)).toBe(sorted);
  });

  it('writes boxed values, raw JSON and other non-plain objects by their own keys, as the reference does', () => {
    const rawJson = (JSON as unknown as { rawJSON?: (text: string) => unknown }).rawJSON;
    const values: unknown[] = [
      { a: new Number(1), b: new Boolean(false), s: new String('ab') },
      { d: new Date(0), m: new Map([[1, 2]]) },
      Object.assign(Object.create(null) as object, { b: 1, a: 2 }),
      ...(rawJson ? [{ r: rawJson('12') }] : []),
    ];
    for (const v of values) expect(canonicalJson(v)).toBe(reference(v));
  });
});

/** The value with every object's keys listed in their order, so that toStrictEqual also compares key order. */
function withKeyOrder(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withKeyOrder);
  if (v !== null && typeof v === 'object') return Object.keys(v).map((k) => [k, withKeyOrder((v as Record<string, unknown>)[k])]);
  return v;
}

/** Every object and array in `v`. */
function objectsIn(v: unknown, out: object[] = []): object[] {
  if (v === null || typeof v !== 'object') return out;
  out.push(v);
  for (const x of Object.values(v)) objectsIn(x, out);
  return out;
}

/** Data as lowering may build it: JSON, plus `undefined` members and items, `-0`, holes. */
const loose = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.jsonValue({ maxDepth: 1 }),
    fc.constant(undefined),
    fc.constant(-0),
    fc.sparseArray(tie('value'), { maxLength: 4 }),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.constantFrom('a', 'b', 'c', 'Z', '__proto__', 'é'), tie('value'), { maxKeys: 4 }),
  ),
})).value;

describe('canonicalData', () => {
  it('is what parsing the canonical JSON gives back, key order, -0 and nulls included', () => {
    fc.assert(
      fc.property(loose, (v) => {
        const data = canonicalData(v);
        if (data === INDEX_KEY || data === NO_JSON_FORM) return;
        const parsed: unknown = JSON.parse(canonicalJson(v));
        expect(withKeyOrder(data)).toStrictEqual(withKeyOrder(parsed));
        expect(JSON.stringify(data)).toBe(canonicalJson(v));
        const frozen = canonicalData(structuredClone(v), true);
        expect(withKeyOrder(frozen)).toStrictEqual(withKeyOrder(parsed));
        expect(objectsIn(frozen).every((o) => Object.isFrozen(o))).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('is the value itself when it already is such data, and never changes its input', () => {
    const parsed: unknown = JSON.parse(canonicalJson({ b: [1, { d: null, c: 'x' }], a: { y: 1, x: [] } }));
    expect(canonicalData(parsed)).toBe(parsed);
    const loose = { a: [1, undefined, -0], b: { c: undefined, d: 1 } };
    const data = canonicalData(loose) as { a: unknown[]; b: object };
    expect(data.a).toEqual([1, null, 0]);
    expect(Object.is(data.a[2], 0)).toBe(true);
    expect(Object.keys(data.b)).toEqual(['d']);
    expect(loose.a).toEqual([1, undefined, -0]);
    expect(Object.keys(loose.b)).toEqual(['c', 'd']);
  });
});

describe('an enumerable property on Object.prototype', () => {
  it('is not read as a key of the objects written', () => {
    // Last in key order, and unsorted itself: a walk that read it as a member would copy it in.
    Object.defineProperty(Object.prototype, 'zzz', { value: { b: 1, a: 2 }, enumerable: true, configurable: true, writable: true });
    try {
      const v = JSON.parse('{"b":[{"d":1,"c":2}],"a":{"x":null}}') as unknown;
      expect(canonicalJson(v)).toBe('{"a":{"x":null},"b":[{"c":2,"d":1}]}');
      expect(JSON.stringify(canonicalData(v))).toBe('{"a":{"x":null},"b":[{"c":2,"d":1}]}');
    } finally {
      delete (Object.prototype as { zzz?: unknown }).zzz;
    }
  });
});

describe('a `__proto__` key', () => {
  it('is kept as data by both paths, never as a prototype', () => {
    const v = JSON.parse('{"b":{"__proto__":{"polluted":1}},"a":1}') as unknown;
    const view = canonicalView(v) as { b: object };
    expect(Object.getPrototypeOf(view.b)).toBe(Object.prototype);
    expect(Object.keys(view.b)).toEqual(['__proto__']);
    expect(canonicalJson(v)).toBe('{"a":1,"b":{"__proto__":{"polluted":1}}}');
    expect(canonicalJson(v)).toBe(reference(v));
  });

  it('is kept as data in a sorted copy', () => {
    const v = JSON.parse('{"z":1,"__proto__":{"polluted":1}}') as unknown;
    const view = canonicalView(v) as object;
    expect(view).not.toBe(v);
    expect(Object.getPrototypeOf(view)).toBe(Object.prototype);
    expect(Object.keys(view)).toEqual(['__proto__', 'z']);
    expect(canonicalJson(v)).toBe(reference(v));
  });
});
