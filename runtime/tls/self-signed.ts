/**
 * Self-signed certificates for service URLs that no configured certificate matches (docs/running.md "TLS":
 * "a self-signed certificate is generated and served"). Generated lazily, once per name, with an
 * ECDSA P-256 key; the cache is shared across reloads of the TLS files, since a generated
 * certificate depends on nothing but its name.
 */
import { randomBytes, webcrypto } from 'node:crypto';
import { loadFeature } from '../core/load-feature.ts';
import type { x509 as X509 } from './x509.ts';

export interface GeneratedCertificate {
  readonly name: string;
  readonly certPem: string;
  readonly keyPem: string;
}

const DAY_MS = 86_400_000;

/** Generates a certificate for `name` (subject CN and the only DNS SAN), valid for one year. */
export async function generateSelfSigned(name: string, now: Date = new Date()): Promise<GeneratedCertificate> {
  // The X.509 library (about 200 modules) is loaded by the first certificate generated, never by a
  // process that needs none.
  const { EC_P256, x509 } = await loadFeature('self-signed certificates', () => import('./x509.ts'));
  const keys = (await webcrypto.subtle.generateKey(EC_P256, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  // Serial: 16 random bytes with the top bit cleared, so the DER integer stays positive.
  const serial = randomBytes(16);
  serial[0] = (serial[0] ?? 0) & 0x7f;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial.toString('hex'),
    name: [{ CN: [name] }, { O: ['svc self-signed'] }],
    notBefore: new Date(now.getTime() - DAY_MS),
    notAfter: new Date(now.getTime() + 365 * DAY_MS),
    keys: keys as unknown as X509.X509CertificateCreateSelfSignedParams['keys'],
    signingAlgorithm: EC_P256,
    extensions: [
      new x509.SubjectAlternativeNameExtension([{ type: 'dns', value: name }]),
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
    ],
  });
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  const keyPem = `-----BEGIN PRIVATE KEY-----\n${pkcs8.toString('base64').replace(/.{64}/g, '$&\n').replace(/\n?$/, '\n')}-----END PRIVATE KEY-----\n`;
  return { name, certPem: cert.toString('pem'), keyPem };
}

/**
 * Generated certificates by name. `get` starts at most one generation per name; concurrent
 * handshakes for the same name share it. A failed generation is forgotten so a later handshake
 * tries again.
 */
export class SelfSignedCache {
  readonly #byName = new Map<string, Promise<GeneratedCertificate>>();

  get(name: string): Promise<GeneratedCertificate> {
    let p = this.#byName.get(name);
    if (!p) {
      p = generateSelfSigned(name);
      p.catch(() => this.#byName.delete(name));
      this.#byName.set(name, p);
    }
    return p;
  }

  /** How many names have a certificate generated or under way. */
  get size(): number {
    return this.#byName.size;
  }
}
