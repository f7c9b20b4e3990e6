import { NoCertificates } from '../../diagnostics/codes/settings.ts';
import type { ValidationRule } from '../rule.ts';
import { spanOf } from '../rule.ts';
import { isGiven } from './helpers.ts';

const CERTIFICATE_KEYS = ['certificates', 'certificate', 'certificate_file', 'certificate_key', 'certificate_key_file'] as const;

/**
 * `no-certificates`: without a certificate, `insecure_server` or `autocert` the service has nothing
 * to serve TLS with (docs/running.md "TLS"). Not reported when a certificate setting is written but did
 * not lower (its own diagnostic says why). Located at `insecure_server: false` when written, else
 * nowhere in particular (the problem is an absence).
 */
export const noCertificates: ValidationRule = {
  reports: [NoCertificates],
  check(input, r) {
    const s = input.body.settings;
    if (s.tls.certificates.length > 0 || s.server.insecure || s.autocert.enabled) return;
    if (CERTIFICATE_KEYS.some((k) => isGiven(input.config, k))) return;
    const at = input.config['insecure_server'] !== undefined ? spanOf(input, 'insecure_server') : undefined;
    r.report(NoCertificates, at, {}, at ? 'insecure_server' : undefined);
  },
};
