/**
 * The OCSP request svc builds and the checks a response passes before it is stapled, against
 * responses made by openssl's own responder (`openssl ocsp -reqin … -respout …`, offline) for
 * TEST-ONLY certificates made here: our request is one openssl answers, and only a response that
 * is signed by the issuer or its delegated OCSP signer, names the certificate, says `good` and has
 * not expired is accepted.
 */
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ocspSubject, type OcspSubject } from '../../../../runtime/tls/ocsp/request.ts';
import { checkResponse } from '../../../../runtime/tls/ocsp/response.ts';
import { OcspResponseError } from '../../../../runtime/tls/errors.ts';
import { describeWithCommands } from '../../../support/system.ts';

describeWithCommands(['openssl'], 'OCSP request and response checks', () => {
  let dir: string;
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] }).toString();
  const der = (name: string) => new X509Certificate(readFileSync(join(dir, `${name}.pem`))).raw;
  const serialOf = (name: string) => openssl('x509', '-in', `${name}.pem`, '-noout', '-serial').trim().replace(/^serial=/, '');

  /** A TEST-ONLY certificate `name` issued by `ca` (self-signed CA when `ca` is undefined) with extra extensions. */
  const make = (name: string, ca: string | undefined, ext: string[]) => {
    writeFileSync(join(dir, `${name}.ext`), ext.join('\n'));
    if (!ca) {
      openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.pem`, '-days', '2', '-subj', `/CN=${name}`, '-addext', 'basicConstraints=critical,CA:TRUE');
      return;
    }
    openssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`);
    openssl('x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.pem`, '-CAkey', `${ca}.key`, '-CAcreateserial', '-days', '2', '-extfile', `${name}.ext`, '-out', `${name}.pem`);
  };

  /** openssl's answer to our request for `subject`, signed by `signer`, from an index where `revoked` names are revoked. */
  const respond = (subject: OcspSubject, signer: string, opts: { revoked?: string[]; known?: string[] } = {}) => {
    const known = opts.known ?? ['leaf', 'other'];
    const lines = known.map((n) => (opts.revoked?.includes(n) ? `R\t301231000000Z\t250101000000Z\t${serialOf(n)}\tunknown\t/CN=${n}\n` : `V\t301231000000Z\t\t${serialOf(n)}\tunknown\t/CN=${n}\n`));
    writeFileSync(join(dir, 'index.txt'), lines.join(''));
    writeFileSync(join(dir, 'req.der'), subject.request);
    openssl('ocsp', '-index', 'index.txt', '-rsigner', `${signer}.pem`, '-rkey', `${signer}.key`, '-CA', 'ca.pem', '-reqin', 'req.der', '-respout', 'resp.der', '-nmin', '5');
    return readFileSync(join(dir, 'resp.der'));
  };

  let leaf: OcspSubject;
  let other: OcspSubject;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'svc-ocsp-unit-'));
    const aia = 'authorityInfoAccess=OCSP;URI:http://127.0.0.1:9/';
    make('ca', undefined, []);
    make('stranger', undefined, []);
    make('leaf', 'ca', ['subjectAltName=DNS:leaf.test', aia, 'tlsfeature=status_request']);
    make('other', 'ca', ['subjectAltName=DNS:other.test', aia]);
    make('plain', 'ca', ['subjectAltName=DNS:plain.test']);
    make('responder', 'ca', ['extendedKeyUsage=OCSPSigning']);
    make('not-responder', 'ca', ['extendedKeyUsage=serverAuth']);
    leaf = ocspSubject(der('leaf'), der('ca'))!;
    other = ocspSubject(der('other'), der('ca'))!;
  }, 30_000);
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('reads the responder URL and must-staple, and builds a request openssl understands', () => {
    expect(leaf.url).toBe('http://127.0.0.1:9/');
    expect(leaf.mustStaple).toBe(true);
    expect(other.mustStaple).toBe(false);
    expect(ocspSubject(der('plain'), der('ca'))).toBeUndefined();
    expect(() => ocspSubject(der('leaf'), der('stranger'))).toThrow(/issuer/);
    writeFileSync(join(dir, 'req.der'), leaf.request);
    expect(openssl('ocsp', '-reqin', 'req.der', '-req_text').toUpperCase()).toContain(`SERIAL NUMBER: ${serialOf('leaf')}`);
  });

  it('accepts a good response signed by the issuer or by its delegated OCSP signer', () => {
    const now = Date.now();
    for (const signer of ['ca', 'responder']) {
      const r = checkResponse(respond(leaf, signer), leaf, now);
      expect(r.thisUpdate).toBeLessThanOrEqual(now + 1_000);
      expect(r.nextUpdate! - r.thisUpdate).toBe(5 * 60_000);
    }
  });

  it.each([
    ['signed by another CA', () => checkResponse(respond(leaf, 'stranger'), leaf, Date.now()), /not signed by the issuer/],
    ['signed by a certificate the CA issued without OCSP signing', () => checkResponse(respond(leaf, 'not-responder'), leaf, Date.now()), /not signed by the issuer/],
    ['for another certificate', () => checkResponse(respond(other, 'ca'), leaf, Date.now()), /does not name the certificate/],
    ['unknown to the responder', () => checkResponse(respond(leaf, 'ca', { known: ['other'] }), leaf, Date.now()), /unknown/],
    ['expired', () => checkResponse(respond(leaf, 'ca'), leaf, Date.now() + 6 * 60_000), /expired/],
    ['not a response', () => checkResponse(Buffer.from('not DER'), leaf, Date.now()), /unreadable/],
    ['an error status', () => checkResponse(Buffer.from([0x30, 0x03, 0x0a, 0x01, 0x03]), leaf, Date.now()), /tryLater/],
  ])('refuses a response %s', (_what, f, message) => {
    expect(f).toThrow(message);
  });

  it('says when the certificate is revoked', () => {
    let error: unknown;
    try {
      checkResponse(respond(leaf, 'ca', { revoked: ['leaf'] }), leaf, Date.now());
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(OcspResponseError);
    expect((error as OcspResponseError).revoked).toBe(true);
  });
});
