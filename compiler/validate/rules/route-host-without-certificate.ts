import { isIP } from 'node:net';
import { RouteHostWithoutCertificate } from '../../diagnostics/codes/routes.ts';
import type { ValidationRule } from '../rule.ts';
import { fieldPath, fieldSpan, isGiven } from './helpers.ts';

/** A configured certificate name covers a host: equal, or `*.rest` covering exactly one more label (RFC 6125 §6.4.3). */
function nameCovers(pattern: string, host: string): boolean {
  if (pattern === host) return true;
  if (!pattern.startsWith('*.')) return false;
  const dot = host.indexOf('.');
  return dot > 0 && host.slice(dot + 1) === pattern.slice(2);
}

/** How many certificate pairs the config writes: the single pair (inline or file) and the `certificates` list. */
function writtenPairs(config: Readonly<Record<string, unknown>>): number {
  const single = isGiven(config, 'certificate') || isGiven(config, 'certificate_file') ? 1 : 0;
  const list = config['certificates'];
  return single + (Array.isArray(list) ? list.length : 0);
}

/**
 * `route-host-without-certificate`: the listener serves TLS with configured certificates only (no
 * `insecure_server`, no `autocert`, which obtains a certificate for every route host but
 * wildcards), and an `https` route's `from` host is covered by none of their names (the names the
 * compiler read from each certificate: DNS subject alternative names, else the common name). The
 * runtime would answer that SNI name with a generated self-signed certificate
 * (runtime/tls/certificates.ts). Left out: IP hosts (SNI never carries one), wildcard hosts
 * (refused by route-from-wildcard-host), `tcp+https` routes (their host is the tunnel target, not a
 * TLS name), no certificate at all (no-certificates), and a config whose certificates did not all
 * lower (their own diagnostics say why). Located at the route's `from`; once per host.
 */
export const routeHostWithoutCertificate: ValidationRule = {
  reports: [RouteHostWithoutCertificate],
  check(input, r) {
    const s = input.body.settings;
    if (s.server.insecure || s.autocert.enabled) return;
    const certificates = s.tls.certificates;
    if (certificates.length === 0 || certificates.length !== writtenPairs(input.config)) return;
    const names = certificates.flatMap((c) => c.names.map((n) => n.toLowerCase()));
    const reported = new Set<string>();
    for (const route of input.routes) {
      const from = route.lowered?.from;
      if (!from || from.scheme !== 'https') continue;
      const host = from.host.toLowerCase().replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '');
      if (host === '' || host.includes('*') || isIP(host) !== 0 || reported.has(host)) continue;
      if (names.some((n) => nameCovers(n, host))) continue;
      reported.add(host);
      r.report(RouteHostWithoutCertificate, fieldSpan(input, route, 'from'), { host }, fieldPath(route, 'from'));
    }
  },
};
