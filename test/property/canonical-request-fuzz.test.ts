/**
 * Fuzzing the canonical request (runtime/request/canonical-request.ts `canonicalRequest`): the request
 * target, the Host header and HTTP/2's `:authority` exactly as a client sent them. The contract is
 * a result, never an exception: `{ok: true, request}` in the documented normal form, or `{ok:
 * false, problem}` with one of the documented TargetProblem strings (the 400 the server answers).
 * Normalizing is idempotent: the canonical form, sent again, is itself and is accepted.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalRequest, removeDotSegments, renormalizedPath, type CanonicalOptions, type CanonicalResult } from '../../runtime/request/canonical-request.ts';

const RUNS = 600;
const PROBLEMS = new Set([
  'target-not-origin-form',
  'target-invalid-character',
  'target-fragment',
  'target-backslash',
  'target-malformed-escape',
  'target-forbidden-escape',
  'target-path-parameter',
  'host-missing',
  'host-invalid',
  'host-conflict',
]);

// Pieces that trip normalizers: dots, slashes, escapes (good, bad, forbidden, of dots), `;`, `?`,
// `#`, `\`, white space, control and non-ASCII characters, lone surrogates.
const targetPiece = fc.oneof(
  fc.constantFrom('/', '//', '.', '..', '/./', '/../', '%2e', '%2E', '%2e%2e', '%2f', '%2F', '%5c', '%00', '%3b', '%3f', '%23', '%25', '%', '%2', '%zz', '%7f', '%41', '%c3%a9'),
  fc.constantFrom(';', '?', '#', '\\', ' ', '\t', '\u0000', '\u007f', 'é', '\ud800', '\u{1F600}', '&', '=', '+', '@', ':', '[', ']', '~'),
  fc.stringMatching(/^[a-zA-Z0-9_-]{1,4}$/),
);
const target = fc.oneof(
  fc.array(targetPiece, { maxLength: 12 }).map((ps) => `/${ps.join('')}`),
  fc.array(targetPiece, { maxLength: 12 }).map((ps) => ps.join('')),
  fc.tuple(fc.constantFrom('http://', 'https://', 'HTTP://', 'https:/'), fc.string({ maxLength: 12 }), fc.array(targetPiece, { maxLength: 8 })).map(([s, a, ps]) => `${s}${a}${ps.join('')}`),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
);
const hostPiece = fc.constantFrom('a', 'B', 'example.com', '.', '-', ':', ':443', ':80', ':0', ':65536', ':0443', ':99999999999', '[', ']', '[::1]', '[::ffff:1.2.3.4]', '@', ' ', '\t', 'é', '\u0130', '%41', '_', '*');
const host = fc.oneof(
  fc.constant(undefined),
  fc.array(hostPiece, { maxLength: 6 }).map((ps) => ps.join('')),
  fc.string({ maxLength: 20 }),
);
const options = fc.record({ keepForbiddenEscapes: fc.boolean(), keepPathParameters: fc.boolean(), authority: host }, { requiredKeys: [] }) as fc.Arbitrary<CanonicalOptions>;
const scheme = fc.constantFrom('http' as const, 'https' as const);

function canonical(t: string, h: string | undefined, s: 'http' | 'https', o: CanonicalOptions): CanonicalResult {
  try {
    return canonicalRequest(t, h, s, o);
  } catch (e) {
    throw new Error(`canonicalRequest threw on ${JSON.stringify([t, h, s, o])}: ${(e as Error).stack}`);
  }
}

describe('canonical request, fuzzed', () => {
  it('accepts only the documented normal form, refuses with a documented problem, never throws', () => {
    fc.assert(
      fc.property(target, host, scheme, options, (t, h, s, o) => {
        const r = canonical(t, h, s, o);
        if (!r.ok) {
          expect(PROBLEMS.has(r.problem), r.problem).toBe(true);
          return;
        }
        const { path, query, hostname, port, host: key } = r.request;
        // Path: starts with `/`, visible ASCII only, no `//`, no dot segment, no raw `#` or `\`.
        expect(path.startsWith('/')).toBe(true);
        expect(path).toMatch(/^[\x21-\x7e]*$/);
        expect(path).not.toMatch(/\/\/|[#\\?]/);
        expect(path.split('/').some((seg) => seg === '.' || seg === '..')).toBe(false);
        if (o.keepPathParameters !== true) expect(path).not.toContain(';');
        expect(query).toMatch(/^[\x21-\x7e]*$/);
        expect(query).not.toMatch(/[#\\]/);
        // Host: lower case, port only when not the default, and the key is the two together.
        expect(hostname).toBe(hostname.toLowerCase());
        expect(hostname).not.toMatch(/[@\s/]/);
        if (port !== undefined) expect(Number.isInteger(port) && port >= 1 && port <= 65535 && port !== (s === 'https' ? 443 : 80)).toBe(true);
        expect(key).toBe(port === undefined ? hostname : `${hostname}:${port}`);
      }),
      { numRuns: RUNS * 2 },
    );
  });

  it('is idempotent: the canonical form sent again is accepted and unchanged', () => {
    fc.assert(
      fc.property(target, host, scheme, options, (t, h, s, o) => {
        const r = canonical(t, h, s, o);
        if (!r.ok) return;
        const again = canonical(`${r.request.path}${r.request.query === '' ? '' : `?${r.request.query}`}`, r.request.host, s, { ...o, authority: undefined });
        expect(again).toEqual(r);
      }),
      { numRuns: RUNS },
    );
  });

  it('reads one authority: a second, different host never wins', () => {
    fc.assert(
      fc.property(fc.array(targetPiece, { maxLength: 6 }), host, host, scheme, (ps, a, b, s) => {
        const r = canonical(`/${ps.join('')}`, b, s, { authority: a });
        if (r.ok && a !== undefined) {
          const alone = canonical('/', a, s, {});
          expect(alone.ok && alone.request.host).toBe(r.request.host);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('removeDotSegments and renormalizedPath never throw on any path', () => {
    fc.assert(
      fc.property(fc.array(targetPiece, { maxLength: 12 }), (ps) => {
        const p = `/${ps.join('')}`;
        const out = removeDotSegments(p);
        expect(out.startsWith('/')).toBe(true);
        const re = renormalizedPath(p);
        if (re !== undefined) expect(re).not.toMatch(/\/\//);
      }),
      { numRuns: RUNS },
    );
  });
});
