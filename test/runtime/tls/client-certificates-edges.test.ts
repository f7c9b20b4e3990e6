/**
 * The client-certificate path check (runtime/tls/client-certificates.ts `ClientTrust.verify`)
 * against the edge cases path-validation libraries test for, with TEST-ONLY certificates made here
 * with @peculiar/x509: expired and not-yet-valid intermediates, name constraints (not applied by
 * svc, so a path through them is refused, and a configured CA with them is refused at start),
 * pathLenConstraint, an issuer without keyCertSign, unknown critical extensions, extended key
 * usage of the client's certificate, and CRLs: a proper one revokes, one issued by another CA
 * (under its own name, or forging the issuer's name) neither revokes nor counts as the issuer's.
 */
import { randomBytes, webcrypto, X509Certificate } from 'node:crypto';
import { AsnConvert } from '@peculiar/asn1-schema';
import { GeneralName, GeneralSubtree, GeneralSubtrees, NameConstraints } from '@peculiar/asn1-x509';
import { beforeAll, describe, expect, it } from 'vitest';
import { ClientTrust, parseCrls } from '../../../runtime/tls/client-certificates.ts';
import { TlsMaterialError } from '../../../runtime/tls/errors.ts';
import { EC_P256, x509 } from '../../../runtime/tls/x509.ts';

type Keys = x509.X509CertificateCreateSelfSignedParams['keys'];
const DAY = 86_400_000;
const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';
const SERVER_AUTH = '1.3.6.1.5.5.7.3.1';
const ANY_EKU = '2.5.29.37.0';

interface Made {
  readonly cert: x509.X509Certificate;
  readonly keys: Keys;
  readonly pem: string;
  readonly node: X509Certificate;
  readonly serial: string;
}

interface Options {
  readonly cn: string;
  readonly ca?: boolean;
  readonly pathLength?: number;
  /** Key usage flags; a CA gets keyCertSign | cRLSign unless given. */
  readonly keyUsage?: number;
  readonly eku?: readonly string[];
  readonly dns?: readonly string[];
  readonly extra?: readonly x509.Extension[];
  readonly notBefore?: Date;
  readonly notAfter?: Date;
  readonly serial?: string;
}

/** A TEST-ONLY certificate of `o`, issued by `issuer` (self-signed when null). */
async function make(issuer: Made | null, o: Options): Promise<Made> {
  const keys = (await webcrypto.subtle.generateKey(EC_P256, true, ['sign', 'verify'])) as unknown as Keys;
  const ext: x509.Extension[] = [new x509.BasicConstraintsExtension(o.ca === true, o.pathLength, true)];
  const ku = o.keyUsage ?? (o.ca ? x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign : undefined);
  if (ku !== undefined) ext.push(new x509.KeyUsagesExtension(ku, true));
  if (o.eku) ext.push(new x509.ExtendedKeyUsageExtension([...o.eku]));
  if (o.dns) ext.push(new x509.SubjectAlternativeNameExtension(o.dns.map((value) => ({ type: 'dns' as const, value }))));
  ext.push(...(o.extra ?? []));
  const serial = o.serial ?? `1${randomBytes(8).toString('hex')}`;
  const common = { serialNumber: serial, notBefore: o.notBefore ?? new Date(Date.now() - DAY), notAfter: o.notAfter ?? new Date(Date.now() + 10 * DAY), signingAlgorithm: EC_P256, extensions: ext };
  const cert = issuer
    ? await x509.X509CertificateGenerator.create({ ...common, subject: `CN=${o.cn}`, issuer: issuer.cert.subject, publicKey: keys.publicKey, signingKey: issuer.keys.privateKey })
    : await x509.X509CertificateGenerator.createSelfSigned({ ...common, name: `CN=${o.cn}`, keys });
  const pem = cert.toString('pem');
  return { cert, keys, pem, node: new X509Certificate(pem), serial };
}

/** A CRL naming `issuerName` (default: `signer`'s), signed by `signer`, revoking `serials`. */
async function crl(signer: Made, serials: readonly string[], issuerName = signer.cert.subject): Promise<x509.X509Crl[]> {
  const c = await x509.X509CrlGenerator.create({
    issuer: issuerName,
    thisUpdate: new Date(Date.now() - DAY),
    nextUpdate: new Date(Date.now() + 7 * DAY),
    entries: serials.map((serialNumber) => ({ serialNumber, revocationDate: new Date(Date.now() - DAY) })),
    signingKey: signer.keys.privateKey,
    signingAlgorithm: EC_P256,
  });
  const b64 = Buffer.from(c.rawData).toString('base64');
  return parseCrls(`-----BEGIN X509 CRL-----\n${b64}\n-----END X509 CRL-----\n`, 'client_crl');
}

function nameConstraints(permittedDns: string): x509.Extension {
  const nc = new NameConstraints({ permittedSubtrees: new GeneralSubtrees([new GeneralSubtree({ base: new GeneralName({ dNSName: permittedDns }) })]) });
  return new x509.Extension('2.5.29.30', true, AsnConvert.serialize(nc));
}

const chain = (...m: Made[]) => m.map((x) => x.node);

let root: Made;
let other: Made;
let inter: Made;
let leafViaInter: Made;
let direct: Made;

beforeAll(async () => {
  root = await make(null, { cn: 'Edge Root', ca: true });
  other = await make(null, { cn: 'Edge Other Root', ca: true });
  inter = await make(root, { cn: 'Edge Intermediate', ca: true });
  leafViaInter = await make(inter, { cn: 'via-inter', eku: [CLIENT_AUTH] });
  direct = await make(root, { cn: 'direct', eku: [CLIENT_AUTH] });
});

describe('intermediates out of their validity dates', () => {
  it('refuses a path through an expired or not-yet-valid intermediate, sent or configured', async () => {
    const trust = await ClientTrust.create([root.pem], []);
    expect(trust.verify(chain(leafViaInter, inter))).toMatchObject({ valid: true });
    const expired = await make(root, { cn: 'Expired Intermediate', ca: true, notBefore: new Date(Date.now() - 20 * DAY), notAfter: new Date(Date.now() - DAY) });
    const underExpired = await make(expired, { cn: 'under-expired', eku: [CLIENT_AUTH] });
    expect(trust.verify(chain(underExpired, expired))).toMatchObject({ valid: false, reason: 'expired' });
    const asAnchor = await ClientTrust.create([expired.pem], []);
    expect(asAnchor.verify(chain(underExpired))).toMatchObject({ valid: false, reason: 'expired' });
    const future = await make(root, { cn: 'Future Intermediate', ca: true, notBefore: new Date(Date.now() + DAY), notAfter: new Date(Date.now() + 20 * DAY) });
    const underFuture = await make(future, { cn: 'under-future', eku: [CLIENT_AUTH] });
    expect(trust.verify(chain(underFuture, future))).toMatchObject({ valid: false, reason: 'not-yet-valid' });
  });
});

describe('name constraints', () => {
  it('refuses a leaf outside an intermediate’s name constraints (svc does not apply them, so refuses any path through them)', async () => {
    const constrained = await make(root, { cn: 'Constrained Intermediate', ca: true, extra: [nameConstraints('good.example')] });
    const outside = await make(constrained, { cn: 'evil', dns: ['evil.example'], eku: [CLIENT_AUTH] });
    const inside = await make(constrained, { cn: 'good', dns: ['a.good.example'], eku: [CLIENT_AUTH] });
    const trust = await ClientTrust.create([root.pem], []);
    expect(trust.verify(chain(outside, constrained))).toMatchObject({ valid: false, reason: 'untrusted' });
    expect(trust.verify(chain(inside, constrained))).toMatchObject({ valid: false, reason: 'untrusted' });
  });

  it('refuses at start a configured CA with name constraints', async () => {
    const constrainedRoot = await make(null, { cn: 'Constrained Root', ca: true, extra: [nameConstraints('good.example')] });
    const err = await ClientTrust.create([constrainedRoot.pem], [], 'client_ca').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TlsMaterialError);
    expect((err as Error).message).toMatch(/^client_ca: .*name constraints/);
  });
});

describe('what an issuer may sign', () => {
  it('keeps to pathLenConstraint', async () => {
    const zero = await make(null, { cn: 'Root pathlen 0', ca: true, pathLength: 0 });
    const one = await make(null, { cn: 'Root pathlen 1', ca: true, pathLength: 1 });
    for (const [r, valid] of [[zero, false], [one, true]] as const) {
      const i = await make(r, { cn: `Intermediate of ${r.cert.subject}`, ca: true });
      const l = await make(i, { cn: 'leaf', eku: [CLIENT_AUTH] });
      const trust = await ClientTrust.create([r.pem], []);
      expect(trust.verify(chain(l, i))).toMatchObject(valid ? { valid: true } : { valid: false, reason: 'untrusted' });
      // The root signs a client certificate directly either way.
      expect(trust.verify(chain(await make(r, { cn: 'direct', eku: [CLIENT_AUTH] })))).toMatchObject({ valid: true });
    }
    // An intermediate with pathlen 0 signs leaves, not another intermediate.
    const i0 = await make(root, { cn: 'Intermediate pathlen 0', ca: true, pathLength: 0 });
    const i1 = await make(i0, { cn: 'Sub-intermediate', ca: true });
    const deep = await make(i1, { cn: 'deep', eku: [CLIENT_AUTH] });
    const trust = await ClientTrust.create([root.pem], []);
    expect(trust.verify(chain(await make(i0, { cn: 'shallow', eku: [CLIENT_AUTH] }), i0))).toMatchObject({ valid: true });
    expect(trust.verify(chain(deep, i1, i0))).toMatchObject({ valid: false, reason: 'untrusted' });
  });

  it('refuses an issuer whose key usage lacks keyCertSign, sent or configured', async () => {
    const noSign = await make(root, { cn: 'CA without keyCertSign', ca: true, keyUsage: x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.cRLSign });
    const l = await make(noSign, { cn: 'leaf', eku: [CLIENT_AUTH] });
    expect((await ClientTrust.create([root.pem], [])).verify(chain(l, noSign))).toMatchObject({ valid: false, reason: 'untrusted' });
    expect((await ClientTrust.create([noSign.pem], [])).verify(chain(l))).toMatchObject({ valid: false, reason: 'untrusted' });
  });

  it('refuses a path through a certificate with a critical extension it does not know', async () => {
    const odd = new x509.Extension('1.3.6.1.4.1.99999.1', true, new Uint8Array([0x05, 0x00]));
    const oddInter = await make(root, { cn: 'Odd Intermediate', ca: true, extra: [odd] });
    const trust = await ClientTrust.create([root.pem], []);
    expect(trust.verify(chain(await make(oddInter, { cn: 'leaf', eku: [CLIENT_AUTH] }), oddInter))).toMatchObject({ valid: false, reason: 'untrusted' });
    expect(trust.verify(chain(await make(root, { cn: 'odd leaf', eku: [CLIENT_AUTH], extra: [odd] })))).toMatchObject({ valid: false, reason: 'untrusted' });
    // The same extension, not critical, is passed over.
    const mild = new x509.Extension('1.3.6.1.4.1.99999.1', false, new Uint8Array([0x05, 0x00]));
    expect(trust.verify(chain(await make(root, { cn: 'mild leaf', eku: [CLIENT_AUTH], extra: [mild] })))).toMatchObject({ valid: true });
  });
});

describe('extended key usage of the client certificate', () => {
  it('refuses one that lists usages without clientAuth; accepts clientAuth, anyExtendedKeyUsage, or no EKU at all', async () => {
    const trust = await ClientTrust.create([root.pem], []);
    expect(trust.verify(chain(await make(inter, { cn: 'server only', eku: [SERVER_AUTH] }), inter))).toMatchObject({ valid: false, reason: 'not-for-client-auth' });
    expect(trust.verify(chain(await make(inter, { cn: 'both', eku: [SERVER_AUTH, CLIENT_AUTH] }), inter))).toMatchObject({ valid: true });
    expect(trust.verify(chain(await make(inter, { cn: 'any', eku: [ANY_EKU] }), inter))).toMatchObject({ valid: true });
    expect(trust.verify(chain(await make(inter, { cn: 'no eku' }), inter))).toMatchObject({ valid: true });
  });
});

describe('CRLs', () => {
  it('a proper CRL of the issuer revokes the certificate it lists, and only that one', async () => {
    const trust = await ClientTrust.create([root.pem], await crl(root, [direct.serial]));
    expect([...trust.crlsMatched]).toEqual([0]);
    expect(trust.verify(chain(direct))).toMatchObject({ valid: false, reason: 'revoked' });
    expect(trust.verify(chain(await make(root, { cn: 'sibling', eku: [CLIENT_AUTH] })))).toMatchObject({ valid: true });
  });

  it("the root's CRL revoking an intermediate revokes the path through it", async () => {
    const trust = await ClientTrust.create([root.pem], await crl(root, [inter.serial]));
    expect(trust.verify(chain(leafViaInter, inter))).toMatchObject({ valid: false, reason: 'revoked' });
  });

  it('a CRL of another CA listing the same serial does not revoke, and is not the issuer’s CRL', async () => {
    const twin = await make(other, { cn: 'twin', eku: [CLIENT_AUTH], serial: direct.serial });
    expect(twin.serial).toBe(direct.serial);
    const trust = await ClientTrust.create([root.pem], await crl(other, [direct.serial]));
    expect(trust.crlsMatched.size).toBe(0);
    expect(trust.verify(chain(direct))).toMatchObject({ valid: true });
  });

  it("a CRL that forges the issuer's name but is signed by another CA is not trusted to revoke", async () => {
    const forged = await crl(other, [direct.serial], root.cert.subject);
    expect(forged[0]!.issuer).toBe(root.cert.subject);
    const trust = await ClientTrust.create([root.pem], forged);
    expect(trust.crlsMatched.size).toBe(0);
    expect(trust.verify(chain(direct))).toMatchObject({ valid: true });
    // And it does not stand in for the issuer's CRL: the issuer's own CRL still revokes.
    const both = await ClientTrust.create([root.pem], [...forged, ...(await crl(root, [direct.serial]))]);
    expect([...both.crlsMatched]).toEqual([1]);
    expect(both.verify(chain(direct))).toMatchObject({ valid: false, reason: 'revoked' });
  });

  it('a CRL signed by the issuer’s key under another name is not the issuer’s CRL', async () => {
    const renamed = await crl(root, [direct.serial], 'CN=Someone Else');
    const trust = await ClientTrust.create([root.pem], renamed);
    expect(trust.crlsMatched.size).toBe(0);
    expect(trust.verify(chain(direct))).toMatchObject({ valid: true });
  });
});
