import { urlPattern, VALUE_PATTERNS } from '../ir/values.ts';
import { SETTINGS } from '../settings/table.ts';
import type { SettingSpec } from '../settings/types.ts';

type Schema = Record<string, unknown>;

const str: Schema = { type: 'string' };
const bool: Schema = { type: 'boolean' };
const uint: Schema = { type: 'integer', minimum: 0 };
/** Durations are strings with units (`30s`) or the integer `0`; `$defs.duration` has the grammar. */
const duration: Schema = { $ref: '#/$defs/duration' };
/** One of several shapes. Ajv's strict mode refuses union `type`s, so unions are `anyOf`. */
const either = (...shapes: Schema[]): Schema => ({ anyOf: shapes });
const strList: Schema = { type: 'array', items: str };
const strMap: Schema = { type: 'object', additionalProperties: str };

function obj(properties: Record<string, Schema>, required: string[] = []): Schema {
  const s: Schema = { type: 'object', properties, additionalProperties: false };
  if (required.length > 0) s['required'] = required;
  return s;
}

function settingSchema(s: SettingSpec): Schema {
  const base: Schema = { description: s.meaning };
  switch (s.kind) {
    case 'bool':
      return { ...base, ...bool };
    case 'uint':
      return { ...base, type: 'integer', minimum: 0, maximum: 4294967295 };
    case 'number':
      return { ...base, type: 'number' };
    case 'duration':
      return { ...base, ...duration };
    case 'enum':
      return { ...base, type: 'string', enum: [...(s.values ?? [])] };
    case 'list':
      return { ...base, ...strList };
    case 'map':
      return { ...base, ...strMap };
    case 'url':
      return { ...base, type: 'string', pattern: urlPattern(s.schemes) };
    case 'hostport':
      return { ...base, type: 'string', pattern: VALUE_PATTERNS.hostPort };
    case 'secret32':
      return { ...base, type: 'string', pattern: VALUE_PATTERNS.secret32 };
    case 'special':
      switch (s.key) {
        case 'routes':
        case 'policy':
          return { ...base, type: 'array', items: { $ref: '#/$defs/route' } };
        case 'certificates':
          return { ...base, type: 'array', items: obj({ cert: str, key: str }, ['cert', 'key']) };
        case 'set_response_headers':
          return { ...base, type: 'object', additionalProperties: either(str, bool) };
        case 'jwt_claims_headers':
          // The string is the comma form (`email,groups`); coerce.ts turns it into the list.
          return { ...base, ...either(strList, strMap, str) };
      }
      throw new Error(`no schema for special setting ${s.key}`);
    default:
      return { ...base, ...str };
  }
}

const healthCheck = obj({
  timeout: duration,
  interval: duration,
  initial_jitter: duration,
  interval_jitter: duration,
  interval_jitter_percent: uint,
  unhealthy_threshold: uint,
  healthy_threshold: uint,
  reuse_connection: bool,
  no_traffic_interval: duration,
  unhealthy_interval: duration,
  http_health_check: obj({
    host: str,
    path: str,
    expected_statuses: { type: 'array', items: obj({ start: uint, end: uint }, ['start', 'end']) },
    codec_client_type: { type: 'string', enum: ['HTTP1', 'HTTP2'] },
  }),
  tcp_health_check: obj({
    send: obj({ text: str }),
    receive: { type: 'array', items: obj({ text: str }) },
  }),
  grpc_health_check: obj({ service_name: str, authority: str }),
});

/** Fields of a route (docs/configuration.md "Route fields") and of its redirect object (docs/decisions.md §7). */
export const ROUTE_FIELDS: Record<string, Schema> = {
  from: str,
  to: either(str, strList),
  redirect: obj({
    https_redirect: bool,
    scheme_redirect: str,
    host_redirect: str,
    port_redirect: { type: 'integer', minimum: 1, maximum: 65535 },
    path_redirect: str,
    prefix_rewrite: str,
    // Only the redirects browsers follow: 300, 304, 305 and the rest are refused where written.
    response_code: { type: 'integer', enum: [301, 302, 303, 307, 308] },
    strip_query: bool,
  }),
  policy: { description: 'policy statements (YAML/JSON) or the policy text syntax' },
  allowed_domains: strList,
  allowed_groups: strList,
  allowed_users: strList,
  allowed_idp_claims: { type: 'object' },
  cors_allow_preflight: bool,
  allow_public_unauthenticated_access: bool,
  allow_any_authenticated_user: bool,
  enable_hostedcloud_serverless_authentication: bool,
  orchestrator_service_account_token: str,
  orchestrator_service_account_token_file: str,
  path: str,
  prefix: str,
  regex: str,
  prefix_rewrite: str,
  regex_rewrite_pattern: str,
  regex_rewrite_substitution: str,
  preserve_host_header: bool,
  host_rewrite: str,
  host_rewrite_header: str,
  host_path_regex_rewrite_pattern: str,
  host_path_regex_rewrite_substitution: str,
  timeout: duration,
  idle_timeout: duration,
  set_request_headers: strMap,
  remove_request_headers: strList,
  set_response_headers: strMap,
  rewrite_response_headers: { type: 'array', items: obj({ header: str, prefix: str, value: str }, ['header', 'value']) },
  pass_identity_headers: bool,
  tls_skip_verify: bool,
  tls_server_name: str,
  tls_custom_ca: str,
  tls_custom_ca_file: str,
  tls_downstream_client_ca: str,
  tls_downstream_client_ca_file: str,
  tls_client_cert: str,
  tls_client_key: str,
  tls_client_cert_file: str,
  tls_client_key_file: str,
  allow_spdy: bool,
  allow_websockets: bool,
  allow_encoded_path_characters: bool,
  allow_path_parameters: bool,
  path_case: { type: 'string', enum: ['sensitive', 'insensitive'] },
  allow_underscores_in_headers: bool,
  name: str,
  lb_policy: { type: 'string', enum: ['ROUND_ROBIN', 'LEAST_REQUEST', 'RING_HASH', 'RANDOM', 'MAGLEV'] },
  least_request_lb_config: obj({ choice_count: { type: 'integer', minimum: 2 }, active_request_bias: { type: 'number', minimum: 0 } }),
  ring_hash_lb_config: obj({
    minimum_ring_size: { type: 'integer', minimum: 1, maximum: 8388608 },
    maximum_ring_size: { type: 'integer', minimum: 1, maximum: 8388608 },
    hash_function: { type: 'string', enum: ['XX_HASH', 'MURMUR_HASH_2'] },
  }),
  maglev_lb_config: obj({ table_size: { type: 'integer', minimum: 1, maximum: 5000011 } }),
  health_checks: { type: 'array', items: healthCheck },
  outlier_detection: obj({
    consecutive_5xx: uint,
    consecutive_gateway_failure: uint,
    consecutive_local_origin_failure: uint,
    interval: duration,
    base_ejection_time: duration,
    max_ejection_time: duration,
    max_ejection_percent: { type: 'integer', minimum: 0, maximum: 100 },
    enforcing_consecutive_5xx: { type: 'integer', minimum: 0, maximum: 100 },
    enforcing_consecutive_gateway_failure: { type: 'integer', minimum: 0, maximum: 100 },
    success_rate_minimum_hosts: uint,
    success_rate_request_volume: uint,
    success_rate_stdev_factor: uint,
    enforcing_success_rate: { type: 'integer', minimum: 0, maximum: 100 },
    split_external_local_origin_errors: bool,
  }),
};

/**
 * The JSON schema of a configuration (draft-07), built from the settings table so the two cannot
 * drift. `schemas/config.schema.json` is this, written by `npm run gen:schemas`, for editors.
 */
export function configSchema(): Schema {
  const properties: Record<string, Schema> = {};
  for (const s of SETTINGS) properties[s.key] = settingSchema(s);
  return {
    $schema: 'http://json-schema.org/draft-07/schema#',
    $id: 'https://svc.dev/schemas/config.schema.json',
    title: 'svc configuration',
    type: 'object',
    properties,
    additionalProperties: false,
    $defs: {
      duration: {
        description: 'a number with a unit suffix (`30s`, `1h45m`), or `0`',
        ...either({ type: 'string', pattern: VALUE_PATTERNS.duration }, { type: 'integer', const: 0 }),
      },
      route: { type: 'object', properties: ROUTE_FIELDS, required: ['from'], additionalProperties: false },
    },
  };
}
