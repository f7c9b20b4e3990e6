/**
 * HTTP Basic authentication of the metrics endpoint (`metrics_basic_auth`: base64 of
 * `username:password`, docs/observability.md "The metrics listener"). The comparison takes the same time whatever the client sent: both
 * credentials are hashed to fixed-size digests, compared with `timingSafeEqual`, so neither a
 * prefix nor the length of the expected credential leaks through timing.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { SvcError } from '../../core/errors.ts';

/** The expected credential, ready to compare (the decoded `username:password`, hashed). */
export interface BasicCredential {
  readonly digest: Buffer;
}

const digest = (text: Buffer): Buffer => createHash('sha256').update('svc-metrics-basic-auth\0').update(text).digest();

/** `user:password` split at the first colon (RFC 7617) has both a user name and a password. */
const hasUserAndPassword = (pair: Buffer): boolean => {
  const colon = pair.indexOf(0x3a);
  return colon > 0 && colon < pair.length - 1;
};

/**
 * Prepares `metrics_basic_auth` (its base64 text) for comparison. Fails closed: a credential
 * without a colon, or with an empty user name or password (`prometheus:`, `:`), throws instead of
 * protecting `/metrics` with a guessable pair. The compiler refuses these (SVC3040, SVC3041); this
 * covers a plan built elsewhere, so the listener does not start (docs/observability.md); the listener
 * reports it as `SVC_ERR_METRICS_MATERIAL` (listener.ts `readMetricsMaterial`).
 */
export function basicCredential(base64Text: string): BasicCredential {
  const pair = Buffer.from(base64Text.trim(), 'base64');
  if (!hasUserAndPassword(pair)) {
    throw new SvcError('SVC_ERR_METRICS_MATERIAL', 'metrics_basic_auth does not decode to `username:password` with a non-empty user name and password (SVC3041); set both');
  }
  return { digest: digest(pair) };
}

/**
 * Whether an `Authorization` header carries the expected credential. The scheme is matched without
 * regard to case (RFC 9110 §11.1); the credential is decoded, so padding or line-wrapping
 * differences in the client's base64 do not matter, and then compared in constant time.
 */
export function basicAuthorized(header: string | undefined, expected: BasicCredential): boolean {
  const m = header === undefined ? null : /^basic[ \t]+([A-Za-z0-9+/=]+)[ \t]*$/i.exec(header);
  const sent = m ? Buffer.from(m[1]!, 'base64') : Buffer.alloc(0);
  // Always compare (even without a header), so a missing header costs what a wrong one does. A
  // pair with an empty side never passes, whatever was expected (fail closed).
  return timingSafeEqual(digest(sent), expected.digest) && m !== null && hasUserAndPassword(sent);
}
