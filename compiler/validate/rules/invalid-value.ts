import { isIP } from 'node:net';
import { InvalidValue } from '../../diagnostics/codes/settings.ts';
import { hasControlChar, isHeaderName } from '../../ir/values.ts';
import type { ValidationRule } from '../rule.ts';
import { spanOf } from '../rule.ts';

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i;

/** Tells whether `s` is a DNS host name (letters, digits, `-`; labels of 1 to 63) or an IP address. */
export function isHostName(s: string): boolean {
  if (isIP(s) !== 0) return true;
  return s.length > 0 && s.length <= 253 && s.split('.').every((l) => LABEL.test(l));
}

/**
 * `invalid-value`: values of the right type that the setting cannot use:
 * - `authenticate_callback_path`: an absolute path (`/…`) without query or fragment;
 * - `cookie_name`: a cookie-name token (RFC 6265, the RFC 9110 token characters), not empty;
 * - `cookie_domain`: a host name, optionally with a leading `.`;
 * - `cookie_expire`: more than `0` (a session that expires at once can never be used);
 * - `tracing_sample_rate`: a fraction from 0 to 1;
 * - `programmatic_redirect_domain_whitelist`: host names (matched exactly; no wildcards, ports
 *   or schemes).
 */
export const invalidValue: ValidationRule = {
  reports: [InvalidValue],
  check(input, r) {
    // Values with control characters are reported as such (control-character) and not again here.
    const c = Object.fromEntries(Object.entries(input.config).filter(([, v]) => typeof v !== 'string' || !hasControlChar(v)));
    const bad = (key: string, value: unknown, expected: string) => r.report(InvalidValue, spanOf(input, key), { key, value: String(value), expected }, key);

    const cb = c['authenticate_callback_path'];
    if (typeof cb === 'string' && (!cb.startsWith('/') || /[?#]/.test(cb))) bad('authenticate_callback_path', cb, 'expected a path starting with `/`, without query or fragment');

    const name = c['cookie_name'];
    if (typeof name === 'string' && !isHeaderName(name)) bad('cookie_name', name, 'a cookie name is letters, digits and ``!#$%&\'*+-.^_`|~``');

    const domain = c['cookie_domain'];
    if (typeof domain === 'string' && domain !== '' && !isHostName(domain.replace(/^\./, ''))) bad('cookie_domain', domain, 'expected a host name such as `example.com`');

    if (c['cookie_expire'] !== undefined && input.body.settings.cookie.expireMs === 0) bad('cookie_expire', c['cookie_expire'], 'sessions would expire as soon as they start; use a positive duration such as `14h`');

    const rate = c['tracing_sample_rate'];
    if (typeof rate === 'number' && !(rate >= 0 && rate <= 1)) bad('tracing_sample_rate', rate, 'expected a fraction from `0` to `1`');

    const domains = c['programmatic_redirect_domain_whitelist'];
    if (Array.isArray(domains)) {
      domains.forEach((d: unknown, i) => {
        if (typeof d !== 'string' || hasControlChar(d) || isHostName(d)) return;
        const key = `programmatic_redirect_domain_whitelist[${i}]`;
        r.report(InvalidValue, spanOf(input, key), { key, value: d, expected: 'expected a host name such as `app.example.com` (matched exactly)' }, key);
      });
    }
  },
};
