/**
 * TEST-ONLY OCSP material made in memory with the runtime's own libraries: certificates with an
 * OCSP responder URL (@peculiar/x509) and OCSP responses built field by field with
 * @peculiar/asn1-ocsp and signed with node:crypto, so each check of response.ts can be hit with a
 * response that differs from a good one in exactly one field.
 */
import { createPrivateKey, sign, webcrypto } from 'node:crypto';
import {
  BasicOCSPResponse,
  CertID,
  CertStatus,
  id_pkix_ocsp_basic,
  id_pkix_ocsp_nonce,
  OCSPResponse,
  OCSPResponseStatus,
  ResponderID,
  ResponseBytes,
  ResponseData,
  RevokedInfo,
  SingleResponse,
  KeyHash,
} from '@peculiar/asn1-ocsp';
import { AsnConvert, OctetString } from '@peculiar/asn1-schema';
import { AlgorithmIdentifier, Certificate, Extension } from '@peculiar/asn1-x509';
import { ocspSubject, SHA1, type OcspSubject } from '../../../../runtime/tls/ocsp/request.ts';
import { EC_P256, x509 } from '../../../../runtime/tls/x509.ts';

type Keys = x509.X509CertificateCreateSelfSignedParams['keys'];
const DAY = 86_400_000;
export const ECDSA_SHA256 = '1.2.840.10045.4.3.2';

export interface Made {
  readonly cert: x509.X509Certificate;
  readonly der: Buffer;
  readonly keys: Keys;
  readonly privateKeyPem: string;
}

let serialCounter = 0x1000;

async function made(cert: x509.X509Certificate, keys: Keys): Promise<Made> {
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey as unknown as webcrypto.CryptoKey));
  return { cert, der: Buffer.from(cert.rawData), keys, privateKeyPem: `-----BEGIN PRIVATE KEY-----\n${pkcs8.toString('base64')}\n-----END PRIVATE KEY-----\n` };
}

async function keys(): Promise<Keys> {
  return (await webcrypto.subtle.generateKey(EC_P256, true, ['sign', 'verify'])) as unknown as Keys;
}

export async function ca(cn: string): Promise<Made> {
  const k = await keys();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: (serialCounter++).toString(16),
    name: `CN=${cn}`,
    notBefore: new Date(Date.now() - DAY),
    notAfter: new Date(Date.now() + 30 * DAY),
    keys: k,
    signingAlgorithm: EC_P256,
    extensions: [new x509.BasicConstraintsExtension(true, undefined, true), new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true)],
  });
  return made(cert, k);
}

export interface LeafOptions {
  readonly cn: string;
  /** OCSP responder URL (Authority Information Access); none when undefined. */
  readonly ocsp?: string;
  readonly eku?: readonly string[];
  readonly notBefore?: Date;
  readonly notAfter?: Date;
  readonly serial?: string;
}

export async function issue(issuer: Made, o: LeafOptions): Promise<Made> {
  const k = await keys();
  const ext: x509.Extension[] = [new x509.BasicConstraintsExtension(false, undefined, true)];
  if (o.ocsp) ext.push(new x509.AuthorityInfoAccessExtension({ ocsp: [new x509.GeneralName('url', o.ocsp)] }));
  if (o.eku) ext.push(new x509.ExtendedKeyUsageExtension([...o.eku]));
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: o.serial ?? (serialCounter++).toString(16),
    subject: `CN=${o.cn}`,
    issuer: issuer.cert.subject,
    notBefore: o.notBefore ?? new Date(Date.now() - DAY),
    notAfter: o.notAfter ?? new Date(Date.now() + 10 * DAY),
    publicKey: k.publicKey,
    signingKey: issuer.keys.privateKey,
    signingAlgorithm: EC_P256,
    extensions: ext,
  });
  return made(cert, k);
}

export function subjectOf(leaf: Made, issuer: Made): OcspSubject {
  const s = ocspSubject(leaf.der, issuer.der);
  if (!s) throw new Error('the test leaf names no OCSP responder');
  return s;
}

export interface ResponseOptions {
  /** Signs the response (its PEM private key). */
  readonly signer: Made;
  /** Certificates carried in the response (a delegated responder's). */
  readonly certs?: readonly Made[];
  readonly status?: 'good' | 'revoked' | 'unknown';
  readonly serial?: Buffer;
  readonly issuerNameHash?: Buffer;
  readonly issuerKeyHash?: Buffer;
  readonly hashAlgorithm?: string;
  readonly thisUpdate?: Date;
  /** null: no nextUpdate. */
  readonly nextUpdate?: Date | null;
  readonly nonce?: Buffer;
  readonly signatureAlgorithm?: string;
  /** More SingleResponses, before the subject's (another certificate's status). */
  readonly others?: readonly Buffer[];
  /** Changes the signed bytes after signing (a forged field). */
  readonly tamper?: (tbs: Buffer) => Buffer;
}

function single(subject: OcspSubject, o: ResponseOptions, serial: Buffer): SingleResponse {
  const now = Date.now();
  const status = o.status ?? 'good';
  return new SingleResponse({
    certID: new CertID({
      hashAlgorithm: new AlgorithmIdentifier({ algorithm: o.hashAlgorithm ?? SHA1, parameters: null }),
      issuerNameHash: new OctetString(o.issuerNameHash ?? subject.issuerNameHash),
      issuerKeyHash: new OctetString(o.issuerKeyHash ?? subject.issuerKeyHash),
      serialNumber: new Uint8Array(serial).buffer,
    }),
    certStatus:
      status === 'good'
        ? new CertStatus({ good: null })
        : status === 'revoked'
          ? new CertStatus({ revoked: new RevokedInfo({ revocationTime: new Date(now - DAY) }) })
          : new CertStatus({ unknown: null }),
    thisUpdate: o.thisUpdate ?? new Date(now - 60_000),
    ...(o.nextUpdate === null ? {} : { nextUpdate: o.nextUpdate ?? new Date(now + DAY) }),
  });
}

/** A DER OCSPResponse about `subject`, good and current unless `o` says otherwise. */
export function respond(subject: OcspSubject, o: ResponseOptions): Buffer {
  const responses = [...(o.others ?? []).map((s) => single(subject, o, s)), single(subject, o, o.serial ?? subject.serial)];
  const data = new ResponseData({
    responderID: new ResponderID({ byKey: new KeyHash(subject.issuerKeyHash) }),
    producedAt: new Date(),
    responses,
    ...(o.nonce ? { responseExtensions: [new Extension({ extnID: id_pkix_ocsp_nonce, critical: false, extnValue: new OctetString(AsnConvert.serialize(new OctetString(o.nonce))) })] } : {}),
  });
  const tbs = Buffer.from(AsnConvert.serialize(data));
  const signature = sign('sha256', tbs, createPrivateKey(o.signer.privateKeyPem));
  const signed = o.tamper ? o.tamper(tbs) : tbs;
  const basic = new BasicOCSPResponse({
    tbsResponseData: AsnConvert.parse(signed, ResponseData),
    signatureAlgorithm: new AlgorithmIdentifier({ algorithm: o.signatureAlgorithm ?? ECDSA_SHA256 }),
    signature: new Uint8Array(signature).buffer,
    ...(o.certs ? { certs: o.certs.map((c) => AsnConvert.parse(c.der, Certificate)) } : {}),
  });
  return wrap(Buffer.from(AsnConvert.serialize(basic)));
}

/** A successful OCSPResponse around `basicDer` (`responseType` basic unless given). */
export function wrap(basicDer: Buffer, responseType = id_pkix_ocsp_basic): Buffer {
  return Buffer.from(
    AsnConvert.serialize(new OCSPResponse({ responseStatus: OCSPResponseStatus.successful, responseBytes: new ResponseBytes({ responseType, response: new OctetString(basicDer) }) })),
  );
}

/** An OCSPResponse with only a status (no responseBytes). */
export function statusOnly(status: OCSPResponseStatus): Buffer {
  return Buffer.from(AsnConvert.serialize(new OCSPResponse({ responseStatus: status })));
}
