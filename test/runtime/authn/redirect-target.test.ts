/** docs/security.md S01–S04: post-login redirect targets, read the way a browser reads them. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { safeRedirectTarget } from '../../../runtime/authn/redirect-target.ts';

const policy = { allowedOrigins: new Set(['https://app.example.com', 'https://wiki.example.com:8443']) };
const check = (t: string) => safeRedirectTarget(t, policy);

describe('safeRedirectTarget', () => {
  it('keeps same-origin paths and allow-listed origins', () => {
    expect(check('/dashboard?tab=1#top')).toBe('/dashboard?tab=1#top');
    expect(check('/a/../b')).toBe('/b');
    expect(check('https://app.example.com/x?y=1')).toBe('https://app.example.com/x?y=1');
    expect(check('HTTPS://APP.example.com/x')).toBe('https://app.example.com/x');
    expect(check('https://wiki.example.com:8443/')).toBe('https://wiki.example.com:8443/');
  });

  it('S01: refuses protocol-relative and foreign targets', () => {
    for (const t of ['//evil.example/', '///evil.example', 'https://evil.example/', 'https://app.example.com.evil.example/', 'https://wiki.example.com/', 'evil.example', 'https://app.example.com@evil.example/', 'https://user:pw@app.example.com/']) {
      expect(check(t), t).toBe('/');
    }
  });

  it('S02: treats a backslash as a slash', () => {
    for (const t of ['/\\evil.example', '\\\\evil.example', '\\/evil.example', '/%5Cevil.example', 'https:\\\\evil.example']) expect(check(t), t).toBe('/');
  });

  it('S03: percent-decodes first and refuses control characters and white space', () => {
    for (const t of ['/%09/evil.example', '/%0a/evil.example', '/%0d/evil.example', '/%0b/evil.example', '/%2F/evil.example', '/%2f%2fevil.example', '/ /evil.example', '/\t/evil.example', '/%E2%80%A8/evil', '/%C2%A0x', '/%zz']) {
      expect(check(t), t).toBe('/');
    }
  });

  it('S04: refuses every scheme but https, whatever its case or padding', () => {
    for (const t of ['JaVaScRiPt:alert(1)', ' javascript:alert(1)', '%20javascript:alert(1)', 'data:text/html,<script>alert(1)</script>', 'http://app.example.com/', 'ftp://app.example.com/', 'javascript://app.example.com/%0aalert(1)']) {
      expect(check(t), t).toBe('/');
    }
    expect(safeRedirectTarget('http://app.example.com/', { allowedOrigins: new Set(['http://app.example.com']), allowHttp: true })).toBe('http://app.example.com/');
  });

  it('never returns a target that leaves the allowed origins (property)', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.webUrl(), fc.webPath().map((p) => `/${p}`), fc.string().map((s) => `/${s}`)), (t) => {
        const out = safeRedirectTarget(t, policy);
        if (out.startsWith('/')) {
          expect(out.startsWith('//')).toBe(false);
          expect(new URL(out, 'https://app.example.com').origin).toBe('https://app.example.com');
        } else expect(policy.allowedOrigins.has(new URL(out).origin)).toBe(true);
      }),
      { numRuns: 500 },
    );
  });
});
