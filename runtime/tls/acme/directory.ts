/**
 * The ACME directory URL of a plan: `autocert_ca` when set (it overrides `autocert_use_staging`,
 * docs/autocert.md "Staging versus production"), else Let's Encrypt's staging or production directory.
 */
import type { PlanSettings } from '../../../compiler/plan/types.ts';

const LETSENCRYPT_PRODUCTION = 'https://acme-v02.api.letsencrypt.org/directory';
const LETSENCRYPT_STAGING = 'https://acme-staging-v02.api.letsencrypt.org/directory';

export function directoryUrl(autocert: PlanSettings['autocert']): string {
  if (autocert.caUrl !== null) return autocert.caUrl;
  return autocert.useStaging ? LETSENCRYPT_STAGING : LETSENCRYPT_PRODUCTION;
}
