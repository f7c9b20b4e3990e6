/**
 * A test PKI generated in memory with the same X.509 library as the runtime (no openssl needed,
 * no private keys in the repository): CAs, server and client certificates, CRLs. ECDSA P-256.
 * TEST KEYS ONLY.
 */
import { randomBytes, webcrypto } from 'node:crypto';
import { EC_P256, x509 } from '../../../runtime/tls/x509.ts';

type Keys = x509.X509CertificateCreateSelfSignedParams['keys'];

export interface Issued {
  readonly certPem: string;
  readonly keyPem: string;
  /** Serial number, lower-case hex. */
  readonly serial: string;
  readonly cert: x509.X509Certificate;
  readonly keys: Keys;
}

const DAY = 86_400_000;

function toPem(der: ArrayBuffer, label: string): string {
  const b64 = Buffer.from(der).toString('base64').replace(/.{64}/g, '$&\n').replace(/\n?$/, '\n');
  return `-----BEGIN ${label}-----\n${b64}-----END ${label}-----\n`;
}

async function newKeys(): Promise<Keys> {
  return (await webcrypto.subtle.generateKey(EC_P256, true, ['sign', 'verify'])) as unknown as Keys;
}

function newSerial(): string {
  const b = randomBytes(8);
  b[0] = ((b[0] ?? 0) & 0x7f) | 0x10;
  return b.toString('hex');
}

async function finish(cert: x509.X509Certificate, keys: Keys, serial: string): Promise<Issued> {
  const pkcs8 = await webcrypto.subtle.exportKey('pkcs8', keys.privateKey as unknown as webcrypto.CryptoKey);
  return { certPem: cert.toString('pem'), keyPem: toPem(pkcs8, 'PRIVATE KEY'), serial, cert, keys };
}

/** A self-signed CA. */
export async function makeCa(cn: string): Promise<Issued> {
  const keys = await newKeys();
  const serial = newSerial();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial,
    name: `CN=${cn}`,
    notBefore: new Date(Date.now() - DAY),
    notAfter: new Date(Date.now() + 30 * DAY),
    keys,
    signingAlgorithm: EC_P256,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return finish(cert, keys, serial);
}

export interface IssueOptions {
  readonly cn: string;
  readonly dns?: readonly string[];
  readonly usage?: 'server' | 'client' | 'ca';
  readonly notBefore?: Date;
  readonly notAfter?: Date;
}

/** A certificate signed by `ca`. */
export async function issue(ca: Issued, o: IssueOptions): Promise<Issued> {
  const keys = await newKeys();
  const serial = newSerial();
  const usage = o.usage ?? 'server';
  const ext: x509.Extension[] = [
    new x509.BasicConstraintsExtension(usage === 'ca', undefined, true),
    await x509.AuthorityKeyIdentifierExtension.create(ca.keys.publicKey),
    await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
  ];
  if (usage === 'ca') ext.push(new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true));
  else ext.push(new x509.ExtendedKeyUsageExtension([usage === 'server' ? x509.ExtendedKeyUsage.serverAuth : x509.ExtendedKeyUsage.clientAuth]));
  if (o.dns && o.dns.length > 0) ext.push(new x509.SubjectAlternativeNameExtension(o.dns.map((value) => ({ type: 'dns' as const, value }))));
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial,
    subject: `CN=${o.cn}`,
    issuer: ca.cert.subject,
    notBefore: o.notBefore ?? new Date(Date.now() - DAY),
    notAfter: o.notAfter ?? new Date(Date.now() + 10 * DAY),
    publicKey: keys.publicKey,
    signingKey: ca.keys.privateKey,
    signingAlgorithm: EC_P256,
    extensions: ext,
  });
  return finish(cert, keys, serial);
}

/** A CRL of `ca` revoking `serials`; `nextUpdate` defaults to a week ahead. */
export async function makeCrl(ca: Issued, serials: readonly string[], nextUpdate: Date = new Date(Date.now() + 7 * DAY)): Promise<string> {
  const crl = await x509.X509CrlGenerator.create({
    issuer: ca.cert.subject,
    thisUpdate: new Date(Date.now() - DAY),
    nextUpdate,
    entries: serials.map((serialNumber) => ({ serialNumber, revocationDate: new Date(Date.now() - DAY) })),
    signingKey: ca.keys.privateKey,
    signingAlgorithm: EC_P256,
  });
  // RFC 7468 label (the library writes `CRL`; the compiler and OpenSSL expect `X509 CRL`).
  return toPem(crl.rawData, 'X509 CRL');
}
