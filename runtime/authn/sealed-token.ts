/**
 * Short-lived encrypted tokens svc hands itself through the browser: the sign-in flow state (PKCE
 * verifier, state, nonce), the hand-off from the authenticate service to a route's domain, and the
 * programmatic-login bearer token. Each is a compact JWE (`dir`, A256GCM, via jose) under a key of
 * its own purpose (keys.ts), with `exp` checked on opening. Opening never throws: any failure is
 * `undefined`, which callers treat as "no such token" (fail closed).
 */
import { EncryptJWT, jwtDecrypt, type JWTPayload } from 'jose';

/** Seals `claims` for `ttlMs` from `nowMs`. */
export async function sealToken(claims: Readonly<Record<string, unknown>>, key: Uint8Array, nowMs: number, ttlMs: number): Promise<string> {
  const iat = Math.floor(nowMs / 1000);
  return new EncryptJWT({ ...claims })
    .setProtectedHeader({ alg: 'dir', enc: 'A256GCM' })
    .setIssuedAt(iat)
    .setExpirationTime(Math.ceil((nowMs + ttlMs) / 1000))
    .encrypt(key);
}

/** Opens a token made by {@link sealToken}: its claims, or undefined when malformed, forged or expired. */
export async function openToken(token: string | undefined | null, key: Uint8Array, nowMs: number): Promise<JWTPayload | undefined> {
  if (typeof token !== 'string' || token === '' || token.length > 8192) return undefined;
  try {
    const { payload } = await jwtDecrypt(token, key, { currentDate: new Date(nowMs), keyManagementAlgorithms: ['dir'], contentEncryptionAlgorithms: ['A256GCM'], clockTolerance: 0 });
    return payload;
  } catch {
    return undefined;
  }
}
