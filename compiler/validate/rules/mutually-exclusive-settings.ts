import { MutuallyExclusiveSettings } from '../../diagnostics/codes/settings.ts';
import type { ValidationRule } from '../rule.ts';
import { keySpanOf } from '../rule.ts';
import { isGiven } from './helpers.ts';

/**
 * `mutually-exclusive-settings`, for the cases lowering does not already report (lowering reports
 * a value with its `_file` form through the PEM and key readers, and singular/plural service URLs):
 * - `insecure_server: true` with `autocert: true`: one says "no TLS", the other "obtain
 *   certificates for TLS";
 * - a route's `orchestrator_service_account_token` with its `_file` form (lowering takes the value).
 * Reported at the key written second.
 */
export const mutuallyExclusiveSettings: ValidationRule = {
  reports: [MutuallyExclusiveSettings],
  check(input, r) {
    const pair = (pa: string, pb: string, a: string, b: string) => {
      const [first, second] = (keySpanOf(input, pa)?.start ?? 0) <= (keySpanOf(input, pb)?.start ?? 0) ? [a, b] : [b, a];
      const path = second === a ? pa : pb;
      r.report(MutuallyExclusiveSettings, keySpanOf(input, path), { a: first, b: second }, path);
    };
    if (input.config['insecure_server'] === true && input.config['autocert'] === true) pair('insecure_server', 'autocert', 'insecure_server', 'autocert');
    for (const route of input.routes) {
      const a = 'orchestrator_service_account_token';
      const b = 'orchestrator_service_account_token_file';
      if (isGiven(route.raw, a) && isGiven(route.raw, b)) pair(`${route.path}.${a}`, `${route.path}.${b}`, a, b);
    }
  },
};
