/**
 * Canonical JSON as RFC 8785 (JCS) defines it for the plan's data: object keys sorted by UTF-16
 * code units, numbers and strings in their ECMAScript JSON form, no white space; `undefined`
 * members are left out and `undefined` array items become `null`, as JSON.stringify does.
 *
 * Fast path: `canonicalCopy` builds a copy whose keys are inserted in sorted order, and the native
 * JSON.stringify writes it in that order. That holds for every key except array-index-like ones
 * (`"9"`, `"10"`), which objects enumerate first and numerically; a value holding such a key takes
 * the slow path, a writer that sorts each object's keys itself. The `canonicalize` package is the
 * reference both are checked against (test/compiler/plan/canonical-json.test.ts); it took ~750 ms on the
 * 13 MB plan of 10,000 routes, the fast path ~150 ms.
 */
export function canonicalJson(value: unknown): string {
  const copy = canonicalCopy(value);
  if (copy !== INDEX_KEY && copy !== NO_JSON_FORM) return JSON.stringify(copy);
  // The slow path also names where a value without a JSON form is, in the error it throws.
  const parts: string[] = [];
  write(value, parts, '');
  return parts.join('');
}

/** Marks a value the fast path cannot order (it holds an array-index-like key). */
export const INDEX_KEY: unique symbol = Symbol('array-index-like key');
/** Marks a value holding NaN, an infinity, a bigint or another value JSON cannot write. */
export const NO_JSON_FORM: unique symbol = Symbol('no JSON form');

const ARRAY_INDEX = /^(?:0|[1-9]\d{0,9})$/;

/**
 * A plain-data copy of `value` with every object's keys inserted in sorted order, members without
 * a JSON form left out, `-0` as `0`: parsing its canonical JSON gives an equal value. `INDEX_KEY`
 * when some object has an array-index-like key, `NO_JSON_FORM` when some value cannot be written.
 * With `freeze`, every object and array of the copy is frozen as it is built (one walk where a
 * copy then a deep freeze would take two: sealing a plan does both).
 */
export function canonicalCopy(value: unknown, freeze = false): unknown {
  if (value === null) return null;
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      if (!Number.isFinite(value)) return NO_JSON_FORM;
      return value === 0 ? 0 : value;
    case 'object': {
      const withToJson = value as { toJSON?: unknown };
      if (typeof withToJson.toJSON === 'function') return canonicalCopy((withToJson.toJSON as () => unknown).call(value), freeze);
      if (Array.isArray(value)) {
        const out: unknown[] = new Array<unknown>(value.length);
        for (let i = 0; i < value.length; i++) {
          const item: unknown = value[i];
          const c = omitted(item) ? null : canonicalCopy(item, freeze);
          if (c === INDEX_KEY || c === NO_JSON_FORM) return c;
          out[i] = c;
        }
        return freeze ? Object.freeze(out) : out;
      }
      const obj = value as Record<string, unknown>;
      const out: Record<string, unknown> = {};
      for (const key of Object.keys(obj).sort()) {
        const member = obj[key];
        if (omitted(member)) continue;
        const first = key.charCodeAt(0);
        if (first >= 48 && first <= 57 && ARRAY_INDEX.test(key) && Number(key) < 4294967295) return INDEX_KEY;
        const c = canonicalCopy(member, freeze);
        if (c === INDEX_KEY || c === NO_JSON_FORM) return c;
        // `__proto__` is data here (a header may be named so): define it, never set the prototype.
        if (key === '__proto__') Object.defineProperty(out, key, { value: c, enumerable: true, writable: true, configurable: true });
        else out[key] = c;
      }
      return freeze ? Object.freeze(out) : out;
    }
    default:
      return NO_JSON_FORM;
  }
}

/** Deterministic human-readable JSON: keys sorted (RFC 8785 order), two-space indent, final newline. */
export function prettyJson(value: unknown): string {
  return `${JSON.stringify(JSON.parse(canonicalJson(value)), null, 2)}\n`;
}

function omitted(v: unknown): boolean {
  return v === undefined || typeof v === 'function' || typeof v === 'symbol';
}

function write(v: unknown, out: string[], where: string): void {
  if (v === null) {
    out.push('null');
    return;
  }
  switch (typeof v) {
    case 'string':
      out.push(JSON.stringify(v));
      return;
    case 'boolean':
      out.push(v ? 'true' : 'false');
      return;
    case 'number':
      if (!Number.isFinite(v)) throw new Error(`${where || 'value'} is ${v}, which has no JSON form`);
      out.push(JSON.stringify(v));
      return;
    case 'object': {
      const withToJson = v as { toJSON?: unknown };
      if (typeof withToJson.toJSON === 'function') {
        write((withToJson.toJSON as () => unknown).call(v), out, where);
        return;
      }
      if (Array.isArray(v)) {
        out.push('[');
        for (let i = 0; i < v.length; i++) {
          if (i > 0) out.push(',');
          const item: unknown = v[i];
          write(omitted(item) ? null : item, out, `${where}[${i}]`);
        }
        out.push(']');
        return;
      }
      const obj = v as Record<string, unknown>;
      out.push('{');
      let first = true;
      for (const key of Object.keys(obj).sort()) {
        const member = obj[key];
        if (omitted(member)) continue;
        if (!first) out.push(',');
        first = false;
        out.push(JSON.stringify(key), ':');
        write(member, out, `${where}.${key}`);
      }
      out.push('}');
      return;
    }
    default:
      throw new Error(`${where || 'value'} is a ${typeof v}, which has no JSON form`);
  }
}
