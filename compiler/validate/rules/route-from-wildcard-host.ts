import { RouteFromWildcardHost } from '../../diagnostics/codes/routes.ts';
import type { ValidationRule } from '../rule.ts';
import { fieldPath, fieldSpan, strField } from './helpers.ts';

/**
 * `route-from-wildcard-host`: a `*` in a route's `from` host is refused. Hosts are matched
 * exactly, so `https://*.example.com` would be compared literally and never match: a silent failure.
 */
export const routeFromWildcardHost: ValidationRule = {
  reports: [RouteFromWildcardHost],
  check(input, r) {
    for (const route of input.routes) {
      const from = strField(route.raw, 'from');
      if (from === undefined) continue;
      const authority = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i.exec(from)?.[1];
      if (authority?.includes('*')) r.report(RouteFromWildcardHost, fieldSpan(input, route, 'from'), { from }, fieldPath(route, 'from'));
    }
  },
};
