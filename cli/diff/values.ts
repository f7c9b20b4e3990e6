/**
 * A structural diff of two plan values (settings, route fields) that never reveals a secret.
 *
 * INVARIANT (no-secret): every value leaving this module went through `redact`: a `Secret`
 * (`{ref|value, fingerprint}`), a `PemSource` (`{pem|file, sha256}`) and any string under a key that
 * names a password, secret, token, fingerprint, credential, API key, cookie, session or authorization
 * (a `set_request_headers` value such as `Authorization: Bearer …`) become `Redacted` markers. Two secrets compare equal
 * when their source and fingerprint are equal, so a changed value is seen without being read.
 */
import type { JsonValue, Redacted, ValueChange } from './types.ts';

/** A change as this module finds it: by plan path; the caller names its config key. */
export type PathChange = Omit<ValueChange, 'key'>;

type Obj = { readonly [key: string]: unknown };

const SENSITIVE_KEY = /password|passwd|secret|token|fingerprint|authorization|cookie|api[-_]?key|credential|session/i;

function isObj(v: unknown): v is Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** True for a plan `Secret`: `{ref, fingerprint}` or `{value, fingerprint}`. */
export function isSecret(v: unknown): v is Obj {
  return isObj(v) && typeof v['fingerprint'] === 'string' && ('ref' in v || 'value' in v);
}

/** True for a plan `PemSource`: `{pem, sha256}` or `{file, sha256}`. */
export function isPem(v: unknown): v is Obj {
  return isObj(v) && typeof v['sha256'] === 'string' && ('pem' in v || 'file' in v);
}

function sourceOf(v: Obj): string {
  if (typeof v['ref'] === 'string') return v['ref'];
  if (typeof v['file'] === 'string') return `file:${v['file']}`;
  return 'inline';
}

/** The identity of an opaque value: what must be equal for it to count as unchanged. */
function opaqueKey(v: Obj): string {
  return `${sourceOf(v)}\0${String(v['fingerprint'] ?? v['sha256'])}`;
}

/**
 * A copy of `v` safe to print: secrets and PEM documents replaced by `Redacted` markers, strings
 * under sensitive keys masked, object keys sorted (so output does not depend on how the plan was
 * built or loaded).
 */
export function redact(v: unknown, key = ''): JsonValue {
  if (isSecret(v)) return marker('secret', sourceOf(v));
  if (isPem(v)) return marker('pem', sourceOf(v));
  if (typeof v === 'string') return SENSITIVE_KEY.test(key) ? marker('secret', 'masked') : v;
  if (v === null || typeof v === 'number' || typeof v === 'boolean') return v;
  if (Array.isArray(v)) return v.map((x) => redact(x, key));
  if (isObj(v)) {
    const out: Record<string, JsonValue> = {};
    for (const k of Object.keys(v).sort()) out[k] = redact(v[k], k);
    return out;
  }
  return null; // undefined never occurs in a plan (JSON-only)
}

function marker(redacted: Redacted['redacted'], source: string): Redacted & JsonValue {
  return { redacted, source };
}

/** True when a value is shown only as "changed". */
function opaque(v: unknown, key: string): boolean {
  return isSecret(v) || isPem(v) || (typeof v === 'string' && SENSITIVE_KEY.test(key));
}

function containsOpaque(v: unknown, key: string): boolean {
  if (opaque(v, key)) return true;
  if (Array.isArray(v)) return v.some((x) => containsOpaque(x, key));
  if (isObj(v)) return Object.keys(v).some((k) => containsOpaque(v[k], k));
  return false;
}

function same(a: unknown, b: unknown, key: string): boolean {
  if (opaque(a, key) || opaque(b, key)) {
    if (typeof a === 'string' && typeof b === 'string') return a === b;
    return isObj(a) && isObj(b) && opaque(a, key) && opaque(b, key) && opaqueKey(a) === opaqueKey(b);
  }
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => same(x, b[i], key));
  if (isObj(a) && isObj(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => k in b && same(a[k], b[k], k));
  }
  return a === b;
}

const isScalar = (v: unknown): boolean => v === null || typeof v !== 'object';

/**
 * Lists the changes from `a` to `b` under `path`, depth first with object keys sorted. Objects are
 * walked key by key; lists of scalars are compared whole (one change); other lists item by item.
 * A secret or PEM document is a leaf compared by source and fingerprint.
 */
export function diffValues(a: unknown, b: unknown, path: string, key = ''): PathChange[] {
  if (same(a, b, key)) return [];
  const leaf = (): PathChange[] => [
    { path, change: 'changed', redacted: opaque(a, key) || opaque(b, key), old: redact(a, key), new: redact(b, key) },
  ];
  if (opaque(a, key) || opaque(b, key)) return leaf();
  if (isObj(a) && isObj(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    const out: PathChange[] = [];
    for (const k of keys) {
      const p = join(path, k);
      if (!(k in b)) out.push(oneSided(p, 'removed', a[k], k));
      else if (!(k in a)) out.push(oneSided(p, 'added', b[k], k));
      else out.push(...diffValues(a[k], b[k], p, k));
    }
    return out;
  }
  if (Array.isArray(a) && Array.isArray(b) && !(a.every(isScalar) && b.every(isScalar))) {
    const out: PathChange[] = [];
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      const p = `${path}[${i}]`;
      if (i >= b.length) out.push(oneSided(p, 'removed', a[i], key));
      else if (i >= a.length) out.push(oneSided(p, 'added', b[i], key));
      else out.push(...diffValues(a[i], b[i], p, key));
    }
    return out;
  }
  return leaf();
}

function oneSided(path: string, change: 'added' | 'removed', v: unknown, key: string): PathChange {
  const shown = redact(v, key);
  return { path, change, redacted: containsOpaque(v, key), old: change === 'removed' ? shown : null, new: change === 'added' ? shown : null };
}

/** Joins a path and a key: `a.b`, or `a["x y"]` for a key that is not a plain identifier. */
function join(path: string, key: string): string {
  const k = /^[A-Za-z_$][\w$-]*$/.test(key) ? key : JSON.stringify(key);
  if (path === '') return k;
  return k.startsWith('"') ? `${path}[${k}]` : `${path}.${k}`;
}
