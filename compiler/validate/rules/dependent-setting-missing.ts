import { DependentSettingMissing } from '../../diagnostics/codes/settings.ts';
import type { ValidationRule } from '../rule.ts';
import { spanOf } from '../rule.ts';
import { isGiven } from './helpers.ts';

/**
 * Settings (each side: any of its spellings) that need another one to work. `mutual` pairs need
 * each other; otherwise only `needy` needs `needed`. The first spelling of the missing side is
 * named, or its `_file` spelling when the present side uses the `_file` form.
 */
const DEPENDENCIES: readonly { readonly needy: readonly string[]; readonly needed: readonly string[]; readonly mutual: boolean }[] = [
  { needy: ['autocert_eab_key_id'], needed: ['autocert_eab_mac_key'], mutual: true },
  { needy: ['metrics_certificate', 'metrics_certificate_file'], needed: ['metrics_certificate_key', 'metrics_certificate_key_file'], mutual: true },
  { needy: ['databroker_storage_cert_file'], needed: ['databroker_storage_key_file'], mutual: true },
  // A revocation list is checked against client certificates, which only a client CA asks for.
  { needy: ['client_crl', 'client_crl_file'], needed: ['client_ca', 'client_ca_file'], mutual: false },
  // Client certificates can only be asked for on a TLS metrics listener.
  { needy: ['metrics_client_ca', 'metrics_client_ca_file'], needed: ['metrics_certificate', 'metrics_certificate_file'], mutual: false },
];

/**
 * `dependent-setting-missing`: a setting that cannot work without another one that is not given.
 * Reported at the value of the setting that is there. (The main `certificate` / `certificate_key`
 * pair is reported by lowering.)
 */
export const dependentSettingMissing: ValidationRule = {
  reports: [DependentSettingMissing],
  check(input, r) {
    const given = (k: string) => isGiven(input.config, k);
    for (const dep of DEPENDENCIES) {
      const directions = dep.mutual ? [[dep.needy, dep.needed], [dep.needed, dep.needy]] : [[dep.needy, dep.needed]];
      for (const [mine, other] of directions as [readonly string[], readonly string[]][]) {
        const key = mine.find(given);
        if (key === undefined || other.some(given)) continue;
        const needs = key.endsWith('_file') ? (other.find((k) => k.endsWith('_file')) ?? other[0]!) : other[0]!;
        r.report(DependentSettingMissing, spanOf(input, key), { key, needs }, key);
      }
    }
  },
};
