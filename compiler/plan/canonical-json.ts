/**
 * Canonical JSON as RFC 8785 (JCS) defines it for the plan's data: object keys sorted by UTF-16
 * code units, numbers and strings in their ECMAScript JSON form, no white space; `undefined`
 * members are left out and `undefined` array items become `null`, as JSON.stringify does.
 *
 * Fast path: `canonicalView` gives a value the native JSON.stringify writes in canonical order:
 * the value itself where its objects already hold their keys in sorted order (the compiler builds
 * the plan so), copies with the keys inserted in sorted order only where they do not. That holds
 * for every key except array-index-like ones (`"9"`, `"10"`), which objects enumerate first and
 * numerically; a value holding such a key takes the slow path, a writer that sorts each object's
 * keys itself. The `canonicalize` package is the reference both are checked against
 * (test/compiler/plan/canonical-json.test.ts); it took ~750 ms on the 14 MB plan of 10,000 routes,
 * the fast path ~50 ms.
 */
export function canonicalJson(value: unknown): string {
  const view = canonicalView(value);
  if (view !== INDEX_KEY && view !== NO_JSON_FORM) return JSON.stringify(view);
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

function isArrayIndex(key: string): boolean {
  const first = key.charCodeAt(0);
  return first >= 48 && first <= 57 && ARRAY_INDEX.test(key) && Number(key) < 4294967295;
}

/**
 * A value whose JSON.stringify is the canonical JSON of `value`: `value` itself when every object
 * in it is a plain object (or array) already holding its keys in sorted order, else a copy of the
 * objects that are not (and of those holding them), whose keys are inserted in sorted order; the
 * parts that are canonical are shared, never copied, and `value` is never changed. Members
 * JSON.stringify leaves out (`undefined`, functions) are left where they are; `toJSON` results
 * replace their objects. `INDEX_KEY` when some object has an array-index-like key,
 * `NO_JSON_FORM` when some value cannot be written.
 */
export function canonicalView(value: unknown): unknown {
  ownKeysOnly = !inheritsEnumerable();
  return view(value, false, false);
}

/**
 * As `canonicalView`, but the value given is also what parsing the canonical JSON gives back, key
 * order included: members JSON leaves out are left out, array items it writes as `null` (holes,
 * `undefined`) are `null`, `-0` is `0`, and an array is a plain `Array`. `value` itself where it
 * already is such data. Accessors, non-enumerable and symbol-keyed properties are not looked for:
 * plain data has none. With `freeze`, every object and array given is frozen, those of `value`
 * that are kept in place (and, when a marker is returned, some of `value`'s may be frozen).
 */
export function canonicalData(value: unknown, freeze = false): unknown {
  ownKeysOnly = !inheritsEnumerable();
  return view(value, true, freeze);
}

/**
 * Whether for-in over a plain object lists its own keys only, as Object.keys does (no one has
 * set an enumerable property on Object.prototype): the walk then reads keys without an array of
 * them per object. Set by each walk as it starts.
 */
let ownKeysOnly = false;

function inheritsEnumerable(): boolean {
  for (const _ in Object.prototype) return true;
  return false;
}

/** Whether `c`, the view of `member`, differs from it (`-0` and its view `0` differ in strict views). */
function differs(c: unknown, member: unknown, strict: boolean): boolean {
  return c !== member || (strict && member === 0 && Object.is(member, -0));
}

function view(value: unknown, strict: boolean, freeze: boolean): unknown {
  if (value === null) return null;
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      // JSON.stringify writes -0 as `0`, as canonical JSON does.
      if (!Number.isFinite(value)) return NO_JSON_FORM;
      return strict && value === 0 ? 0 : value;
    case 'object': {
      const withToJson = value as { toJSON?: unknown };
      if (typeof withToJson.toJSON === 'function') return view((withToJson.toJSON as () => unknown).call(value), strict, freeze);
      if (Array.isArray(value)) return arrayView(value as unknown[], strict, freeze);
      const obj = value as Record<string, unknown>;
      // Only a plain object is written as its own keys: JSON.stringify unboxes `new Number(1)` and
      // writes `JSON.rawJSON` objects as their text, where canonical JSON has their keys.
      if (Object.getPrototypeOf(obj) !== Object.prototype || !ownKeysOnly) return objectCopy(obj, Object.keys(obj).sort(), strict, freeze);
      return plainObjectView(obj, strict, freeze);
    }
    default:
      return NO_JSON_FORM;
  }
}

function arrayView(arr: readonly unknown[], strict: boolean, freeze: boolean): unknown {
  let out: unknown[] | undefined;
  if (strict && Object.getPrototypeOf(arr) !== Array.prototype) out = new Array<unknown>(arr.length);
  for (let i = 0; i < arr.length; i++) {
    const item: unknown = arr[i];
    let c: unknown;
    if (omitted(item)) {
      // JSON.stringify writes `null` for these (and for holes), as canonical JSON does.
      if (!strict) continue;
      c = null;
    } else {
      c = view(item, strict, freeze);
      if (c === INDEX_KEY || c === NO_JSON_FORM) return c;
    }
    if (out === undefined && differs(c, item, strict)) {
      out = new Array<unknown>(arr.length);
      for (let j = 0; j < i; j++) out[j] = arr[j];
    }
    if (out !== undefined) out[i] = c;
  }
  const result = out ?? arr;
  return freeze ? Object.freeze(result) : result;
}

/**
 * The view of a plain object: itself when its keys are in sorted order and every member is its
 * own view; a sorted copy when its keys are not; else a copy holding the members' views. Its keys
 * are read with for-in (`ownKeysOnly`).
 */
function plainObjectView(obj: Record<string, unknown>, strict: boolean, freeze: boolean): unknown {
  let out: Record<string, unknown> | undefined;
  let previous: string | undefined;
  let i = 0;
  for (const key in obj) {
    if (previous !== undefined && previous > key) return objectCopy(obj, Object.keys(obj).sort(), strict, freeze);
    previous = key;
    const member = obj[key];
    let c: unknown;
    if (omitted(member)) {
      // JSON.stringify leaves it out; a strict view does too.
      c = member;
    } else {
      if (isArrayIndex(key)) return INDEX_KEY;
      c = view(member, strict, freeze);
      if (c === INDEX_KEY || c === NO_JSON_FORM) return c;
    }
    if (out === undefined && ((strict && omitted(c)) || (!omitted(c) && differs(c, member, strict)))) {
      // The members before this one are their own views.
      out = {};
      let j = 0;
      for (const earlierKey in obj) {
        if (j++ === i) break;
        const earlier = obj[earlierKey];
        if (!omitted(earlier)) setMember(out, earlierKey, earlier);
      }
    }
    if (out !== undefined && !omitted(c)) setMember(out, key, c);
    i++;
  }
  const result = out ?? obj;
  return freeze ? Object.freeze(result) : result;
}

/** A plain-object copy of `obj` holding the views of its members, inserted in the order of `sortedKeys`. */
function objectCopy(obj: Record<string, unknown>, sortedKeys: readonly string[], strict: boolean, freeze: boolean): unknown {
  const out: Record<string, unknown> = {};
  for (const key of sortedKeys) {
    const member = obj[key];
    if (omitted(member)) continue;
    if (isArrayIndex(key)) return INDEX_KEY;
    const c = view(member, strict, freeze);
    if (c === INDEX_KEY || c === NO_JSON_FORM) return c;
    setMember(out, key, c);
  }
  return freeze ? Object.freeze(out) : out;
}

function setMember(out: Record<string, unknown>, key: string, value: unknown): void {
  // `__proto__` is data here (a header may be named so): define it, never set the prototype.
  if (key === '__proto__') Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  else out[key] = value;
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
