/**
 * Which names autocert manages for a plan (`autocert`, docs/autocert.md): every route's `from` host and the
 * authenticate service's host, as DNS names. Left out, and why:
 * - wildcard hosts (`*.example.com`): they need the DNS-01 challenge, which svc cannot answer
 *   (the compiler warns, SVC3050);
 * - IP addresses: SNI never carries one (RFC 6066 §3), and public CAs do not issue for them here;
 * - names a configured certificate covers: configured certificates win for the names they cover
 *   (the SNI choice would never serve a managed one), so ordering one would only spend the CA's
 *   rate limit. Their OCSP staples are still kept (ocsp.ts).
 */
import { isIP } from 'node:net';
import type { PlanBody } from '../../../compiler/plan/types.ts';
import { bareHost, nameCovers } from '../host-names.ts';

/** The names to obtain certificates for, sorted. */
export function managedNames(body: PlanBody): string[] {
  const configured = body.settings.tls.certificates.flatMap((c) => c.names.map((n) => n.toLowerCase()));
  const out = new Set<string>();
  for (const h of candidateHosts(body)) {
    if (h.includes('*') || isIP(h) !== 0 || h === '') continue;
    if (configured.some((n) => nameCovers(n, h))) continue;
    out.add(h);
  }
  return [...out].sort();
}

function candidateHosts(body: PlanBody): string[] {
  const hosts = body.routes.map((r) => bareHost(r.from.host));
  const auth = body.settings.authenticate.serviceUrl;
  if (auth !== null) {
    try {
      hosts.push(bareHost(new URL(auth).hostname));
    } catch {
      // The compiler checked the URL; an unparsable one names no host.
    }
  }
  return hosts;
}
