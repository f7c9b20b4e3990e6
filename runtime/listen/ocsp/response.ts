/**
 * Checking an OCSP response before it is stapled (RFC 6960 §3.2, §4.2): a successful basic
 * response, signed by the certificate's issuer or by a responder certificate the issuer issued for
 * OCSP signing, naming the certificate (serial and issuer hashes), with status `good`, already
 * valid (`thisUpdate`, with a few minutes of clock skew) and not expired (`nextUpdate`). A response
 * that fails any of these is never stapled; a `revoked` one is reported as such.
 */
import { verify, X509Certificate, type KeyObject } from 'node:crypto';
import { children, ctx, ctxPrimitive, expectTag, generalizedTime, oidText, parseDer, TAG, type Tlv } from './der.ts';
import type { OcspSubject } from './request.ts';

const BASIC = '1.3.6.1.5.5.7.48.1.1';
const OCSP_SIGNING = '1.3.6.1.5.5.7.3.9';
/** How far ahead of our clock a responder's `thisUpdate` may be. */
const CLOCK_SKEW_MS = 5 * 60_000;

/** Signature algorithms accepted, by OID: the digest for `crypto.verify` (null: part of the key type). */
const SIGNATURE_DIGESTS: Record<string, string | null> = {
  '1.2.840.113549.1.1.5': 'sha1',
  '1.2.840.113549.1.1.11': 'sha256',
  '1.2.840.113549.1.1.12': 'sha384',
  '1.2.840.113549.1.1.13': 'sha512',
  '1.2.840.10045.4.1': 'sha1',
  '1.2.840.10045.4.3.2': 'sha256',
  '1.2.840.10045.4.3.3': 'sha384',
  '1.2.840.10045.4.3.4': 'sha512',
  '1.3.101.112': null,
};

export class OcspResponseError extends Error {
  constructor(
    message: string,
    /** True when the responder said the certificate is revoked. */
    readonly revoked = false,
  ) {
    super(message);
    this.name = 'OcspResponseError';
  }
}

/** A response fit to staple. */
export interface CheckedResponse {
  readonly der: Buffer;
  readonly thisUpdate: number;
  /** null: the responder gives no `nextUpdate` (newer information is always available). */
  readonly nextUpdate: number | null;
}

/** Checks `der` as the status of `subject` at `now`; throws `OcspResponseError` when it may not be stapled. */
export function checkResponse(der: Buffer, subject: OcspSubject, now: number): CheckedResponse {
  try {
    return check(der, subject, now);
  } catch (e) {
    if (e instanceof OcspResponseError) throw e;
    throw new OcspResponseError(`unreadable response: ${(e as Error).message}`);
  }
}

function check(der: Buffer, subject: OcspSubject, now: number): CheckedResponse {
  const top = children(expectTag(parseDer(der), TAG.SEQUENCE, 'OCSPResponse'));
  const status = expectTag(top[0], TAG.ENUMERATED, 'responseStatus').content[0];
  if (status !== 0) throw new OcspResponseError(`the responder answered status ${String(status)} (${['successful', 'malformedRequest', 'internalError', 'tryLater', '4', 'sigRequired', 'unauthorized'][status ?? 4] ?? 'unknown'})`);
  const bytes = children(expectTag(children(expectTag(top[1], ctx(0), 'responseBytes'))[0], TAG.SEQUENCE, 'ResponseBytes'));
  if (oidText(expectTag(bytes[0], TAG.OID, 'responseType').content) !== BASIC) throw new OcspResponseError('not a basic OCSP response');
  const basic = children(expectTag(parseDer(expectTag(bytes[1], TAG.OCTET_STRING, 'response').content), TAG.SEQUENCE, 'BasicOCSPResponse'));
  const tbs = expectTag(basic[0], TAG.SEQUENCE, 'tbsResponseData');
  const algorithm = oidText(expectTag(children(expectTag(basic[1], TAG.SEQUENCE, 'signatureAlgorithm'))[0], TAG.OID, 'algorithm').content);
  const signature = expectTag(basic[2], TAG.BIT_STRING, 'signature').content.subarray(1);
  const certs = basic[3]?.tag === ctx(0) ? children(expectTag(children(basic[3])[0], TAG.SEQUENCE, 'certs')).map((c) => new X509Certificate(c.encoded)) : [];

  if (!(algorithm in SIGNATURE_DIGESTS)) throw new OcspResponseError(`unsupported signature algorithm ${algorithm}`);
  const signer = signerKey(tbs, signature, algorithm, subject, certs, now);
  if (!signer) throw new OcspResponseError('the response is not signed by the issuer or a responder it authorised');

  const data = children(tbs);
  let i = data[0]?.tag === ctx(0) ? 1 : 0; // version
  i += 1; // responderID
  i += 1; // producedAt
  const single = children(expectTag(data[i], TAG.SEQUENCE, 'responses')).find((r) => namesSubject(children(r)[0], subject));
  if (!single) throw new OcspResponseError('the response does not name the certificate');
  const parts = children(single);
  const certStatus = parts[1];
  if (certStatus?.tag === ctx(1)) throw new OcspResponseError('the certificate is revoked', true);
  if (certStatus?.tag !== ctxPrimitive(0)) throw new OcspResponseError('the responder does not know the certificate (status unknown)');
  const thisUpdate = generalizedTime(parts[2]!);
  const next = parts.slice(3).find((p) => p.tag === ctx(0));
  const nextUpdate = next ? generalizedTime(children(next)[0]!) : null;
  if (thisUpdate > now + CLOCK_SKEW_MS) throw new OcspResponseError('the response is not valid yet (thisUpdate in the future)');
  if (nextUpdate !== null && nextUpdate <= now) throw new OcspResponseError('the response has expired (nextUpdate passed)');
  return { der, thisUpdate, nextUpdate };
}

function verifies(tbs: Tlv, signature: Buffer, algorithm: string, key: KeyObject): boolean {
  try {
    return verify(SIGNATURE_DIGESTS[algorithm] ?? null, tbs.encoded, key, signature);
  } catch {
    return false;
  }
}

/** The key that signed the response: the issuer's, or a delegated responder's (RFC 6960 §4.2.2.2). */
function signerKey(tbs: Tlv, signature: Buffer, algorithm: string, subject: OcspSubject, certs: X509Certificate[], now: number): KeyObject | undefined {
  if (verifies(tbs, signature, algorithm, subject.issuerKey)) return subject.issuerKey;
  for (const c of certs) {
    const delegated =
      c.checkIssued(subject.issuer) &&
      c.verify(subject.issuerKey) &&
      (c.keyUsage ?? []).includes(OCSP_SIGNING) &&
      Date.parse(c.validFrom) <= now &&
      now <= Date.parse(c.validTo);
    if (delegated && verifies(tbs, signature, algorithm, c.publicKey)) return c.publicKey;
  }
  return undefined;
}

/** Whether a SingleResponse's CertID is the subject's (SHA-1 CertIDs; other hashes never match). */
function namesSubject(certId: Tlv | undefined, subject: OcspSubject): boolean {
  if (!certId || certId.tag !== TAG.SEQUENCE) return false;
  const [alg, nameHash, keyHash, serial] = children(certId);
  if (!alg || !nameHash || !keyHash || !serial) return false;
  if (oidText(expectTag(children(alg)[0], TAG.OID, 'hashAlgorithm').content) !== '1.3.14.3.2.26') return false;
  return nameHash.content.equals(subject.issuerNameHash) && keyHash.content.equals(subject.issuerKeyHash) && serial.content.equals(subject.serial);
}
