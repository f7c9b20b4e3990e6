import { MissingRequiredSetting } from '../../diagnostics/codes/settings.ts';
import type { PlanSettings } from '../../plan/types.ts';
import type { ValidationRule } from '../rule.ts';
import { spanOf } from '../rule.ts';
import { isGiven } from './helpers.ts';

type Services = PlanSettings['mode']['services'];

interface Requirement {
  /** The key named in the report. */
  readonly key: string;
  /** Any of these given satisfies the requirement (a singular key and its plural, a secret and its `_file` form). */
  readonly anyOf: readonly string[];
  /** Which `services` values need it. */
  readonly services: readonly Services[];
  /** One shell command that produces a good value, where the established proxy generated or defaulted one. */
  readonly produce?: string;
}

/** A fresh random 32-byte secret, base64: what `shared_secret` and `cookie_secret` take. */
const RANDOM_SECRET = (variable: string, note: string) => `\`export ${variable}="$(head -c32 /dev/urandom | base64)"\` (${note})`;

/** Requirements by mode, from docs/configuration.md "Settings". */
const REQUIREMENTS: readonly Requirement[] = [
  {
    key: 'shared_secret',
    anyOf: ['shared_secret', 'shared_secret_file'],
    services: ['all', 'authenticate', 'authorize', 'databroker', 'proxy'],
    produce: RANDOM_SECRET('SHARED_SECRET', 'the same value for every instance and service'),
  },
  { key: 'cookie_secret', anyOf: ['cookie_secret', 'cookie_secret_file'], services: ['all', 'proxy'], produce: RANDOM_SECRET('COOKIE_SECRET', 'the same value for every instance') },
  { key: 'authenticate_service_url', anyOf: ['authenticate_service_url'], services: ['all', 'authenticate', 'proxy'] },
  { key: 'idp_provider', anyOf: ['idp_provider'], services: ['all', 'authenticate'] },
  { key: 'idp_client_id', anyOf: ['idp_client_id'], services: ['all', 'authenticate'] },
  { key: 'idp_client_secret', anyOf: ['idp_client_secret', 'idp_client_secret_file'], services: ['all', 'authenticate'] },
  {
    key: 'signout_redirect_url',
    anyOf: ['signout_redirect_url'],
    services: ['all', 'proxy'],
    produce: '`export SIGNOUT_REDIRECT_URL=https://www.example.com/` (the page users see after signing out: your home page)',
  },
  // All-in-one mode reaches these on loopback; split services must be told where they are.
  { key: 'authorize_service_url', anyOf: ['authorize_service_url', 'authorize_service_urls'], services: ['proxy'] },
  { key: 'databroker_service_url', anyOf: ['databroker_service_url', 'databroker_service_urls'], services: ['authenticate', 'authorize', 'proxy'] },
];

/**
 * `missing-required-setting`: a setting the selected `services` need is not given. Presence is
 * checked in the config as written, so a key that is there but failed its schema check or its
 * lowering is not reported again. Located at `services` (or `idp_provider`) when written: that is
 * what makes the key required; otherwise nowhere in particular.
 * `autocert_dir` is required with `autocert` unless lowering found its default location (from
 * `XDG_DATA_HOME` or `HOME`). (`databroker_storage_connection_string` for redis storage is
 * reported by lowering.)
 */
export const missingRequiredSetting: ValidationRule = {
  reports: [MissingRequiredSetting],
  check(input, r) {
    const services = input.body.settings.mode.services;
    const servicesAt = input.config['services'] !== undefined ? spanOf(input, 'services') : undefined;
    const why = services === 'all' ? 'in all-in-one mode (`services` `all`)' : `when \`services\` is \`${services}\``;
    for (const req of REQUIREMENTS) {
      if (!req.services.includes(services) || req.anyOf.some((k) => isGiven(input.config, k))) continue;
      const reason = req.key === 'shared_secret' ? 'by every service' : why;
      const args = req.produce === undefined ? { key: req.key, why: reason } : { key: req.key, why: reason, produce: req.produce };
      r.report(MissingRequiredSetting, req.key === 'shared_secret' ? undefined : servicesAt, args, req.key);
    }
    const runsAuthenticate = services === 'all' || services === 'authenticate';
    if (runsAuthenticate && input.config['idp_provider'] === 'oidc' && !isGiven(input.config, 'idp_provider_url')) {
      r.report(MissingRequiredSetting, spanOf(input, 'idp_provider'), { key: 'idp_provider_url', why: 'when `idp_provider` is `oidc`' }, 'idp_provider_url');
    }
    // `autocert_dir` is required with autocert (docs/autocert.md "Settings"); lowering defaults it from the
    // environment, so it is missing only when that default is unavailable too.
    if (input.body.settings.autocert.enabled && input.body.settings.autocert.dir === null && !isGiven(input.config, 'autocert_dir')) {
      r.report(MissingRequiredSetting, spanOf(input, 'autocert'), { key: 'autocert_dir', why: 'when `autocert` is true and neither `XDG_DATA_HOME` nor `HOME` is set' }, 'autocert_dir');
    }
  },
};
