/**
 * The OCSP response reader (runtime/tls/ocsp/response.ts) reads bytes from the network: whatever
 * they are, `checkResponse` returns or throws `OcspResponseError` (its clean refusal). Any other
 * exception is a bug. Fed with arbitrary bytes, with DER-shaped prefixes, and with valid responses
 * mutated byte by byte, truncated and extended; a mutated response that is still accepted must
 * still be `good` for the subject (the signature covers the status).
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import type { OcspSubject } from '../../runtime/tls/ocsp/request.ts';
import { checkResponse } from '../../runtime/tls/ocsp/response.ts';
import { OcspResponseError } from '../../runtime/tls/errors.ts';
import { ca, issue, respond, subjectOf, type Made } from '../runtime/tls/ocsp/ocsp-pki.ts';

let subject: OcspSubject;
let valid: Buffer[];

beforeAll(async () => {
  const root: Made = await ca('Fuzz CA');
  const leaf = await issue(root, { cn: 'fuzz.test', ocsp: 'http://127.0.0.1:9/' });
  const responder = await issue(root, { cn: 'fuzz responder', eku: ['1.3.6.1.5.5.7.3.9'] });
  subject = subjectOf(leaf, root);
  valid = [
    respond(subject, { signer: root }),
    respond(subject, { signer: responder, certs: [responder] }),
    respond(subject, { signer: root, status: 'revoked', nonce: Buffer.alloc(16, 7) }),
    respond(subject, { signer: root, nextUpdate: null, others: [Buffer.from([0x42])] }),
  ];
});

/** 'ok', 'refused' or 'revoked'; anything but OcspResponseError escapes and fails the property. */
function outcome(der: Buffer): 'ok' | 'refused' | 'revoked' {
  try {
    checkResponse(der, subject, Date.now());
    return 'ok';
  } catch (e) {
    if (!(e instanceof OcspResponseError)) throw e;
    return e.revoked ? 'revoked' : 'refused';
  }
}

const mutation = fc.record({
  which: fc.nat(),
  edits: fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 8 }),
  cut: fc.option(fc.nat(), { nil: undefined }),
  tail: fc.uint8Array({ maxLength: 8 }),
});

describe('OCSP response reader', () => {
  it('the seed responses are read as built', () => {
    expect(valid.map(outcome)).toEqual(['ok', 'ok', 'revoked', 'ok']);
  });

  it('refuses arbitrary bytes cleanly', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 512 }), (bytes) => {
        expect(outcome(Buffer.from(bytes))).not.toBe('ok');
      }),
      { numRuns: 2000 },
    );
  });

  it('refuses DER-shaped garbage cleanly (SEQUENCE, ENUMERATED and context tags with long-form lengths)', () => {
    const head = fc.constantFrom([0x30], [0x30, 0x82, 0xff, 0xff], [0x30, 0x84, 0x7f, 0xff, 0xff, 0xff], [0x30, 0x80], [0x0a, 0x01, 0x00, 0xa0], [0x30, 0x03, 0x0a, 0x01], [0xa0, 0x81]);
    fc.assert(
      fc.property(head, fc.uint8Array({ maxLength: 256 }), (h, rest) => {
        expect(outcome(Buffer.from([...h, ...rest]))).not.toBe('ok');
      }),
      { numRuns: 2000 },
    );
  });

  it('mutated, truncated and extended valid responses: clean refusal, or still the signed status', () => {
    fc.assert(
      fc.property(mutation, ({ which, edits, cut, tail }) => {
        const base = valid[which % valid.length]!;
        let der = Buffer.from(base);
        for (const [at, byte] of edits) der[at % der.length] = byte;
        if (cut !== undefined) der = der.subarray(0, cut % der.length);
        der = Buffer.concat([der, tail]);
        const seen = outcome(der);
        // Bytes outside the signed data (outer envelope, signature padding) may change without
        // changing the meaning; the status of an accepted response is still the signed one.
        if (seen !== 'refused') expect(seen).toBe(outcome(base));
      }),
      { numRuns: 3000 },
    );
  });
});
