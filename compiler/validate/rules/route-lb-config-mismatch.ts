import { RouteLbConfigMismatch } from '../../diagnostics/codes/routes.ts';
import type { ValidationRule } from '../rule.ts';
import { fieldKeySpan, fieldPath, strField } from './helpers.ts';

const CONFIG_POLICY = {
  least_request_lb_config: 'LEAST_REQUEST',
  ring_hash_lb_config: 'RING_HASH',
  maglev_lb_config: 'MAGLEV',
} as const;

/**
 * `route-lb-config-mismatch`: an `*_lb_config` object only configures its own `lb_policy`
 * (default `ROUND_ROBIN`); with another policy it would be silently ignored. Reported at its key.
 */
export const routeLbConfigMismatch: ValidationRule = {
  reports: [RouteLbConfigMismatch],
  check(input, r) {
    for (const route of input.routes) {
      const policy = strField(route.raw, 'lb_policy') ?? 'ROUND_ROBIN';
      for (const [field, wants] of Object.entries(CONFIG_POLICY)) {
        if (route.raw[field] === undefined || policy === wants) continue;
        r.report(RouteLbConfigMismatch, fieldKeySpan(input, route, field), { field, policy }, fieldPath(route, field));
      }
    }
  },
};
