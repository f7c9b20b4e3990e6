import { RouteHealthCheckKind } from '../../diagnostics/codes/routes.ts';
import type { ValidationRule } from '../rule.ts';
import { keySpanOf, spanOf } from '../rule.ts';
import { fieldPath } from './helpers.ts';

const KINDS = ['http_health_check', 'tcp_health_check', 'grpc_health_check'] as const;

/**
 * `route-health-check-kind`: each `health_checks` entry configures exactly one of the three check
 * kinds (docs/running.md "Load balancing and health"). Lowering falls back to a TCP connect check for an entry with none, and takes
 * the first for an entry with several. Reported at the second kind written, or at the entry.
 */
export const routeHealthCheckKind: ValidationRule = {
  reports: [RouteHealthCheckKind],
  check(input, r) {
    for (const route of input.routes) {
      const list = route.raw['health_checks'];
      if (!Array.isArray(list)) continue;
      list.forEach((entry: unknown, j) => {
        if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) return;
        const p = fieldPath(route, `health_checks[${j}]`);
        const kinds = KINDS.filter((k) => (entry as Record<string, unknown>)[k] !== undefined).sort(
          (a, b) => (keySpanOf(input, `${p}.${a}`)?.start ?? 0) - (keySpanOf(input, `${p}.${b}`)?.start ?? 0),
        );
        if (kinds.length === 1) return;
        const at = kinds.length === 0 ? spanOf(input, p) : keySpanOf(input, `${p}.${kinds[1]!}`);
        r.report(RouteHealthCheckKind, at, { count: kinds.length }, kinds.length === 0 ? p : `${p}.${kinds[1]!}`);
      });
    }
  },
};
