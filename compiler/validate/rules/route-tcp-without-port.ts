import { RouteTcpWithoutPort } from '../../diagnostics/codes/routes.ts';
import type { ValidationRule } from '../rule.ts';
import { fieldPath, fieldSpan, parseFromUrl, schemeOf, strField } from './helpers.ts';

/** `route-tcp-without-port`: a `tcp+https` route's `from` must carry the port it serves. */
export const routeTcpWithoutPort: ValidationRule = {
  reports: [RouteTcpWithoutPort],
  check(input, r) {
    for (const route of input.routes) {
      const from = strField(route.raw, 'from');
      const u = from === undefined ? undefined : parseFromUrl(from);
      if (from === undefined || !u || schemeOf(u) !== 'tcp+https') continue;
      if (u.port === '') r.report(RouteTcpWithoutPort, fieldSpan(input, route, 'from'), { from }, fieldPath(route, 'from'));
    }
  },
};
