import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { basicAuthorized, basicCredential } from '../../../../runtime/observe/metrics/basic-auth.ts';

/** TEST ONLY credential. */
const expected = basicCredential(Buffer.from('prom:test-only-secret').toString('base64'));
const header = (s: string) => `Basic ${Buffer.from(s).toString('base64')}`;

describe('metrics Basic authentication', () => {
  it('accepts exactly the configured pair, with any case of the scheme', () => {
    expect(basicAuthorized(header('prom:test-only-secret'), expected)).toBe(true);
    expect(basicAuthorized(`BASIC ${Buffer.from('prom:test-only-secret').toString('base64')}`, expected)).toBe(true);
  });

  it('refuses a missing header, another scheme, a prefix, an extension and any other pair', () => {
    for (const h of [undefined, '', 'Basic', `Bearer ${Buffer.from('prom:test-only-secret').toString('base64')}`, header('prom:test-only-secre'), header('prom:test-only-secretx'), header('prom'), header(':')]) expect(basicAuthorized(h, expected), String(h)).toBe(false);
    fc.assert(fc.property(fc.string(), (s) => s === 'prom:test-only-secret' || !basicAuthorized(header(s), expected)));
    fc.assert(fc.property(fc.string(), (h) => basicAuthorized(h, expected) === false || h.toLowerCase().startsWith('basic')));
  });
});
