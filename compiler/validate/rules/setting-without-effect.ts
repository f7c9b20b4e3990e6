import { SettingWithoutEffect } from '../../diagnostics/codes/settings.ts';
import type { ValidationRule } from '../rule.ts';
import { keySpanOf } from '../rule.ts';
import { isGiven } from './helpers.ts';

const AUTOCERT_KEYS = [
  'autocert_ca', 'autocert_email', 'autocert_must_staple', 'autocert_dir', 'autocert_use_staging',
  'autocert_eab_key_id', 'autocert_eab_mac_key', 'autocert_trusted_ca', 'autocert_trusted_ca_file',
] as const;

const METRICS_KEYS = [
  'metrics_basic_auth', 'metrics_basic_auth_file', 'metrics_certificate', 'metrics_certificate_key', 'metrics_certificate_file',
  'metrics_certificate_key_file', 'metrics_client_ca', 'metrics_client_ca_file',
] as const;

/** Tracing settings and the provider they belong to (`undefined`: any provider). */
const TRACING_KEYS: readonly (readonly [string, string | undefined])[] = [
  ['tracing_sample_rate', undefined],
  ['tracing_apm_address', 'apm'],
  ['tracing_jaeger_collector_endpoint', 'jaeger'],
  ['tracing_jaeger_agent_endpoint', 'jaeger'],
  ['tracing_zipkin_endpoint', 'zipkin'],
  ['tracing_otlp_endpoint', 'otlp'],
];

/**
 * `setting-without-effect` (warning): a setting that is ignored because what it configures is not
 * turned on: `autocert_*` without `autocert: true` (docs/autocert.md "Settings": used only
 * when `autocert` is true), `metrics_*` without `metrics_address`, tracing settings without (or for another)
 * `tracing_provider`, `databroker_storage_connection_string` (or its `_file` form) with memory storage. A warning, not
 * an error: such settings are harmless, but usually mean the switch was forgotten. At the key.
 */
export const settingWithoutEffect: ValidationRule = {
  reports: [SettingWithoutEffect],
  check(input, r) {
    const c = input.config;
    const warn = (key: string, because: string) => r.report(SettingWithoutEffect, keySpanOf(input, key), { key, because }, key);
    if (c['autocert'] !== true) for (const k of AUTOCERT_KEYS) if (isGiven(c, k)) warn(k, 'without `autocert: true`');
    if (!isGiven(c, 'metrics_address')) for (const k of METRICS_KEYS) if (isGiven(c, k)) warn(k, 'without `metrics_address`');
    const provider = c['tracing_provider'];
    for (const [k, owner] of TRACING_KEYS) {
      if (!isGiven(c, k)) continue;
      if (typeof provider !== 'string') warn(k, 'without `tracing_provider`');
      else if (owner !== undefined && owner !== provider) warn(k, `with \`tracing_provider\` \`${provider}\``);
    }
    for (const k of ['databroker_storage_connection_string', 'databroker_storage_connection_string_file']) {
      if (isGiven(c, k) && input.body.settings.databroker.storage.type !== 'redis') warn(k, 'with `databroker_storage_type` `memory`');
    }
  },
};
