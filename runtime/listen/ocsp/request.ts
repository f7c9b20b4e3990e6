/**
 * What stapling needs to know about one served certificate (RFC 6960, RFC 7633): its OCSP
 * responder URL (Authority Information Access), whether it is must-staple (TLS Feature
 * `status_request`), its CertID, and the DER OCSPRequest asking for its status.
 */
import { createHash, X509Certificate, type KeyObject } from 'node:crypto';
import { children, encode, expectTag, oidContent, oidText, parseDer, TAG, ctx, type Tlv } from './der.ts';

const SHA1 = '1.3.14.3.2.26';
const TLS_FEATURE = '1.3.6.1.5.5.7.1.24';
/** TLS extension number of `status_request` (RFC 6066 §8), as listed in a TLS Feature extension. */
const STATUS_REQUEST = 5;

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

/** The parts of a certificate's TBSCertificate svc reads. */
interface TbsParts {
  readonly serial: Tlv;
  readonly subject: Tlv;
  readonly subjectPublicKey: Buffer;
  readonly extensions: ReadonlyMap<string, Buffer>;
}

function tbsParts(der: Buffer): TbsParts {
  const cert = expectTag(parseDer(der), TAG.SEQUENCE, 'Certificate');
  const tbs = children(expectTag(children(cert)[0], TAG.SEQUENCE, 'TBSCertificate'));
  let i = tbs[0]?.tag === ctx(0) ? 1 : 0; // version
  const serial = expectTag(tbs[i++], TAG.INTEGER, 'serialNumber');
  i += 1; // signature
  i += 1; // issuer
  i += 1; // validity
  const subject = expectTag(tbs[i++], TAG.SEQUENCE, 'subject');
  const spki = children(expectTag(tbs[i++], TAG.SEQUENCE, 'subjectPublicKeyInfo'));
  const bits = expectTag(spki[1], TAG.BIT_STRING, 'subjectPublicKey').content;
  const extensions = new Map<string, Buffer>();
  for (const t of tbs.slice(i)) {
    if (t.tag !== ctx(3)) continue;
    for (const ext of children(expectTag(children(t)[0], TAG.SEQUENCE, 'extensions'))) {
      const parts = children(ext);
      const id = oidText(expectTag(parts[0], TAG.OID, 'extnID').content);
      extensions.set(id, expectTag(parts[parts.length - 1], TAG.OCTET_STRING, 'extnValue').content);
    }
  }
  // The BIT STRING's first byte counts unused bits (0 for keys).
  return { serial, subject, subjectPublicKey: bits.subarray(1), extensions };
}

/** Whether the certificate carries a TLS Feature extension listing `status_request`. */
function isMustStaple(extensions: ReadonlyMap<string, Buffer>): boolean {
  const v = extensions.get(TLS_FEATURE);
  if (!v) return false;
  return children(expectTag(parseDer(v), TAG.SEQUENCE, 'TLS Feature')).some((n) => n.tag === TAG.INTEGER && n.content.length === 1 && n.content[0] === STATUS_REQUEST);
}

/** The first OCSP responder URL of the certificate's Authority Information Access, if any. */
export function ocspUrl(leaf: X509Certificate): string | undefined {
  const m = /^OCSP - URI:(https?:\/\/\S+)$/m.exec(leaf.infoAccess ?? '');
  return m?.[1];
}

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
  if (!leaf.checkIssued(issuer) || !leaf.verify(issuer.publicKey)) throw new Error('the chain does not hold the issuer of the certificate');
  const l = tbsParts(leafDer);
  const i = tbsParts(issuerDer);
  const sha1 = (b: Buffer) => createHash('sha1').update(b).digest();
  const issuerNameHash = sha1(i.subject.encoded);
  const issuerKeyHash = sha1(i.subjectPublicKey);
  const certId = encode(
    TAG.SEQUENCE,
    encode(TAG.SEQUENCE, encode(TAG.OID, oidContent(SHA1)), encode(TAG.NULL)),
    encode(TAG.OCTET_STRING, issuerNameHash),
    encode(TAG.OCTET_STRING, issuerKeyHash),
    encode(TAG.INTEGER, l.serial.content),
  );
  // OCSPRequest { TBSRequest { requestList { Request { reqCert } } } }
  const request = encode(TAG.SEQUENCE, encode(TAG.SEQUENCE, encode(TAG.SEQUENCE, encode(TAG.SEQUENCE, certId))));
  return { leaf, issuer, issuerKey: issuer.publicKey, url, mustStaple: isMustStaple(l.extensions), serial: Buffer.from(l.serial.content), issuerNameHash, issuerKeyHash, request };
}
