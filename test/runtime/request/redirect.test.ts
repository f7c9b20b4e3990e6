/**
 * runtime/request/redirect.ts httpsRedirectLocation: the `Location` of the http→https redirect
 * listener (`http_redirect_addr`) is built from the canonical target, so an absolute-form target
 * gives its own path and query on the HTTPS host (docs/security.md S45), and what cannot be rebuilt is
 * refused (null → 400).
 */
import { describe, expect, it } from 'vitest';
import { httpsRedirectLocation } from '../../../runtime/request/redirect.ts';

describe('httpsRedirectLocation', () => {
  it('keeps host, path and query of an origin-form target, on the HTTPS port', () => {
    expect(httpsRedirectLocation('/a/b?x=1', 'app.example.com', 443)).toBe('https://app.example.com/a/b?x=1');
    expect(httpsRedirectLocation('/a', 'App.Example.com:80', 8443)).toBe('https://app.example.com:8443/a');
    expect(httpsRedirectLocation('/', 'app.example.com:8080', 443)).toBe('https://app.example.com/');
  });

  it('builds an absolute-form target from its path and query, never gluing the target after the host', () => {
    expect(httpsRedirectLocation('http://app.example.com/a/b?x=1', 'app.example.com', 8443)).toBe('https://app.example.com:8443/a/b?x=1');
    expect(httpsRedirectLocation('http://app.example.com', undefined, 443)).toBe('https://app.example.com/');
    expect(httpsRedirectLocation('HTTP://APP.example.com:80/x', 'app.example.com', 443)).toBe('https://app.example.com/x');
  });

  it('normalizes the path as the HTTPS listener will (dot segments, slashes), keeps escapes it decides on', () => {
    expect(httpsRedirectLocation('/a/../b//c', 'app.example.com', 443)).toBe('https://app.example.com/b/c');
    expect(httpsRedirectLocation('/a%2fb;p', 'app.example.com', 443)).toBe('https://app.example.com/a%2Fb;p');
  });

  it('refuses what cannot be rebuilt: another host, userinfo, an invalid host or target', () => {
    expect(httpsRedirectLocation('http://evil.example.com/x', 'app.example.com', 443)).toBeNull();
    expect(httpsRedirectLocation('http://alice:pw@app.example.com/x', 'app.example.com', 443)).toBeNull();
    expect(httpsRedirectLocation('/x', 'evil.example.com/@x', 443)).toBeNull();
    expect(httpsRedirectLocation('/x', undefined, 443)).toBeNull();
    expect(httpsRedirectLocation('/x', '[::1]', 443)).toBeNull();
    expect(httpsRedirectLocation('*', 'app.example.com', 443)).toBeNull();
    expect(httpsRedirectLocation('/x#f', 'app.example.com', 443)).toBeNull();
    expect(httpsRedirectLocation('ftp://app.example.com/x', 'app.example.com', 443)).toBeNull();
  });
});
