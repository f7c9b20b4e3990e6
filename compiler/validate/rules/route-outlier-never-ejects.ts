import { RouteOutlierNeverEjects } from '../../diagnostics/codes/routes.ts';
import { spanOf } from '../rule.ts';
import type { ValidationRule } from '../rule.ts';
import { fieldKeySpan, fieldPath, mapField, toEntriesOf } from './helpers.ts';

/** Envoy's default `max_ejection_percent`, which the plan uses when none is given. */
const DEFAULT_MAX_EJECTION_PERCENT = 10;

/**
 * `route-outlier-never-ejects`: an ejection is allowed only while the ejected share stays within
 * `max_ejection_percent`, so with the default 10 % a route with fewer than 10 upstreams can never
 * eject one; outlier detection would be configured and silently do nothing. Reported at
 * `max_ejection_percent` when written, else at `outlier_detection`.
 */
export const routeOutlierNeverEjects: ValidationRule = {
  reports: [RouteOutlierNeverEjects],
  check(input, r) {
    for (const route of input.routes) {
      const od = mapField(route.raw, 'outlier_detection');
      if (!od) continue;
      const upstreams = toEntriesOf(route).length;
      if (upstreams === 0) continue;
      const written = od['max_ejection_percent'];
      const percent = typeof written === 'number' ? written : DEFAULT_MAX_EJECTION_PERCENT;
      if (100 <= percent * upstreams) continue;
      const path = typeof written === 'number' ? `${route.path}.outlier_detection.max_ejection_percent` : fieldPath(route, 'outlier_detection');
      const at = typeof written === 'number' ? spanOf(input, path) : fieldKeySpan(input, route, 'outlier_detection');
      r.report(RouteOutlierNeverEjects, at, { percent, upstreams, needed: Math.ceil(100 / upstreams) }, path);
    }
  },
};
