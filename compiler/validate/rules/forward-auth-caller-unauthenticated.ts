import { ForwardAuthCallerUnauthenticated } from '../../diagnostics/codes/settings.ts';
import type { ValidationRule } from '../rule.ts';
import { spanOf } from '../rule.ts';
import { isGiven } from './helpers.ts';

/**
 * `forward-auth-caller-unauthenticated` (warning): `forward_auth_url` creates the forward-auth
 * endpoint, but nothing authenticates the proxies that call it (docs/security.md S13). svc
 * authenticates them by mTLS only: with `client_ca` (or `client_ca_file`) set, the runtime answers
 * a forward-auth request without a valid client certificate with 495. So this warns when
 * `client_ca` is not set, or when it is set but no certificate can be presented: the listener is
 * plain HTTP (`insecure_server: true`) or `forward_auth_url` itself is an `http` URL.
 *
 * Not reported when `forward_auth_url` did not lower (its own diagnostic says why). A `client_ca`
 * that is written counts as set even if it did not lower: that is reported on its own, and the
 * intent to authenticate callers is there. At the `forward_auth_url` value.
 */
export const forwardAuthCallerUnauthenticated: ValidationRule = {
  reports: [ForwardAuthCallerUnauthenticated],
  check(input, r) {
    const c = input.config;
    const s = input.body.settings;
    const url = s.authenticate.forwardAuthUrl;
    if (!isGiven(c, 'forward_auth_url') || url === null) return;
    const why = !isGiven(c, 'client_ca') && !isGiven(c, 'client_ca_file')
      ? '`client_ca` is not set, so the proxies calling it are not authenticated'
      : s.server.insecure || new URL(url).protocol === 'http:'
        ? 'client certificates cannot be checked over plain HTTP'
        : undefined;
    if (why !== undefined) r.report(ForwardAuthCallerUnauthenticated, spanOf(input, 'forward_auth_url'), { why }, 'forward_auth_url');
  },
};
