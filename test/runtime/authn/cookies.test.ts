/** Reading svc's cookie from a request and writing Set-Cookie values. */
import { describe, expect, it } from 'vitest';
import { cookieDomainFor, readCookie, serializeCookie } from '../../../runtime/authn/cookies.ts';
import { stripCredentials } from '../../../runtime/authn/identity-headers.ts';

describe('readCookie', () => {
  it('finds the named cookie among others and across header lines', () => {
    expect(readCookie(['a=1; _svc=abc; b=2'], '_svc')).toBe('abc');
    expect(readCookie(['a=1', '_svc=xyz'], '_svc')).toBe('xyz');
    expect(readCookie(['_svc_signin_x=1; _svc="q"'], '_svc')).toBe('q');
    expect(readCookie(['x_svc=1; svc=2'], '_svc')).toBeUndefined();
    expect(readCookie(undefined, '_svc')).toBeUndefined();
  });

  it('takes the first of duplicates (the value must then open, or the request is signed out)', () => {
    expect(readCookie(['_svc=first; _svc=second'], '_svc')).toBe('first');
  });
});

describe('serializeCookie', () => {
  it('writes the configured attributes, SameSite=Lax by default', () => {
    expect(serializeCookie('_svc', 'v', { maxAgeSeconds: 60, secure: true, httpOnly: true, domain: null })).toBe('_svc=v; Path=/; Max-Age=60; Secure; HttpOnly; SameSite=Lax');
    expect(serializeCookie('_svc', '', { maxAgeSeconds: 0, secure: false, httpOnly: false, domain: 'example.com' })).toBe('_svc=; Path=/; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Domain=example.com; SameSite=Lax');
  });

  it('sets Domain only for hosts the cookie domain covers', () => {
    expect(cookieDomainFor('app.example.com', 'example.com')).toBe('example.com');
    expect(cookieDomainFor('app.example.com:8443', '.example.com')).toBe('example.com');
    expect(cookieDomainFor('example.com', 'example.com')).toBe('example.com');
    expect(cookieDomainFor('app.other.example', 'example.com')).toBeNull();
    expect(cookieDomainFor('badexample.com', 'example.com')).toBeNull();
    expect(cookieDomainFor('app.example.com', null)).toBeNull();
  });
});

describe('stripCredentials', () => {
  it("removes svc's session and sign-in cookies and its bearer token, keeps the app's own", () => {
    const h: Record<string, string | string[]> = { cookie: 'a=1; _svc=secret; _svc_signin_abc=x; b=2', authorization: 'Bearer svc1.token' };
    stripCredentials(h, '_svc');
    expect(h).toEqual({ cookie: 'a=1; b=2' });
    const only: Record<string, string | string[]> = { cookie: '_svc=secret', authorization: 'Bearer app-token' };
    stripCredentials(only, '_svc');
    expect(only).toEqual({ authorization: 'Bearer app-token' });
  });

  it('removes every copy, and the sign-in binding cookie (sent on every path under a __Host- name)', () => {
    const h: Record<string, string | string[]> = { cookie: 'app=1; _svc=X; _svc_bind_abc=y; b=2; _svc=X' };
    stripCredentials(h, '_svc');
    expect(h).toEqual({ cookie: 'app=1; b=2' });
  });

  it('keeps cookies whose names only start with svc\'s (`_svcx`, `_svc_other`)', () => {
    const h: Record<string, string | string[]> = { cookie: '_svcx=1' };
    stripCredentials(h, '_svc');
    expect(h).toEqual({ cookie: '_svcx=1' });
    const two: Record<string, string | string[]> = { cookie: '_svc_other=2; _svc=secret' };
    stripCredentials(two, '_svc');
    expect(two).toEqual({ cookie: '_svc_other=2' });
  });
});
