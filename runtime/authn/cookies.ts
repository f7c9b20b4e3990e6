/**
 * Reading one cookie out of a `Cookie` header and writing `Set-Cookie` values (RFC 6265). Hand-
 * written: the two functions are a few lines each, and the proxy's hot path reads one cookie per
 * request, where a general parser building a whole object would cost more.
 */

/**
 * The value of the first cookie named `name` in the request's `Cookie` header values, or undefined.
 * A name appearing twice (a cookie tossed in from a sibling domain) still yields the first one; the
 * value must then open, or the request counts as signed out (fail closed).
 */
export function readCookie(values: readonly string[] | undefined, name: string): string | undefined {
  if (!values) return undefined;
  for (const header of values) {
    let start = 0;
    while (start < header.length) {
      let end = header.indexOf(';', start);
      if (end < 0) end = header.length;
      const eq = header.indexOf('=', start);
      if (eq > start && eq < end && header.slice(start, eq).trim() === name) {
        let v = header.slice(eq + 1, end).trim();
        if (v.length >= 2 && v.startsWith('"') && v.endsWith('"')) v = v.slice(1, -1);
        return v;
      }
      start = end + 1;
    }
  }
  return undefined;
}

/** The attributes of a cookie svc sets. */
export interface CookieAttributes {
  /** Seconds; 0 deletes the cookie. */
  readonly maxAgeSeconds: number;
  readonly secure: boolean;
  readonly httpOnly: boolean;
  /** `Domain` (a parent domain, `cookie_domain`), or null for a host-only cookie. */
  readonly domain: string | null;
  readonly path?: string;
  readonly sameSite?: 'Lax' | 'Strict' | 'None';
}

/** A `Set-Cookie` value. `value` must already be cookie-safe (svc only writes base64url). */
export function serializeCookie(name: string, value: string, a: CookieAttributes): string {
  let s = `${name}=${value}; Path=${a.path ?? '/'}; Max-Age=${Math.max(0, Math.floor(a.maxAgeSeconds))}`;
  if (a.maxAgeSeconds <= 0) s += '; Expires=Thu, 01 Jan 1970 00:00:00 GMT';
  if (a.domain !== null) s += `; Domain=${a.domain}`;
  if (a.secure) s += '; Secure';
  if (a.httpOnly) s += '; HttpOnly';
  s += `; SameSite=${a.sameSite ?? 'Lax'}`;
  return s;
}

/**
 * The `Domain` attribute for a cookie set on `host` (a canonical host, maybe with a port): the
 * configured `cookie_domain` when `host` is that domain or under it, else null (host-only). A
 * browser would refuse a Domain that does not cover the host, so svc never sends one.
 */
export function cookieDomainFor(host: string, cookieDomain: string | null): string | null {
  if (cookieDomain === null) return null;
  const name = host.replace(/:\d+$/, '');
  const d = cookieDomain.replace(/^\./, '').toLowerCase();
  return name === d || name.endsWith(`.${d}`) ? d : null;
}

/** The prefix a browser keeps for host-only, `Secure`, `Path=/` cookies (RFC 6265bis §4.1.3.2). */
export const HOST_PREFIX = '__Host-';

/**
 * The name of a cookie that must not be plantable from a sibling subdomain: `__Host-{name}` when the
 * cookie is `Secure` (a browser refuses a `__Host-` cookie that is not Secure, has a `Domain` or
 * another path, so nobody but the host itself can set it), else `name` unchanged: without `Secure`
 * the prefix would make the browser drop the cookie, and such a cookie stays plantable.
 */
export function hostCookieName(name: string, secure: boolean): string {
  return secure && !name.startsWith(HOST_PREFIX) ? `${HOST_PREFIX}${name}` : name;
}
