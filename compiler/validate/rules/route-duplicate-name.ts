import { RouteDuplicateName } from '../../diagnostics/codes/routes.ts';
import { formatLocation } from '../../source/source-file.ts';
import type { ValidationRule } from '../rule.ts';
import { fieldPath, fieldSpan, strField } from './helpers.ts';

/**
 * `route-duplicate-name`: route names identify routes (plan ids, metrics, `svc diff`), so each is
 * used once. Names compare exactly. Reported at every later use, naming where it was first used.
 */
export const routeDuplicateName: ValidationRule = {
  reports: [RouteDuplicateName],
  check(input, r) {
    const first = new Map<string, string>();
    for (const route of input.routes) {
      const name = strField(route.raw, 'name');
      if (name === undefined || name === '') continue;
      const at = fieldSpan(input, route, 'name');
      const seen = first.get(name);
      if (seen !== undefined) r.report(RouteDuplicateName, at, { name, first: seen }, fieldPath(route, 'name'));
      else first.set(name, at ? formatLocation(at) : route.path);
    }
  },
};
