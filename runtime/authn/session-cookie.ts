/**
 * The session cookie (docs/architecture.md §3): AES-256-GCM with a key derived from `cookie_secret`, holding
 * only a session handle and an expiry; identity stays server-side in the data broker, so sign-out can
 * revoke for real (docs/security.md S30). Hand-written on node:crypto because the format is four fields
 * and no library fits it more simply.
 *
 * Wire format (base64url, no padding):
 * `version (1 byte, 0x01) | nonce (12 random bytes) | ciphertext | GCM tag (16 bytes)`.
 * The additional authenticated data is the version byte followed by the cookie name (UTF-8), so a
 * value copied under another cookie name, or relabelled with another version, does not open.
 * The plaintext is the JSON `{"h": handle, "e": expiresAtMs}`.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { SvcError } from '../core/errors.ts';

/** The only format version this module writes or reads. */
export const SESSION_COOKIE_VERSION = 1;
/** Longest cookie value {@link openSessionCookie} looks at; anything longer is `malformed`. */
export const MAX_SESSION_COOKIE_CHARS = 4096;
/** Longest session handle {@link sealSessionCookie} accepts (keeps sealed cookies well under the cap). */
export const MAX_SESSION_HANDLE_CHARS = 1024;

const KEY_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const HKDF_INFO = 'svc session cookie v1';
const BASE64URL = /^[A-Za-z0-9_-]*$/;

/** What a session cookie carries. */
export interface SessionCookiePayload {
  /** Opaque handle of the server-side session record (the data broker key). */
  readonly handle: string;
  /** Absolute expiry, milliseconds since the epoch; the cookie is refused at or after it. */
  readonly expiresAtMs: number;
}

/** Why a cookie did not open. Every reason means "unauthenticated" (docs/security.md S22). */
export type SessionCookieFailure = 'malformed' | 'version' | 'auth' | 'expired';

/** Result of {@link openSessionCookie}. */
export type OpenedSessionCookie =
  | { readonly ok: true; readonly handle: string; readonly expiresAtMs: number }
  | { readonly ok: false; readonly reason: SessionCookieFailure };

/** A programming error when sealing (bad key or payload); never raised for a client's cookie. */
export class SessionCookieError extends SvcError<'SVC_ERR_SESSION_COOKIE_INPUT'> {
  constructor(message: string, options?: ErrorOptions) {
    super('SVC_ERR_SESSION_COOKIE_INPUT', message, options);
    this.name = 'SessionCookieError';
  }
}

function deriveKey(cookieSecret: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', cookieSecret, Buffer.alloc(0), HKDF_INFO, KEY_BYTES));
}

function aad(cookieName: string): Buffer {
  return Buffer.concat([Buffer.of(SESSION_COOKIE_VERSION), Buffer.from(cookieName, 'utf8')]);
}

/**
 * Seals `payload` into a cookie value for the cookie named `cookieName`, encrypted under a key
 * derived (HKDF-SHA256, info `svc session cookie v1`) from `cookieSecret`. Each call uses a fresh
 * random nonce, so sealing the same payload twice gives different values.
 *
 * @throws {SessionCookieError} when `cookieSecret` is not 32 bytes, the handle is empty or longer
 *   than {@link MAX_SESSION_HANDLE_CHARS}, or `expiresAtMs` is not a safe integer (caller bugs).
 */
export function sealSessionCookie(payload: SessionCookiePayload, cookieSecret: Buffer, cookieName: string): string {
  if (!Buffer.isBuffer(cookieSecret) || cookieSecret.length !== KEY_BYTES) {
    throw new SessionCookieError(`cookie secret must be ${KEY_BYTES} bytes`);
  }
  const { handle, expiresAtMs } = payload;
  if (typeof handle !== 'string' || handle === '' || handle.length > MAX_SESSION_HANDLE_CHARS) {
    throw new SessionCookieError(`session handle must be 1 to ${MAX_SESSION_HANDLE_CHARS} characters`);
  }
  if (!Number.isSafeInteger(expiresAtMs)) throw new SessionCookieError('expiresAtMs must be a safe integer');
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv('aes-256-gcm', deriveKey(cookieSecret), nonce, { authTagLength: TAG_BYTES });
  cipher.setAAD(aad(cookieName));
  const plaintext = Buffer.from(JSON.stringify({ h: handle, e: expiresAtMs }), 'utf8');
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([Buffer.of(SESSION_COOKIE_VERSION), nonce, ciphertext, cipher.getAuthTag()]).toString('base64url');
}

/**
 * Opens a cookie value sealed by {@link sealSessionCookie} for the cookie named `cookieName`.
 * Never throws (docs/security.md S22): anything wrong is a failure result.
 *
 * - `malformed`: not canonical base64url, longer than {@link MAX_SESSION_COOKIE_CHARS}, too short,
 *   or an authenticated plaintext of the wrong shape (only possible with a leaked key);
 * - `version`: a format version this build does not read;
 * - `auth`: the GCM tag does not verify (wrong key, wrong cookie name, any tampering);
 * - `expired`: authentic, but `expiresAtMs <= nowMs`.
 */
export function openSessionCookie(value: string, cookieSecret: Buffer, cookieName: string, nowMs: number): OpenedSessionCookie {
  try {
    return open(value, cookieSecret, cookieName, nowMs);
  } catch {
    // INVARIANT (fail-closed): an unexpected failure is never an identity.
    return { ok: false, reason: 'auth' };
  }
}

function open(value: string, cookieSecret: Buffer, cookieName: string, nowMs: number): OpenedSessionCookie {
  if (typeof value !== 'string' || value.length > MAX_SESSION_COOKIE_CHARS || !BASE64URL.test(value)) {
    return { ok: false, reason: 'malformed' };
  }
  const raw = Buffer.from(value, 'base64url');
  // Canonical encoding only: otherwise the unused low bits of the last character would give one
  // cookie several spellings.
  if (raw.toString('base64url') !== value) return { ok: false, reason: 'malformed' };
  if (raw.length < 1) return { ok: false, reason: 'malformed' };
  if (raw[0] !== SESSION_COOKIE_VERSION) return { ok: false, reason: 'version' };
  if (raw.length < 1 + NONCE_BYTES + 1 + TAG_BYTES) return { ok: false, reason: 'malformed' };
  if (!Buffer.isBuffer(cookieSecret) || cookieSecret.length !== KEY_BYTES || typeof cookieName !== 'string') {
    return { ok: false, reason: 'auth' };
  }
  const nonce = raw.subarray(1, 1 + NONCE_BYTES);
  const ciphertext = raw.subarray(1 + NONCE_BYTES, raw.length - TAG_BYTES);
  const tag = raw.subarray(raw.length - TAG_BYTES);
  let plaintext: Buffer;
  try {
    const decipher = createDecipheriv('aes-256-gcm', deriveKey(cookieSecret), nonce, { authTagLength: TAG_BYTES });
    decipher.setAAD(aad(cookieName));
    decipher.setAuthTag(tag);
    plaintext = Buffer.concat([decipher.update(ciphertext), decipher.final()]);
  } catch {
    return { ok: false, reason: 'auth' };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(plaintext.toString('utf8'));
  } catch {
    return { ok: false, reason: 'malformed' };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return { ok: false, reason: 'malformed' };
  const { h, e } = parsed as { h?: unknown; e?: unknown };
  if (typeof h !== 'string' || h === '' || typeof e !== 'number' || !Number.isSafeInteger(e)) {
    return { ok: false, reason: 'malformed' };
  }
  // A NaN or non-finite clock must not make every cookie immortal.
  if (!Number.isFinite(nowMs) || e <= nowMs) return { ok: false, reason: 'expired' };
  return { ok: true, handle: h, expiresAtMs: e };
}
