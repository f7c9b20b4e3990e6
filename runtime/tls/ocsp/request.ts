/**
 * What stapling needs to know about one served certificate (RFC 6960, RFC 7633): its OCSP
 * responder URL (Authority Information Access), whether it is must-staple (TLS Feature
 * `status_request`), its CertID, and the DER OCSPRequest asking for its status.
 *
 * The certificates are read and the request is written with the ASN.1 schemas of
 * `@peculiar/asn1-x509` and `@peculiar/asn1-ocsp` (the family of `@peculiar/x509`), not by hand.
 */
import { createHash, X509Certificate, type KeyObject } from 'node:crypto';
import { CertID, OCSPRequest, Request, TBSRequest } from '@peculiar/asn1-ocsp';
import { AsnArray, AsnConvert, AsnPropTypes, AsnType, AsnTypeTypes, OctetString } from '@peculiar/asn1-schema';
import { AlgorithmIdentifier, AuthorityInfoAccessSyntax, Certificate, id_pe_authorityInfoAccess } from '@peculiar/asn1-x509';
import { OcspResponseError } from '../errors.ts';

export const SHA1 = '1.3.14.3.2.26';
const TLS_FEATURE = '1.3.6.1.5.5.7.1.24';
const AD_OCSP = '1.3.6.1.5.5.7.48.1';
/** TLS extension number of `status_request` (RFC 6066 §8), as listed in a TLS Feature extension. */
const STATUS_REQUEST = 5;

/** TLS Feature (RFC 7633 §6): `Features ::= SEQUENCE OF INTEGER`. No schema ships for it. */
class TlsFeatures extends AsnArray<number> {}
AsnType({ type: AsnTypeTypes.Sequence, itemType: AsnPropTypes.Integer })(TlsFeatures);

/** A certificate whose status svc can staple. */
export interface OcspSubject {
  readonly leaf: X509Certificate;
  readonly issuer: X509Certificate;
  readonly issuerKey: KeyObject;
  /** The responder URL from the certificate (`http:` / `https:`). */
  readonly url: string;
  /** RFC 7633: the certificate promises a staple; clients that enforce it refuse it without one. */
  readonly mustStaple: boolean;
  /** The CertID fields the response must name (SHA-1 hashes, as RFC 5019 responders expect). */
  readonly serial: Buffer;
  readonly issuerNameHash: Buffer;
  readonly issuerKeyHash: Buffer;
  /** DER OCSPRequest for this certificate alone, without a nonce (cacheable, RFC 5019). */
  readonly request: Buffer;
}

function extensionValue(cert: Certificate, id: string): ArrayBuffer | undefined {
  return cert.tbsCertificate.extensions?.find((e) => e.extnID === id)?.extnValue.buffer;
}

/** Whether the certificate carries a TLS Feature extension listing `status_request`. */
function isMustStaple(cert: Certificate): boolean {
  const v = extensionValue(cert, TLS_FEATURE);
  if (!v) return false;
  return [...AsnConvert.parse(v, TlsFeatures)].some((n) => n === STATUS_REQUEST);
}

/** The first OCSP responder URL of the certificate's Authority Information Access, if any. */
function ocspUrl(leaf: X509Certificate): string | undefined {
  const v = extensionValue(AsnConvert.parse(leaf.raw, Certificate), id_pe_authorityInfoAccess);
  if (!v) return undefined;
  for (const d of AsnConvert.parse(v, AuthorityInfoAccessSyntax)) {
    const uri = d.accessMethod === AD_OCSP ? d.accessLocation.uniformResourceIdentifier : undefined;
    if (uri !== undefined && /^https?:\/\/\S+$/.test(uri)) return uri;
  }
  return undefined;
}

const sha1 = (b: ArrayBuffer | Buffer): Buffer => createHash('sha1').update(Buffer.from(b as ArrayBuffer)).digest();

/**
 * The stapling facts of `leafDer` issued by `issuerDer`, or undefined when it names no OCSP
 * responder (nothing to staple: self-signed and most private-CA certificates). Throws on a
 * certificate it cannot read, or when `issuerDer` did not issue `leafDer`.
 */
export function ocspSubject(leafDer: Buffer, issuerDer: Buffer): OcspSubject | undefined {
  const leaf = new X509Certificate(leafDer);
  const url = ocspUrl(leaf);
  if (url === undefined) return undefined;
  const issuer = new X509Certificate(issuerDer);
  if (!leaf.checkIssued(issuer) || !leaf.verify(issuer.publicKey)) throw new OcspResponseError('the chain does not hold the issuer of the certificate');
  const l = AsnConvert.parse(leafDer, Certificate);
  const i = AsnConvert.parse(issuerDer, Certificate).tbsCertificate;
  // RFC 6960 §4.1.1: the hash of the issuer's DER-encoded name, and of its public key's BIT STRING value.
  const issuerNameHash = sha1(AsnConvert.serialize(i.subject));
  const issuerKeyHash = sha1(i.subjectPublicKeyInfo.subjectPublicKey);
  const serial = Buffer.from(l.tbsCertificate.serialNumber);
  const reqCert = new CertID({
    hashAlgorithm: new AlgorithmIdentifier({ algorithm: SHA1, parameters: null }),
    issuerNameHash: new OctetString(issuerNameHash),
    issuerKeyHash: new OctetString(issuerKeyHash),
    serialNumber: l.tbsCertificate.serialNumber,
  });
  const request = Buffer.from(AsnConvert.serialize(new OCSPRequest({ tbsRequest: new TBSRequest({ requestList: [new Request({ reqCert })] }) })));
  return { leaf, issuer, issuerKey: issuer.publicKey, url, mustStaple: isMustStaple(l), serial, issuerNameHash, issuerKeyHash, request };
}
