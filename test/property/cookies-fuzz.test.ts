/**
 * Fuzzing the cookie reader (runtime/authn/cookies.ts `readCookie`): the `Cookie` header values of
 * every request, as the client wrote them, searched for svc's session, flow and binding cookies.
 * The contract is a value or `undefined`, never an exception; the value is the first cookie of
 * exactly that name, and never a piece of another cookie (a name that only contains svc's, a
 * value that looks like `name=…`, a pair without `=`).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cookieDomainFor, readCookie } from '../../runtime/authn/cookies.ts';

const RUNS = 800;
const NAMES = ['_svc', '__Host-_svc', '_svc_csrf', 'svc_binding', 'a'];

const piece = fc.oneof(
  fc.constantFrom(...NAMES),
  fc.constantFrom('=', ';', '; ', ' ', '\t', '"', '""', ',', '\\', '\r\n', '\u0000', 'é', '\ud800', 'x', '_', '-', 'Host'),
  fc.stringMatching(/^[A-Za-z0-9_-]{1,6}$/),
);
const header = fc.oneof(fc.array(piece, { maxLength: 16 }).map((ps) => ps.join('')), fc.string({ maxLength: 60 }), fc.string({ unit: 'binary', maxLength: 30 }));
const headers = fc.oneof(fc.constant(undefined), fc.array(header, { maxLength: 3 }));
const name = fc.oneof(fc.constantFrom(...NAMES), fc.string({ maxLength: 6 }));

/** A cookie-safe pair as svc and browsers write them (RFC 6265 token name, cookie-octet value). */
const cookieName = fc.oneof(fc.constantFrom(...NAMES), fc.stringMatching(/^[A-Za-z0-9_!#$%&'*+.^`|~-]{1,10}$/));
const cookieValue = fc.oneof(fc.stringMatching(/^[\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]{0,20}$/), fc.constant(''));
const pairs = fc.array(fc.tuple(cookieName, cookieValue, fc.boolean()), { maxLength: 8 });

function read(values: readonly string[] | undefined, n: string): string | undefined {
  try {
    return readCookie(values, n);
  } catch (e) {
    throw new Error(`readCookie threw on ${JSON.stringify([values, n])}: ${(e as Error).stack}`);
  }
}

describe('cookie reader, fuzzed', () => {
  it('returns undefined or a value with no `;` taken from one of the headers, never throws', () => {
    fc.assert(
      fc.property(headers, name, (values, n) => {
        const v = read(values, n);
        if (v === undefined) return;
        expect(typeof v).toBe('string');
        expect(v).not.toContain(';');
        expect(values!.some((h) => h.includes(v))).toBe(true);
        // The pair it came from is `name=value` with exactly this name.
        expect(values!.some((h) => h.split(';').some((p) => p.includes('=') && p.slice(0, p.indexOf('=')).trim() === n))).toBe(true);
      }),
      { numRuns: RUNS },
    );
  });

  it('reads the first cookie of exactly the name, from any well-formed header', () => {
    fc.assert(
      fc.property(pairs, fc.constantFrom(...NAMES), fc.constantFrom('; ', ';'), (ps, n, sep) => {
        const text = ps.map(([k, v, quoted]) => `${k}=${quoted ? `"${v}"` : v}`).join(sep);
        const first = ps.find(([k]) => k === n);
        expect(read([text], n)).toBe(first?.[1]);
        // Split over several headers (HTTP/2 sends one per cookie): the same answer.
        expect(read(ps.map(([k, v]) => `${k}=${v}`), n)).toBe(first?.[1]);
      }),
      { numRuns: RUNS },
    );
  });

  it('never takes a cookie whose name only contains the name, or a value that looks like it', () => {
    fc.assert(
      fc.property(fc.constantFrom(...NAMES), cookieValue, fc.stringMatching(/^[A-Za-z0-9_-]{1,4}$/), (n, v, affix) => {
        const decoys = [`${affix}${n}=${v}`, `${n}${affix}=${v}`, `other=${n}=${v}`, `${n}`, `${n} ${affix}=${v}`];
        expect(read([decoys.join('; ')], n)).toBeUndefined();
      }),
      { numRuns: RUNS },
    );
  });

  it('cookieDomainFor never throws and only answers a domain the host is in', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 30 }), fc.oneof(fc.constant(null), fc.string({ maxLength: 20 }), fc.constantFrom('example.com', '.example.com', 'EXAMPLE.com')), (host, domain) => {
        const d = cookieDomainFor(host, domain);
        if (d !== null) {
          const name = host.replace(/:\d+$/, '');
          expect(name === d || name.endsWith(`.${d}`)).toBe(true);
        }
      }),
      { numRuns: RUNS },
    );
  });
});
