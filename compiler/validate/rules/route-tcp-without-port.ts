import { RouteTcpWithoutPort } from '../../diagnostics/codes/routes.ts';
import type { ValidationRule } from '../rule.ts';
import { fieldPath, fieldSpan, fromUrlOf } from './helpers.ts';

/** `route-tcp-without-port`: a `tcp+https` route's `from` must carry the port it serves. */
export const routeTcpWithoutPort: ValidationRule = {
  reports: [RouteTcpWithoutPort],
  check(input, r) {
    for (const route of input.routes) {
      const parsed = fromUrlOf(route);
      if (!parsed || parsed.url.scheme !== 'tcp+https') continue;
      const { from, url } = parsed;
      if (url.port === '') r.report(RouteTcpWithoutPort, fieldSpan(input, route, 'from'), { from }, fieldPath(route, 'from'));
    }
  },
};
