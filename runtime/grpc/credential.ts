/**
 * The credential every gRPC call between svc services carries (`shared_secret`, docs/grpc.md "The credential"):
 * a short-lived HS256 JWT in the `authorization: Bearer …` metadata, signed with a key derived from
 * `shared_secret` for this purpose only (runtime/core/keys.ts), so no other svc token verifies as
 * it and it verifies as no other token.
 *
 * Claims: `iss` and `aud` {@link ISSUER} / {@link AUDIENCE}, `iat`, `exp` ({@link TOKEN_LIFETIME_S}
 * after `iat`). A server accepts {@link CLOCK_TOLERANCE_S} of clock skew, and only what svc itself
 * mints: an `iat` further in the future than the skew, or a lifetime (`exp - iat`) longer than
 * {@link TOKEN_LIFETIME_S}, is refused, so a token minted with a stolen or leaked key, or on a
 * machine whose clock is far off, cannot live for years (docs/grpc.md). Nothing here ever puts a
 * secret or a token into an error message.
 */
import { SignJWT, decodeJwt, errors, jwtVerify } from 'jose';
import { deriveKey } from '../core/keys.ts';

export const ISSUER = 'svc';
export const AUDIENCE = 'svc-grpc';
/** How long a minted token is valid. */
export const TOKEN_LIFETIME_S = 120;
/** A client mints a new token when the one it holds has less than this left. */
const RENEW_BEFORE_S = 60;
/** Clock skew a server tolerates between services. */
export const CLOCK_TOLERANCE_S = 5;
/** The metadata key of the credential. */
export const METADATA_KEY = 'authorization';

/** The key both sides derive from the decoded `shared_secret`. */
export function serviceCredentialKey(sharedSecret: Buffer): Uint8Array {
  return deriveKey(sharedSecret, 'grpc service credential');
}

/** Mints tokens for a client, reusing one until it is close to its expiry. */
export class CredentialMinter {
  readonly #key: Uint8Array;
  readonly #now: () => number;
  #token: { readonly value: string; readonly expS: number } | undefined;

  constructor(key: Uint8Array, now: () => number = Date.now) {
    this.#key = key;
    this.#now = now;
  }

  /** The `authorization` metadata value: `Bearer <jwt>`. */
  async header(): Promise<string> {
    const nowS = Math.floor(this.#now() / 1000);
    if (this.#token === undefined || this.#token.expS - nowS < RENEW_BEFORE_S) {
      const expS = nowS + TOKEN_LIFETIME_S;
      const value = await new SignJWT({}).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).setIssuer(ISSUER).setAudience(AUDIENCE).setIssuedAt(nowS).setExpirationTime(expS).sign(this.#key);
      this.#token = { value, expS };
    }
    return `Bearer ${this.#token.value}`;
  }
}

/** Why a call's credential was refused; safe to log (names no secret, no token). */
export type CredentialProblem = 'missing' | 'malformed' | 'bad-signature' | 'expired' | 'invalid-claims';

/**
 * Checks the `authorization` metadata values of a call. Resolves undefined when one valid token is
 * present, else the problem.
 */
export async function checkCredential(key: Uint8Array, values: readonly unknown[], now: () => number = Date.now): Promise<CredentialProblem | undefined> {
  if (values.length === 0) return 'missing';
  const value = values[0];
  if (values.length !== 1 || typeof value !== 'string') return 'malformed';
  const match = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/.exec(value);
  if (match === null) return 'malformed';
  try {
    const nowMs = now();
    const { payload } = await jwtVerify(match[1]!, key, { algorithms: ['HS256'], issuer: ISSUER, audience: AUDIENCE, clockTolerance: CLOCK_TOLERANCE_S, requiredClaims: ['exp', 'iat'], currentDate: new Date(nowMs) });
    // jose checks `iat` only to be a number: svc never mints one ahead of its clock, nor a token
    // living longer than TOKEN_LIFETIME_S.
    const { iat, exp } = payload as { iat: number; exp: number };
    if (iat > Math.floor(nowMs / 1000) + CLOCK_TOLERANCE_S) return 'invalid-claims';
    if (exp - iat > TOKEN_LIFETIME_S) return 'invalid-claims';
    return undefined;
  } catch (err) {
    if (err instanceof errors.JWTExpired) return 'expired';
    if (err instanceof errors.JWSSignatureVerificationFailed) return 'bad-signature';
    if (err instanceof errors.JWTClaimValidationFailed) return 'invalid-claims';
    return 'malformed';
  }
}

/** Tokens remembered by a {@link CredentialChecker}: one per calling process is typical. */
const MAX_REMEMBERED = 256;

/**
 * {@link checkCredential} for a server, remembering the tokens it verified until their expiry: a
 * client sends the same token for a minute or more, so most calls skip the HMAC. Only an exact,
 * already verified header is remembered; an expired one is checked (and refused) again.
 */
export class CredentialChecker {
  readonly #key: Uint8Array;
  readonly #now: () => number;
  readonly #verified = new Map<string, number>();

  constructor(key: Uint8Array, now: () => number = Date.now) {
    this.#key = key;
    this.#now = now;
  }

  async check(values: readonly unknown[]): Promise<CredentialProblem | undefined> {
    const value = values.length === 1 ? values[0] : undefined;
    if (typeof value === 'string') {
      const expMs = this.#verified.get(value);
      if (expMs !== undefined && this.#now() < expMs) return undefined;
      this.#verified.delete(value);
    }
    const problem = await checkCredential(this.#key, values, this.#now);
    if (problem === undefined && typeof value === 'string') {
      const exp = decodeJwt(value.slice('Bearer '.length)).exp;
      if (typeof exp === 'number') {
        if (this.#verified.size >= MAX_REMEMBERED) this.#verified.delete(this.#verified.keys().next().value!);
        this.#verified.set(value, exp * 1000);
      }
    }
    return problem;
  }
}
