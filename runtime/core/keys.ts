/**
 * The keys svc derives from its configured secrets, one per purpose (HKDF-SHA256), so a value made
 * for one purpose never verifies or opens as another: a sign-in hand-off is not a bearer token, a
 * sign-out CSRF token is not a signed parameter.
 *
 * - `cookie_secret` keys what lives in the user's browser: the session cookie (its own derivation in
 *   session-cookie.ts), the sign-in flow cookie and the sign-out CSRF token.
 * - `shared_secret` keys what one svc service hands another (docs/grpc.md "The credential"): signed redirect parameters,
 *   sign-in hand-offs, programmatic tokens, and the Redis session store's sealing and key-name keys
 *   (runtime/databroker/redis-seal.ts). Without one, `cookie_secret` stands in.
 */
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

export type KeyPurpose = 'sign-in flow' | 'hand-off' | 'programmatic token' | 'csrf' | 'session store seal' | 'session store names' | 'grpc service credential';

/** A 32-byte key for `purpose`, derived from `secret`. */
export function deriveKey(secret: Buffer, purpose: KeyPurpose): Uint8Array {
  return new Uint8Array(hkdfSync('sha256', secret, Buffer.alloc(0), `svc ${purpose} v1`, 32));
}

/** The sign-out CSRF token of a session: HMAC of its handle, so it is bound to that session alone. */
export function csrfToken(key: Uint8Array, sessionId: string): string {
  return createHmac('sha256', key).update(`signout\0${sessionId}`).digest('base64url');
}

/** Checks a CSRF token in constant time. */
export function csrfTokenValid(key: Uint8Array, sessionId: string, token: string | undefined | null): boolean {
  if (typeof token !== 'string' || token.length !== 43) return false;
  const expected = Buffer.from(csrfToken(key, sessionId));
  const given = Buffer.from(token);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
