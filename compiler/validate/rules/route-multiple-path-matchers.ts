import { RouteMultiplePathMatchers } from '../../diagnostics/codes/routes.ts';
import type { ValidationRule } from '../rule.ts';
import { fieldKeySpan, fieldList, fieldPath, writtenOrder } from './helpers.ts';

const MATCHERS = ['path', 'prefix', 'regex'] as const;

/**
 * `route-multiple-path-matchers`: at most one of `path`, `prefix` and `regex`. Lowering takes the
 * first of them in that order; the report points at the second one written.
 */
export const routeMultiplePathMatchers: ValidationRule = {
  reports: [RouteMultiplePathMatchers],
  check(input, r) {
    for (const route of input.routes) {
      const set = writtenOrder(input, route, MATCHERS).filter((f) => typeof route.raw[f] === 'string');
      if (set.length < 2) continue;
      const second = set[1]!;
      r.report(RouteMultiplePathMatchers, fieldKeySpan(input, route, second), { fields: fieldList(set) }, fieldPath(route, second));
    }
  },
};
