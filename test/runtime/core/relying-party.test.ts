/**
 * The device page's relying party id (runtime/core/relying-party.ts, docs/authentication.md
 * "Devices"): the authenticate host's registrable domain under the public suffix list, none for a
 * host that has no registrable domain; and, as a property over generated names, always the host or
 * a suffix of it and never a public suffix (docs/security.md S65).
 */
import fc from 'fast-check';
import { getDomain, getPublicSuffix } from 'tldts';
import { describe, expect, it } from 'vitest';
import { relyingPartyId, underRelyingParty } from '../../../runtime/core/relying-party.ts';

describe('the relying party id', () => {
  it('is the registrable domain of the authenticate host, public suffix list included', () => {
    expect(relyingPartyId('authenticate.example.com')).toBe('example.com');
    expect(relyingPartyId('authenticate.example.com:8443')).toBe('example.com');
    expect(relyingPartyId('example.com')).toBe('example.com');
    // Two-label public suffixes: dropping the first label (the old guess) gives corp.example.co.uk,
    // and for auth.co.uk the public suffix co.uk itself.
    expect(relyingPartyId('auth.corp.example.co.uk')).toBe('example.co.uk');
    expect(relyingPartyId('auth.example.co.uk')).toBe('example.co.uk');
    expect(relyingPartyId('auth.co.uk')).toBe('auth.co.uk');
    // The list's private section: never a suffix shared by every tenant of a hosting service.
    expect(relyingPartyId('auth.team.github.io')).toBe('team.github.io');
    // Names under a top-level label the list does not know follow its default rule, as browsers do.
    expect(relyingPartyId('authenticate.svc.localhost')).toBe('svc.localhost');
    expect(relyingPartyId('auth.corp.internal')).toBe('corp.internal');
    expect(relyingPartyId('AUTH.Example.COM.')).toBe('example.com');
    expect(relyingPartyId(null)).toBeNull();
  });

  it('is none for a host without a registrable domain: an IP address, localhost, a bare public suffix', () => {
    for (const host of ['127.0.0.1', '127.0.0.1:8443', '[::1]', '[::1]:8443', 'localhost', 'localhost:8443', 'co.uk', 'com', 'github.io', '']) expect(relyingPartyId(host), host).toBeNull();
  });

  it('serves route hosts equal to it or under it, and no other', () => {
    expect(underRelyingParty('app.example.com', 'example.com')).toBe(true);
    expect(underRelyingParty('example.com:8443', 'example.com')).toBe(true);
    expect(underRelyingParty('app.notexample.com', 'example.com')).toBe(false);
    expect(underRelyingParty('example.com.evil.org', 'example.com')).toBe(false);
  });

  it('property: always the host or a dot-separated suffix of it, and never a public suffix', () => {
    const label = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?$/);
    const suffix = fc.constantFrom('com', 'co.uk', 'example.co.uk', 'github.io', 'localhost', 'internal', 'jp', 'kawasaki.jp', 'city.kawasaki.jp', 'blogspot.com', 'appspot.com', 's3.amazonaws.com', 'ck', 'www.ck', 'test', '');
    const host = fc.tuple(fc.array(label, { minLength: 0, maxLength: 4 }), suffix, fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined })).map(([labels, s, port]) => {
      const name = [...labels, s].filter((x) => x !== '').join('.');
      return port === undefined ? name : `${name}:${port}`;
    });
    fc.assert(
      fc.property(host, (h) => {
        const rp = relyingPartyId(h);
        if (rp === null) return;
        const name = h.replace(/:\d+$/, '');
        expect(name === rp || name.endsWith(`.${rp}`)).toBe(true);
        // A public suffix (either section of the list, or the default rule's last label) is never one.
        expect(getPublicSuffix(rp, { allowPrivateDomains: true })).not.toBe(rp);
        expect(getDomain(rp, { allowPrivateDomains: true })).toBe(rp);
        expect(underRelyingParty(h, rp)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });
});
