/**
 * What the session store's Redis keys hold (docs/scale-out.md "What a Redis writer can and cannot
 * do"). Every value is sealed (redis-seal.ts) and carries a version that the seal authenticates, so
 * a writer to Redis can neither forge a value nor change its version; the store refuses a value
 * older than one it has seen (redis-seen.ts). The kind and version are also readable in clear, for
 * the Lua scripts that keep versions increasing (they cannot open a seal).
 *
 *   session key   `s<version>.` ‖ seal(record JSON)      a live session
 *                 `r<version>.` ‖ seal({"exp":ms})       its revocation (sign-out), same key and TTL
 *   lease key     `<holder tag>.` ‖ seal({"exp":ms})    the holder and until when it holds the lease
 *
 * The associated data of each seal is the key name, a NUL and the clear header (`s<version>`,
 * `r<version>`, `<holder tag>`): a value moved to another key, or given another kind, version or
 * holder, does not open. Versions are positive safe integers (milliseconds since the epoch when
 * written, or one more than the version they replace: redis-store.ts).
 *
 * Values written by an svc before versions existed are still read: a bare sealed record (first byte
 * 0x01) as a session at version 0, the bare mark `r` as revoked (unauthenticated: it can only sign
 * a session out, which deleting the key does as well).
 */
import type { ValueSeal } from './redis-seal.ts';

/** One session key's value, opened. */
export type SessionValue =
  | { readonly kind: 'session'; readonly version: number; readonly plain: Buffer }
  /** `exp`: when the revoked record would have expired (ms); undefined for the legacy mark. */
  | { readonly kind: 'revoked'; readonly version: number; readonly exp: number | undefined }
  /** Not sealed by this deployment for this key (tampered, truncated, foreign). */
  | { readonly kind: 'invalid' };

const LEGACY_SEALED = 0x01;
const LEGACY_REVOKED = 'r'.charCodeAt(0);
const DOT = '.'.charCodeAt(0);
/** At most 16 digits: the Lua scripts read versions as doubles, exact up to 2^53. */
const HEADER = /^([sr])([1-9][0-9]{0,15})$/;

/** The value of a session at `version` (`plain`: the record's JSON). */
export function sealSession(seal: ValueSeal, key: string, version: number, plain: Buffer): Buffer {
  return withHeader(seal, key, `s${checked(version)}`, plain);
}

/** The revocation of a session at `version`; `exp` is when the record would have expired. */
export function sealRevoked(seal: ValueSeal, key: string, version: number, exp: number): Buffer {
  return withHeader(seal, key, `r${checked(version)}`, Buffer.from(JSON.stringify({ exp })));
}

/** Opens a session key's value. */
export function openSession(seal: ValueSeal, key: string, value: Buffer): SessionValue {
  if (value.length === 1 && value[0] === LEGACY_REVOKED) return { kind: 'revoked', version: 0, exp: undefined };
  if (value[0] === LEGACY_SEALED) {
    const plain = seal.open(key, value);
    return plain === undefined ? { kind: 'invalid' } : { kind: 'session', version: 0, plain };
  }
  const split = splitHeader(value);
  const m = split === undefined ? null : HEADER.exec(split.header);
  if (split === undefined || m === null) return { kind: 'invalid' };
  const plain = seal.open(`${key}\0${split.header}`, split.body);
  if (plain === undefined) return { kind: 'invalid' };
  const version = Number(m[2]);
  if (!Number.isSafeInteger(version)) return { kind: 'invalid' };
  if (m[1] === 's') return { kind: 'session', version, plain };
  const exp = expOf(plain);
  return exp === undefined ? { kind: 'invalid' } : { kind: 'revoked', version, exp };
}

/** The value of a lease held by `tag` until `exp` (ms). */
export function sealLease(seal: ValueSeal, key: string, tag: string, exp: number): Buffer {
  return withHeader(seal, key, tag, Buffer.from(JSON.stringify({ exp })));
}

/** The holder tag and sealed expiry of a lease value, or undefined when this deployment did not write it. */
export function openLease(seal: ValueSeal, key: string, value: Buffer): { readonly tag: string; readonly exp: number } | undefined {
  const split = splitHeader(value);
  if (split === undefined) return undefined;
  const plain = seal.open(`${key}\0${split.header}`, split.body);
  const exp = plain === undefined ? undefined : expOf(plain);
  return exp === undefined ? undefined : { tag: split.header, exp };
}

function withHeader(seal: ValueSeal, key: string, header: string, plain: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`${header}.`), seal.seal(`${key}\0${header}`, plain)]);
}

function splitHeader(value: Buffer): { header: string; body: Buffer } | undefined {
  // Headers are short: a version (17 bytes) or a holder tag (27).
  const dot = value.subarray(0, 40).indexOf(DOT);
  return dot < 1 ? undefined : { header: value.subarray(0, dot).toString('latin1'), body: value.subarray(dot + 1) };
}

function expOf(plain: Buffer): number | undefined {
  try {
    const exp = (JSON.parse(plain.toString('utf8')) as { exp?: unknown }).exp;
    return typeof exp === 'number' && Number.isSafeInteger(exp) ? exp : undefined;
  } catch {
    return undefined;
  }
}

function checked(version: number): number {
  if (!Number.isSafeInteger(version) || version < 1) throw new RangeError('a version must be a positive safe integer');
  return version;
}
