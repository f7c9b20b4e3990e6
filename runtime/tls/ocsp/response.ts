/**
 * Checking an OCSP response before it is stapled (RFC 6960 §3.2, §4.2): a successful basic
 * response, signed by the certificate's issuer or by a responder certificate the issuer issued for
 * OCSP signing, naming the certificate (serial and issuer hashes), with status `good`, already
 * valid (`thisUpdate`, with a few minutes of clock skew) and not expired (`nextUpdate`). A response
 * that fails any of these is never stapled; a `revoked` one is reported as such.
 *
 * The response is parsed with the ASN.1 schemas of `@peculiar/asn1-ocsp` (the family of
 * `@peculiar/x509`); signatures are checked with node:crypto over the signed bytes as received
 * (`tbsResponseDataRaw`). Whatever the bytes, `checkResponse` either returns or throws
 * `OcspResponseError` (test/property/ocsp-response-fuzz.test.ts).
 */
import { verify, X509Certificate, type KeyObject } from 'node:crypto';
import { BasicOCSPResponse, id_kp_OCSPSigning, id_pkix_ocsp_basic, OCSPResponse, OCSPResponseStatus, type CertID } from '@peculiar/asn1-ocsp';
import { AsnConvert } from '@peculiar/asn1-schema';
import { OcspResponseError } from '../errors.ts';
import { SHA1, type OcspSubject } from './request.ts';

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
    throw new OcspResponseError(`unreadable response: ${e instanceof Error ? e.message : String(e)}`);
  }
}

function check(der: Buffer, subject: OcspSubject, now: number): CheckedResponse {
  const top = AsnConvert.parse(der, OCSPResponse);
  const status = top.responseStatus;
  if (status !== OCSPResponseStatus.successful) throw new OcspResponseError(`the responder answered status ${String(status)} (${OCSPResponseStatus[status] ?? 'unknown'})`);
  if (!top.responseBytes) throw new OcspResponseError('unreadable response: a successful response without responseBytes');
  if (top.responseBytes.responseType !== id_pkix_ocsp_basic) throw new OcspResponseError('not a basic OCSP response');
  const basic = AsnConvert.parse(top.responseBytes.response.buffer, BasicOCSPResponse);
  const tbs = basic.tbsResponseDataRaw;
  if (!tbs) throw new OcspResponseError('unreadable response: no tbsResponseData');
  const algorithm = basic.signatureAlgorithm.algorithm;
  if (!(algorithm in SIGNATURE_DIGESTS)) throw new OcspResponseError(`unsupported signature algorithm ${algorithm}`);
  const certs = (basic.certs ?? []).map((c) => new X509Certificate(Buffer.from(AsnConvert.serialize(c))));
  const signed = { data: Buffer.from(tbs), signature: Buffer.from(basic.signature), digest: SIGNATURE_DIGESTS[algorithm] ?? null };
  if (!signedByIssuerOrDelegate(signed, subject, certs, now)) throw new OcspResponseError('the response is not signed by the issuer or a responder it authorised');

  const single = basic.tbsResponseData.responses.find((r) => namesSubject(r.certID, subject));
  if (!single) throw new OcspResponseError('the response does not name the certificate');
  if (single.certStatus.revoked) throw new OcspResponseError('the certificate is revoked', true);
  if (single.certStatus.good !== null) throw new OcspResponseError('the responder does not know the certificate (status unknown)');
  const thisUpdate = single.thisUpdate.getTime();
  const nextUpdate = single.nextUpdate ? single.nextUpdate.getTime() : null;
  if (!Number.isFinite(thisUpdate) || (nextUpdate !== null && !Number.isFinite(nextUpdate))) throw new OcspResponseError('unreadable response: an invalid time');
  if (thisUpdate > now + CLOCK_SKEW_MS) throw new OcspResponseError('the response is not valid yet (thisUpdate in the future)');
  if (nextUpdate !== null && nextUpdate <= now) throw new OcspResponseError('the response has expired (nextUpdate passed)');
  return { der, thisUpdate, nextUpdate };
}

interface Signed {
  readonly data: Buffer;
  readonly signature: Buffer;
  readonly digest: string | null;
}

function verifies(s: Signed, key: KeyObject): boolean {
  try {
    return verify(s.digest, s.data, key, s.signature);
  } catch {
    return false;
  }
}

/** Whether the issuer, or a responder it delegated to (RFC 6960 §4.2.2.2), signed the response. */
function signedByIssuerOrDelegate(s: Signed, subject: OcspSubject, certs: readonly X509Certificate[], now: number): boolean {
  if (verifies(s, subject.issuerKey)) return true;
  return certs.some(
    (c) =>
      c.checkIssued(subject.issuer) &&
      c.verify(subject.issuerKey) &&
      (c.keyUsage ?? []).includes(id_kp_OCSPSigning) &&
      Date.parse(c.validFrom) <= now &&
      now <= Date.parse(c.validTo) &&
      verifies(s, c.publicKey),
  );
}

/** Whether a SingleResponse's CertID is the subject's (SHA-1 CertIDs; other hashes never match). */
function namesSubject(id: CertID, subject: OcspSubject): boolean {
  return (
    id.hashAlgorithm.algorithm === SHA1 &&
    Buffer.from(id.issuerNameHash.buffer).equals(subject.issuerNameHash) &&
    Buffer.from(id.issuerKeyHash.buffer).equals(subject.issuerKeyHash) &&
    Buffer.from(id.serialNumber).equals(subject.serial)
  );
}
