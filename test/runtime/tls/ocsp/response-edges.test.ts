/**
 * The checks of an OCSP response before it is stapled (runtime/tls/ocsp/response.ts), each hit
 * by a response built in memory that differs from a good one in one field: who signed it (issuer,
 * delegated responder, a responder nobody authorised), which certificate it names, the time bounds
 * (`thisUpdate` up to five minutes ahead, `nextUpdate` strictly after now), the nonce (svc sends
 * none, RFC 5019, so a responder's nonce is ignored), and statuses other than `good`.
 */
import { randomBytes } from 'node:crypto';
import { id_kp_OCSPSigning, OCSPRequest, OCSPResponseStatus } from '@peculiar/asn1-ocsp';
import { AsnConvert } from '@peculiar/asn1-schema';
import { beforeAll, describe, expect, it } from 'vitest';
import type { OcspSubject } from '../../../../runtime/tls/ocsp/request.ts';
import { checkResponse } from '../../../../runtime/tls/ocsp/response.ts';
import { OcspResponseError } from '../../../../runtime/tls/errors.ts';
import { ca, issue, respond, statusOnly, subjectOf, wrap, type Made } from './ocsp-pki.ts';

const DAY = 86_400_000;
const MIN = 60_000;
const URL = 'http://127.0.0.1:9/ocsp';

let root: Made;
let stranger: Made;
let leaf: Made;
let sibling: Made;
let responder: Made;
let strangerResponder: Made;
let expiredResponder: Made;
let plainIssued: Made;
let subject: OcspSubject;

beforeAll(async () => {
  root = await ca('OCSP Test CA');
  stranger = await ca('Stranger CA');
  leaf = await issue(root, { cn: 'leaf.test', ocsp: URL });
  sibling = await issue(root, { cn: 'sibling.test', ocsp: URL });
  responder = await issue(root, { cn: 'responder', eku: [id_kp_OCSPSigning] });
  strangerResponder = await issue(stranger, { cn: 'stranger responder', eku: [id_kp_OCSPSigning] });
  expiredResponder = await issue(root, { cn: 'old responder', eku: [id_kp_OCSPSigning], notBefore: new Date(Date.now() - 10 * DAY), notAfter: new Date(Date.now() - DAY) });
  plainIssued = await issue(root, { cn: 'server', eku: ['1.3.6.1.5.5.7.3.1'] });
  subject = subjectOf(leaf, root);
});

/** What checkResponse throws for `der` at `now` (undefined when it accepts). */
function refusal(der: Buffer, now = Date.now()): OcspResponseError | undefined {
  try {
    checkResponse(der, subject, now);
    return undefined;
  } catch (e) {
    expect(e).toBeInstanceOf(OcspResponseError);
    return e as OcspResponseError;
  }
}

describe('the request', () => {
  it('names the certificate by SHA-1 CertID and carries no nonce (cacheable, RFC 5019)', () => {
    const req = AsnConvert.parse(subject.request, OCSPRequest);
    expect(req.tbsRequest.requestList).toHaveLength(1);
    const id = req.tbsRequest.requestList[0]!.reqCert;
    expect(id.hashAlgorithm.algorithm).toBe('1.3.14.3.2.26');
    expect(Buffer.from(id.serialNumber).toString('hex').replace(/^0+/, '')).toBe(leaf.cert.serialNumber.replace(/^0+/, ''));
    expect(req.tbsRequest.requestExtensions).toBeUndefined();
    expect(subject.url).toBe(URL);
    expect(subject.mustStaple).toBe(false);
  });
});

describe('who signed the response', () => {
  it('accepts the issuer, and a responder the issuer issued for OCSP signing', () => {
    expect(refusal(respond(subject, { signer: root }))).toBeUndefined();
    expect(refusal(respond(subject, { signer: responder, certs: [responder] }))).toBeUndefined();
  });

  it.each([
    ['another CA', () => ({ signer: stranger })],
    ['an OCSP signer issued by another CA', () => ({ signer: strangerResponder, certs: [strangerResponder] })],
    ['an OCSP signer of the issuer whose certificate expired', () => ({ signer: expiredResponder, certs: [expiredResponder] })],
    ['a certificate of the issuer not issued for OCSP signing', () => ({ signer: plainIssued, certs: [plainIssued] })],
    ['the delegated responder without its certificate in the response', () => ({ signer: responder })],
    ['the certificate itself', () => ({ signer: leaf, certs: [leaf] })],
  ])('refuses a response signed by %s', (_what, opts) => {
    expect(refusal(respond(subject, opts()))?.message).toMatch(/not signed by the issuer/);
  });

  it('refuses a response whose signed data was changed after signing', () => {
    // The issuer signed a `revoked`-free response for the sibling; the forger swaps in our serial.
    const forged = respond(subject, {
      signer: root,
      serial: subjectOf(sibling, root).serial,
      tamper: (tbs) => {
        const from = subjectOf(sibling, root).serial;
        const at = tbs.indexOf(from);
        return Buffer.concat([tbs.subarray(0, at), subject.serial, tbs.subarray(at + from.length)]);
      },
    });
    expect(subject.serial.length).toBe(subjectOf(sibling, root).serial.length);
    expect(refusal(forged)?.message).toMatch(/not signed by the issuer/);
  });

  it('refuses a signature algorithm it does not know (md5WithRSAEncryption)', () => {
    expect(refusal(respond(subject, { signer: root, signatureAlgorithm: '1.2.840.113549.1.1.4' }))?.message).toMatch(/unsupported signature algorithm/);
  });
});

describe('which certificate the response names', () => {
  it('refuses a response for another serial of the same issuer', () => {
    expect(refusal(respond(subjectOf(sibling, root), { signer: root }))?.message).toMatch(/does not name the certificate/);
    const other = Buffer.from(subject.serial);
    other[other.length - 1] = other[other.length - 1]! ^ 1;
    expect(refusal(respond(subject, { signer: root, serial: other }))?.message).toMatch(/does not name the certificate/);
  });

  it('refuses the right serial under another issuer name or key hash, or a non-SHA-1 CertID', () => {
    expect(refusal(respond(subject, { signer: root, issuerNameHash: randomBytes(20) }))?.message).toMatch(/does not name/);
    expect(refusal(respond(subject, { signer: root, issuerKeyHash: randomBytes(20) }))?.message).toMatch(/does not name/);
    expect(refusal(respond(subject, { signer: root, hashAlgorithm: '2.16.840.1.101.3.4.2.1' }))?.message).toMatch(/does not name/);
  });

  it('finds the certificate among other SingleResponses', () => {
    expect(refusal(respond(subject, { signer: root, others: [subjectOf(sibling, root).serial] }))).toBeUndefined();
  });
});

describe('time bounds', () => {
  it('takes thisUpdate up to five minutes ahead of the clock, not more', () => {
    const now = Date.now();
    expect(refusal(respond(subject, { signer: root, thisUpdate: new Date(now + 4 * MIN) }), now)).toBeUndefined();
    expect(refusal(respond(subject, { signer: root, thisUpdate: new Date(now + 6 * MIN) }), now)?.message).toMatch(/not valid yet/);
  });

  it('refuses a response once nextUpdate is reached, and reports both times', () => {
    const now = Date.now();
    const thisUpdate = new Date(now - 10 * MIN);
    const nextUpdate = new Date(now + 10 * MIN);
    const der = respond(subject, { signer: root, thisUpdate, nextUpdate });
    expect(checkResponse(der, subject, now)).toEqual({ der, thisUpdate: thisUpdate.getTime(), nextUpdate: nextUpdate.getTime() });
    expect(refusal(der, nextUpdate.getTime() - 1)).toBeUndefined();
    expect(refusal(der, nextUpdate.getTime())?.message).toMatch(/expired/);
  });

  it('accepts a response without nextUpdate (nextUpdate null)', () => {
    expect(checkResponse(respond(subject, { signer: root, nextUpdate: null }), subject, Date.now()).nextUpdate).toBeNull();
  });
});

describe('nonce', () => {
  it('ignores a nonce in the response: svc asked without one', () => {
    expect(refusal(respond(subject, { signer: root, nonce: randomBytes(16) }))).toBeUndefined();
  });
});

describe('statuses', () => {
  it('reports revoked as revoked, and refuses unknown', () => {
    const r = refusal(respond(subject, { signer: root, status: 'revoked' }));
    expect(r?.revoked).toBe(true);
    expect(r?.message).toMatch(/revoked/);
    const u = refusal(respond(subject, { signer: root, status: 'unknown' }));
    expect(u?.revoked).toBe(false);
    expect(u?.message).toMatch(/unknown/);
  });

  it('refuses the error statuses, and a successful status without a basic response', () => {
    expect(refusal(statusOnly(OCSPResponseStatus.unauthorized))?.message).toMatch(/status 6 \(unauthorized\)/);
    expect(refusal(statusOnly(OCSPResponseStatus.malformedRequest))?.message).toMatch(/malformedRequest/);
    expect(refusal(statusOnly(OCSPResponseStatus.successful))?.message).toMatch(/unreadable/);
    const good = respond(subject, { signer: root });
    expect(refusal(wrap(good, '1.3.6.1.5.5.7.48.1.99'))?.message).toMatch(/not a basic OCSP response/);
    expect(refusal(wrap(Buffer.from([0x30, 0x00])))?.message).toMatch(/unreadable/);
  });
});
