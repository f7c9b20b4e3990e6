/**
 * Host names as TLS sees them: which certificate names cover a host, and which hosts svc serves
 * (the names that get a self-signed certificate when no configured one matches, docs/running.md "TLS").
 */
import type { PlanBody } from '../../compiler/plan/types.ts';
import { isIP } from 'node:net';

/**
 * The host of an SNI name or an HTTP `Host`: lower-case, without a port, without a final dot,
 * without IPv6 brackets.
 */
export function bareHost(host: string): string {
  let h = host.trim().toLowerCase();
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    return end > 0 ? h.slice(1, end) : h;
  }
  const colon = h.lastIndexOf(':');
  // One colon: `name:port`. More than one without brackets: a bare IPv6 address, kept as is.
  if (colon >= 0 && h.indexOf(':') === colon) h = h.slice(0, colon);
  return h.endsWith('.') ? h.slice(0, -1) : h;
}

/**
 * Whether certificate name `pattern` covers `host` (both bare, lower-case): equal, or `*.rest`
 * where `host` is one more label followed by `.rest` (RFC 6125 §6.4.3: the wildcard is a whole
 * left-most label and covers exactly one label).
 */
export function nameCovers(pattern: string, host: string): boolean {
  if (pattern === host) return true;
  if (!pattern.startsWith('*.')) return false;
  const dot = host.indexOf('.');
  return dot > 0 && host.slice(dot + 1) === pattern.slice(2);
}

function hostOfUrl(url: string | null): string | null {
  if (url === null) return null;
  try {
    return bareHost(new URL(url).hostname);
  } catch {
    return null;
  }
}

/**
 * The DNS names of svc's service URLs: every route's `from` host, the authenticate service URL and
 * its internal URL, and the forward-auth URL. IP addresses are left out: SNI never carries one
 * (RFC 6066 §3), so no connection could select a certificate by it.
 */
export function servedHosts(body: PlanBody): ReadonlySet<string> {
  const out = new Set<string>();
  const add = (h: string | null): void => {
    if (h !== null && h !== '' && isIP(h) === 0) out.add(h);
  };
  for (const r of body.routes) add(bareHost(r.from.host));
  const a = body.settings.authenticate;
  add(hostOfUrl(a.serviceUrl));
  add(hostOfUrl(a.internalServiceUrl));
  add(hostOfUrl(a.forwardAuthUrl));
  return out;
}

/**
 * The DNS names a certificate serves, lower-case: its DNS subject alternative names, else its
 * common name (the same rule as the compiler's `certificateNames`, which the runtime may not import).
 */
export function certificateDnsNames(subjectAltName: string | undefined, subject: string): string[] {
  if (subjectAltName) {
    const names = subjectAltName
      .split(/,\s*/)
      .filter((s) => s.startsWith('DNS:'))
      .map((s) => s.slice(4).toLowerCase());
    if (names.length > 0) return names;
  }
  const cn = /(?:^|\n)CN=([^\n]+)/.exec(subject)?.[1];
  return cn ? [cn.toLowerCase()] : [];
}

/**
 * The `https` route hosts that none of `names` covers, sorted, once each: the names a handshake
 * would answer with a generated self-signed certificate unless autocert manages them. DNS names
 * only: IP hosts (SNI never carries one) and wildcard hosts (the compiler refuses them) are left out.
 * The compiler's route-host-without-certificate rule asks the same of the names it read.
 */
export function uncoveredRouteHosts(body: PlanBody, names: readonly string[]): string[] {
  const out = new Set<string>();
  for (const r of body.routes) {
    if (r.from.scheme !== 'https') continue;
    const h = bareHost(r.from.host);
    if (h === '' || h.includes('*') || isIP(h) !== 0) continue;
    if (!names.some((n) => nameCovers(n, h))) out.add(h);
  }
  return [...out].sort();
}
