/**
 * HMAC-signed internal redirect/state query parameters with an expiry (docs/security.md S05).
 * Hand-written on node:crypto: the canonical form below is ours and no library signs a query string.
 *
 * The signature (`svc_signature`, base64url HMAC-SHA256, key derived with HKDF-SHA256 info
 * `svc signed params v1`) covers every parameter of the query except itself, sorted by name, plus
 * `svc_expiry`. Canonical form: the ASCII label `svc signed params v1`, a zero byte, then for each
 * parameter in name order its UTF-8 name and UTF-8 value, each prefixed by its byte length as a
 * 32-bit big-endian integer, and last the `svc_expiry` value encoded the same way. Length prefixes
 * make the encoding injective, so no two different parameter sets share a canonical form.
 */
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import { SvcError } from '../core/errors.ts';

/** Query parameter holding the expiry (decimal milliseconds since the epoch). */
export const EXPIRY_PARAM = 'svc_expiry';
/** Query parameter holding the base64url HMAC-SHA256 signature. */
export const SIGNATURE_PARAM = 'svc_signature';

const HKDF_INFO = 'svc signed params v1';
const MIN_KEY_BYTES = 32;
const MAC_BYTES = 32;
const CANONICAL_EXPIRY = /^(0|[1-9][0-9]{0,15})$/;
const BASE64URL = /^[A-Za-z0-9_-]*$/;

/** Why a query did not verify; every reason means "do not trust any of these parameters". */
export type SignedParamsFailure = 'missing' | 'expired' | 'signature' | 'duplicate';

/** Result of {@link verifyParams}. */
export type VerifiedParams =
  | { readonly ok: true; readonly params: Record<string, string> }
  | { readonly ok: false; readonly reason: SignedParamsFailure };

/** A programming error when signing (bad key, reserved name, bad expiry); never raised for a client's query. */
export class SignedParamsError extends SvcError<'SVC_ERR_SIGNED_PARAMS_INPUT'> {
  constructor(message: string, options?: ErrorOptions) {
    super('SVC_ERR_SIGNED_PARAMS_INPUT', message, options);
    this.name = 'SignedParamsError';
  }
}

function mac(key: Buffer, entries: ReadonlyArray<readonly [string, string]>, expiry: string): Buffer {
  const macKey = Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), HKDF_INFO, MAC_BYTES));
  const h = createHmac('sha256', macKey);
  h.update(`${HKDF_INFO}\0`, 'utf8');
  const field = (s: string): void => {
    const bytes = Buffer.from(s, 'utf8');
    const len = Buffer.alloc(4);
    len.writeUInt32BE(bytes.length);
    h.update(len);
    h.update(bytes);
  };
  const sorted = [...entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [name, value] of sorted) {
    field(name);
    field(value);
  }
  field(expiry);
  return h.digest();
}

/**
 * Returns `params` as a query with `svc_expiry` and `svc_signature` added. Names and values are
 * signed as the returned `URLSearchParams` holds them (ill-formed UTF-16 becomes U+FFFD there).
 *
 * @throws {SignedParamsError} when `key` is shorter than 32 bytes, `params` uses a reserved name,
 *   or `expiresAtMs` is not a non-negative safe integer (caller bugs).
 */
export function signParams(params: Readonly<Record<string, string>>, key: Buffer, expiresAtMs: number): URLSearchParams {
  if (!Buffer.isBuffer(key) || key.length < MIN_KEY_BYTES) throw new SignedParamsError(`signing key must be at least ${MIN_KEY_BYTES} bytes`);
  if (!Number.isSafeInteger(expiresAtMs) || expiresAtMs < 0) throw new SignedParamsError('expiresAtMs must be a non-negative safe integer');
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (name === EXPIRY_PARAM || name === SIGNATURE_PARAM) throw new SignedParamsError(`\`${name}\` is reserved`);
    query.append(name, value);
  }
  const expiry = String(expiresAtMs);
  const signature = mac(key, [...query.entries()], expiry).toString('base64url');
  query.append(EXPIRY_PARAM, expiry);
  query.append(SIGNATURE_PARAM, signature);
  return query;
}

/**
 * Verifies a query made by {@link signParams} and returns its parameters without `svc_expiry` and
 * `svc_signature`. Never throws. Refuses (in this order of checks):
 *
 * - `duplicate`: any parameter name appears more than once (which copy is meant would be ambiguous);
 * - `missing`: no `svc_expiry` or no `svc_signature`;
 * - `signature`: the signature does not match (tampered, added or removed parameter, wrong key,
 *   non-canonical expiry); compared in constant time;
 * - `expired`: authentic, but `svc_expiry <= nowMs`.
 *
 * Every parameter is covered by the signature, so an extra unsigned parameter fails as `signature`.
 */
export function verifyParams(query: URLSearchParams, key: Buffer, nowMs: number): VerifiedParams {
  try {
    return verify(query, key, nowMs);
  } catch {
    // INVARIANT (fail-closed): an unexpected failure never yields trusted parameters.
    return { ok: false, reason: 'signature' };
  }
}

function verify(query: URLSearchParams, key: Buffer, nowMs: number): VerifiedParams {
  const seen = new Map<string, string>();
  for (const [name, value] of query) {
    if (seen.has(name)) return { ok: false, reason: 'duplicate' };
    seen.set(name, value);
  }
  const expiry = seen.get(EXPIRY_PARAM);
  const signature = seen.get(SIGNATURE_PARAM);
  if (expiry === undefined || signature === undefined) return { ok: false, reason: 'missing' };
  seen.delete(EXPIRY_PARAM);
  seen.delete(SIGNATURE_PARAM);
  if (!Buffer.isBuffer(key) || key.length < MIN_KEY_BYTES) return { ok: false, reason: 'signature' };
  const given = BASE64URL.test(signature) ? Buffer.from(signature, 'base64url') : Buffer.alloc(0);
  const expected = mac(key, [...seen.entries()], expiry);
  // Always run the comparison on equal lengths so a short signature costs the same as a wrong one;
  // the canonical-spelling check rejects aliases that decode to the same bytes.
  const comparable = given.length === MAC_BYTES ? given : Buffer.alloc(MAC_BYTES);
  const equal = timingSafeEqual(comparable, expected);
  if (!equal || given.length !== MAC_BYTES || expected.toString('base64url') !== signature) return { ok: false, reason: 'signature' };
  if (!CANONICAL_EXPIRY.test(expiry)) return { ok: false, reason: 'signature' };
  const expiresAtMs = Number(expiry);
  if (!Number.isSafeInteger(expiresAtMs)) return { ok: false, reason: 'signature' };
  if (!Number.isFinite(nowMs) || expiresAtMs <= nowMs) return { ok: false, reason: 'expired' };
  const params: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [name, value] of seen) params[name] = value;
  return { ok: true, params };
}
