import { RouteSetsHostHeader } from '../../diagnostics/codes/routes.ts';
import type { ValidationRule } from '../rule.ts';
import { fieldKeySpan, fieldPath, mapField } from './helpers.ts';

/**
 * `route-sets-host-header`: `set_request_headers` cannot name `Host` (any case) or a `:`
 * pseudo-header (docs/decisions.md §6); the upstream Host is chosen by the host-rewrite options. Reported at
 * the header's key.
 */
export const routeSetsHostHeader: ValidationRule = {
  reports: [RouteSetsHostHeader],
  check(input, r) {
    for (const route of input.routes) {
      const headers = mapField(route.raw, 'set_request_headers');
      if (!headers) continue;
      for (const name of Object.keys(headers)) {
        if (name.trim().toLowerCase() !== 'host' && !name.startsWith(':')) continue;
        const p = fieldPath(route, `set_request_headers.${name}`);
        r.report(RouteSetsHostHeader, fieldKeySpan(input, route, `set_request_headers.${name}`), { name }, p);
      }
    }
  },
};
