/**
 * The canonical request (docs/architecture.md §2 invariant 2) and the docs/security.md rows it owns: S06 dot segments,
 * S07 encoded separators, S08 repeated slashes, S09 raw `#`, S10 (the query never reaches the path).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalRequest, type CanonicalResult } from '../../../runtime/request/canonical-request.ts';

const path = (target: string) => {
  const r = canonicalRequest(target, 'app.example.com', 'https');
  return r.ok ? r.request.path : r.problem;
};

describe('S06: dot segments are resolved after decoding unreserved escapes', () => {
  it.each([
    ['/public/../admin', '/admin'],
    ['/public/%2e%2e/admin', '/admin'],
    ['/public/%2E%2e/admin', '/admin'],
    ['/public/.%2e/admin', '/admin'],
    ['/./admin', '/admin'],
    ['/%2e/admin', '/admin'],
    ['/../../admin', '/admin'],
    ['/a/b/..', '/a/'],
    ['/a/.', '/a/'],
    ['/a/...', '/a/...'],
    ['/%41%7e%5F', '/A~_'],
  ])('%s -> %s', (target, expected) => {
    expect(path(target)).toBe(expected);
  });
});

describe('S07: encoded separators, NUL, `;`, `?` and `#` in the path are refused', () => {
  it.each(['/admin%2Fsecret', '/admin%2fsecret', '/admin%5csecret', '/admin%5Csecret', '/admin%00', '/admin%3b', '/admin%3B', '/admin%23', '/admin%3f', '/a%0a', '/a%0D', '/a%7f'])('%s', (target) => {
    expect(path(target)).toBe('target-forbidden-escape');
  });
  it('other escapes are kept, with upper-case hex', () => {
    expect(path('/files/a%20b%3a%c3%a9')).toBe('/files/a%20b%3A%C3%A9');
    expect(path('/100%25')).toBe('/100%25');
  });
  it.each(['/a%', '/a%2', '/a%zz', '/a%%41'])('malformed escape %s', (target) => {
    expect(path(target)).toBe('target-malformed-escape');
  });
});

describe('S08: repeated slashes are merged the same way for every use', () => {
  it.each([
    ['//admin', '/admin'],
    ['/admin//config', '/admin/config'],
    ['/a///b//', '/a/b/'],
    ['//..//admin', '/admin'],
  ])('%s -> %s', (target, expected) => {
    expect(path(target)).toBe(expected);
  });
});

describe('S09 and raw characters: refused, never guessed at', () => {
  it.each([
    ['/user/profile#x', 'target-fragment'],
    ['/user?x=1#y', 'target-fragment'],
    ['/a\\b', 'target-backslash'],
    ['/a b', 'target-invalid-character'],
    ['/a\tb', 'target-invalid-character'],
    ['/a\u0000', 'target-invalid-character'],
    ['/é', 'target-invalid-character'],
    ['*', 'target-not-origin-form'],
    ['admin', 'target-not-origin-form'],
    ['/a?x=%0a', 'target-forbidden-escape'],
    ['/a?x=%5c', 'target-forbidden-escape'],
    ['/a?x=%g0', 'target-malformed-escape'],
  ])('%j -> %s', (target, problem) => {
    expect(path(target)).toBe(problem);
  });
});

describe('S10: the query is kept apart from the path', () => {
  it('a path-looking query does not change the path', () => {
    const r = canonicalRequest('/admin?x=/public/../y&z=%2F', 'app.example.com', 'https');
    expect(r).toEqual({ ok: true, request: { hostname: 'app.example.com', port: undefined, host: 'app.example.com', path: '/admin', query: 'x=/public/../y&z=%2F' } });
  });
});

describe('host', () => {
  const host = (h: string | undefined, scheme: 'http' | 'https' = 'https', target = '/') => {
    const r: CanonicalResult = canonicalRequest(target, h, scheme);
    return r.ok ? r.request.host : r.problem;
  };
  it.each([
    ['App.Example.COM', 'https', 'app.example.com'],
    ['app.example.com:443', 'https', 'app.example.com'],
    ['app.example.com:80', 'http', 'app.example.com'],
    ['app.example.com:80', 'https', 'app.example.com:80'],
    ['app.example.com:08443', 'https', 'app.example.com:8443'],
    ['[::1]:8443', 'https', '[::1]:8443'],
    ['app.example.com:', 'https', 'app.example.com'],
  ] as const)('%s over %s -> %s', (h, scheme, expected) => {
    expect(host(h, scheme)).toBe(expected);
  });
  it.each([[undefined, 'host-missing'], ['', 'host-missing'], ['a b', 'host-invalid'], ['user@app.example.com', 'host-invalid'], ['app:0', 'host-invalid'], ['app:65536', 'host-invalid'], ['app:1:2', 'host-invalid'], ['[::1', 'host-invalid']])('%j -> %s', (h, problem) => {
    expect(host(h)).toBe(problem);
  });
  it('an absolute-form target names the host, as RFC 9112 requires; a Host beside it must agree', () => {
    expect(host(undefined, 'https', 'https://Other.Example.com:443/x')).toBe('other.example.com');
    expect(host('OTHER.example.com:443', 'https', 'https://Other.Example.com/x')).toBe('other.example.com');
    const r = canonicalRequest('http://other.example.com', 'other.example.com', 'http');
    expect(r.ok && r.request.path).toBe('/');
  });
  // One authority per request (docs/security.md S52): a second statement of it naming another host is refused.
  it.each([
    ['app.example.com', 'https://other.example.com/x', 'host-conflict'],
    ['app.example.com:8443', 'https://app.example.com/x', 'host-conflict'],
    ['app.example.com', 'https://app.example.com:8443/x', 'host-conflict'],
    ['app.example.com.', 'https://app.example.com/x', 'host-conflict'],
    [' app.example.com', 'https://app.example.com/x', 'host-invalid'],
    ['app.example.com ', 'https://app.example.com/x', 'host-invalid'],
    ['', 'https://app.example.com/x', 'host-invalid'],
  ] as const)('Host %j beside %s -> %s', (h, target, problem) => {
    expect(host(h, 'https', target)).toBe(problem);
  });
  it('HTTP/2 :authority is the authority; a host beside it must name the same host', () => {
    const withAuthority = (authority: string, hostHeader: string | undefined, target = '/x') => {
      const r = canonicalRequest(target, hostHeader, 'https', { authority });
      return r.ok ? r.request.host : r.problem;
    };
    expect(withAuthority('app.example.com', undefined)).toBe('app.example.com');
    expect(withAuthority('app.example.com', 'APP.example.com:443')).toBe('app.example.com');
    expect(withAuthority('app.example.com', 'evil.example')).toBe('host-conflict');
    expect(withAuthority('evil.example', 'app.example.com')).toBe('host-conflict');
    expect(withAuthority('app.example.com', 'app.example.com ')).toBe('host-invalid');
    expect(withAuthority('app.example.com', undefined, 'https://evil.example/x')).toBe('host-conflict');
    expect(withAuthority(' app.example.com', undefined)).toBe('host-invalid');
  });
});

describe('properties', () => {
  const piece = fc.constantFrom('/', '/', 'a', 'B', '.', '..', '%2e', '%2E', '%41', '%7e', '%20', '%25', '%2f', '%5c', '%', '?', 'x=/..', '#', '\\', ';', '~');
  const target = fc.array(piece, { maxLength: 12 }).map((ps) => `/${ps.join('')}`);

  it('a canonical path has no dot segments, no empty segments and no escaped unreserved character', () => {
    fc.assert(
      fc.property(target, (t) => {
        const r = canonicalRequest(t, 'app.example.com', 'https');
        if (!r.ok) return;
        const p = r.request.path;
        expect(p.startsWith('/')).toBe(true);
        expect(p).not.toMatch(/\/\//);
        expect(`${p}/`).not.toMatch(/\/\.\.?\//);
        expect(p).not.toMatch(/%(?:2[dDeE]|5[fF]|7[eE]|[46][1-9a-fA-F]|[57][0-9aA]|3[0-9])/);
      }),
    );
  });

  it('canonicalization is idempotent', () => {
    fc.assert(
      fc.property(target, (t) => {
        const r = canonicalRequest(t, 'app.example.com', 'https');
        if (!r.ok) return;
        const again = canonicalRequest(r.request.query === '' ? r.request.path : `${r.request.path}?${r.request.query}`, r.request.host, 'https');
        expect(again).toEqual(r);
      }),
    );
  });
});
