/**
 * The certificate request svc sends a CA: a new ECDSA P-256 key, the name as CN and only DNS SAN,
 * and, with `autocert_must_staple`, the TLS Feature extension `status_request` (RFC 7633, the
 * "must-staple" extension). Built with @peculiar/x509 because acme-client's `createCsr` has no
 * way to add an extension.
 */
import { webcrypto } from 'node:crypto';
import { EC_P256, x509 } from '../x509.ts';

/** id-pe-tlsfeature (RFC 7633 §6). */
export const TLS_FEATURE_OID = '1.3.6.1.5.5.7.1.24';
/** DER of `Features ::= SEQUENCE OF INTEGER` holding status_request (5). */
const STATUS_REQUEST_FEATURE = new Uint8Array([0x30, 0x03, 0x02, 0x01, 0x05]);

export interface CertificateRequest {
  /** The new private key, PKCS#8 PEM. */
  readonly keyPem: string;
  /** The CSR, PEM. */
  readonly csrPem: string;
}

export async function createCertificateRequest(name: string, mustStaple: boolean): Promise<CertificateRequest> {
  const keys = (await webcrypto.subtle.generateKey(EC_P256, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const extensions: x509.Extension[] = [new x509.SubjectAlternativeNameExtension([{ type: 'dns', value: name }])];
  if (mustStaple) extensions.push(new x509.Extension(TLS_FEATURE_OID, false, STATUS_REQUEST_FEATURE));
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: `CN=${name}`,
    keys: keys as unknown as x509.Pkcs10CertificateRequestCreateParams['keys'],
    signingAlgorithm: EC_P256,
    extensions,
  });
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  const keyPem = `-----BEGIN PRIVATE KEY-----\n${pkcs8.toString('base64').replace(/.{64}/g, '$&\n').replace(/\n?$/, '\n')}-----END PRIVATE KEY-----\n`;
  return { keyPem, csrPem: csr.toString('pem') };
}

/** Whether a certificate (PEM) carries the must-staple TLS feature. */
export function hasMustStaple(certPem: string): boolean {
  const cert = new x509.X509Certificate(certPem);
  const ext = cert.getExtension(TLS_FEATURE_OID);
  return ext !== null && Buffer.from(ext.value).equals(Buffer.from(STATUS_REQUEST_FEATURE));
}
