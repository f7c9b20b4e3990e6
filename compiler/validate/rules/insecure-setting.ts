import { InsecureSetting } from '../../diagnostics/codes/settings.ts';
import type { ValidationRule } from '../rule.ts';
import { spanOf } from '../rule.ts';

/**
 * `insecure-setting` (warning): legal settings that weaken security, each reported at its value:
 * `cookie_secure: false`, `cookie_http_only: false`, `grpc_insecure: true` outside all-in-one mode
 * (where gRPC stays on loopback), `databroker_storage_tls_skip_verify: true`, `svc_debug: true`,
 * `idp_trust_unverified_email: true`.
 */
export const insecureSetting: ValidationRule = {
  reports: [InsecureSetting],
  check(input, r) {
    const c = input.config;
    const warn = (key: string, risk: string) => r.report(InsecureSetting, spanOf(input, key), { key, risk }, key);
    if (c['cookie_secure'] === false) warn('cookie_secure', 'is `false`: browsers send the session cookie over plain HTTP');
    if (c['cookie_http_only'] === false) warn('cookie_http_only', 'is `false`: browser scripts can read the session cookie');
    if (c['grpc_insecure'] === true && !input.body.settings.mode.allInOne) warn('grpc_insecure', 'is `true`: services talk to each other over unencrypted gRPC');
    if (c['databroker_storage_tls_skip_verify'] === true) warn('databroker_storage_tls_skip_verify', 'is `true`: the storage server\'s certificate is not verified');
    if (c['svc_debug'] === true) warn('svc_debug', 'is `true`: logs may contain sensitive data');
    if (c['idp_trust_unverified_email'] === true) warn('idp_trust_unverified_email', 'is `true`: an email the identity provider did not verify counts for policy and is sent upstream');
  },
};
