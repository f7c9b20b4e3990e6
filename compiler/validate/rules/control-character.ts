import { ControlCharacter } from '../../diagnostics/codes/settings.ts';
import { hasControlChar } from '../../ir/values.ts';
import type { ValidationRule } from '../rule.ts';
import { spanOf } from '../rule.ts';

/**
 * Route fields whose strings lowering already checks for control characters (its `str`/`get`
 * readers, the header-map check) or another stage owns (`policy`: the policy stage).
 */
const ROUTE_FIELDS_CHECKED_BY_LOWERING: ReadonlySet<string> = new Set([
  'from', 'name', 'prefix_rewrite', 'tls_server_name',
  'tls_custom_ca', 'tls_custom_ca_file', 'tls_downstream_client_ca', 'tls_downstream_client_ca_file',
  'tls_client_cert', 'tls_client_cert_file', 'tls_client_key', 'tls_client_key_file',
  'orchestrator_service_account_token', 'orchestrator_service_account_token_file',
  'set_request_headers', 'set_response_headers', 'policy',
]);

/**
 * Settings holding lists or maps of strings that lowering does not check itself. Top-level string
 * settings are checked by lowering (or are enums the schema checks); URL lists go through the URL
 * reader, which checks; `set_response_headers` goes through the header-map check; `certificates`
 * entries are file names that must be readable.
 */
const SETTINGS_TO_WALK = ['programmatic_redirect_domain_whitelist', 'idp_scopes', 'idp_request_params', 'jwt_claims_headers'] as const;

/**
 * `control-character` for the strings lowering reads without its control-character check: route
 * path matchers, `to` URLs (the WHATWG URL parser would silently drop a tab or newline), rewrite
 * and redirect fields, header lists, the deprecated allow-lists, health-check fields, and the
 * string lists and maps among the settings. docs/security.md S28: control characters are rejected at
 * compile time, wherever they are. One report per string, at its value.
 */
export const controlCharacter: ValidationRule = {
  reports: [ControlCharacter],
  check(input, r) {
    // The path of the value walked: `base`, then the keys and indexes below it, joined only for a report.
    let base = '';
    const below: (string | number)[] = [];
    const pathHere = () => base + below.map((s) => (typeof s === 'number' ? `[${s}]` : `.${s}`)).join('');
    const walk = (v: unknown): void => {
      if (typeof v === 'string') {
        if (hasControlChar(v)) {
          const path = pathHere();
          r.report(ControlCharacter, spanOf(input, path), { key: path }, path);
        }
      } else if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++) {
          if (!(i in v)) continue; // a hole holds no string
          below.push(i);
          walk(v[i]);
          below.pop();
        }
      } else if (v !== null && typeof v === 'object') {
        for (const k of Object.keys(v)) {
          below.push(k);
          walk((v as Record<string, unknown>)[k]);
          below.pop();
        }
      }
    };
    for (const key of SETTINGS_TO_WALK) {
      const v = input.config[key];
      base = key;
      if (key === 'jwt_claims_headers' && Array.isArray(v)) {
        // List items are `claim` or `Header:claim`; lowering reports a bad header name (a control
        // character in `claim` alone makes `X-Svc-Claim-<claim>` one), so only the claim part of a
        // `Header:claim` item whose header part is clean is left to check here.
        v.forEach((item: unknown, i) => {
          if (typeof item !== 'string') return;
          const colon = item.indexOf(':');
          if (colon > 0 && !hasControlChar(item.slice(0, colon)) && hasControlChar(item.slice(colon + 1))) {
            below.push(i);
            walk(item);
            below.pop();
          }
        });
      } else if (v !== undefined) walk(v);
    }
    for (const route of input.routes) {
      base = route.path;
      for (const field of Object.keys(route.raw)) {
        if (ROUTE_FIELDS_CHECKED_BY_LOWERING.has(field)) continue;
        below.push(field);
        walk(route.raw[field]);
        below.pop();
      }
    }
  },
};
