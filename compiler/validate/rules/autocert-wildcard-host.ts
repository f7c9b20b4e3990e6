import { AutocertWildcardHost } from '../../diagnostics/codes/settings.ts';
import type { ValidationRule } from '../rule.ts';
import { fieldPath, fieldSpan, fromUrlOf } from './helpers.ts';

/**
 * `autocert-wildcard-host`: with `autocert: true`, a route `from` host that is a wildcard is not
 * covered by autocert (a wildcard certificate needs DNS-01, which svc does not answer; see
 * runtime/tls/acme/names.ts), so unless a configured certificate covers it, its clients get a
 * self-signed certificate. Located at the route's `from`; once per route.
 */
export const autocertWildcardHost: ValidationRule = {
  reports: [AutocertWildcardHost],
  check(input, r) {
    const s = input.body.settings;
    if (!s.autocert.enabled || s.server.insecure) return;
    const configured = s.tls.certificates.flatMap((c) => c.names.map((n) => n.toLowerCase()));
    for (const route of input.routes) {
      const parsed = fromUrlOf(route);
      if (!parsed) continue; // invalid-url, reported by lowering
      const host = parsed.url.hostname.toLowerCase();
      if (!host.includes('*')) continue;
      // Only the same wildcard name covers a wildcard host (a certificate name has one `*`, leftmost).
      if (configured.includes(host)) continue;
      r.report(AutocertWildcardHost, fieldSpan(input, route, 'from'), { host }, fieldPath(route, 'from'));
    }
  },
};
