import { RouteRedirectConflict } from '../../diagnostics/codes/routes.ts';
import type { ValidationRule } from '../rule.ts';
import { keySpanOf } from '../rule.ts';
import { mapField } from './helpers.ts';

/**
 * `route-redirect-conflict`: `path_redirect` with `prefix_rewrite` (both replace the path), and
 * `https_redirect: true` with `scheme_redirect` (both set the scheme). Reported at the second of
 * the two as written.
 */
export const routeRedirectConflict: ValidationRule = {
  reports: [RouteRedirectConflict],
  check(input, r) {
    for (const route of input.routes) {
      const red = mapField(route.raw, 'redirect');
      if (!red) continue;
      const conflicts: [string, string, boolean][] = [
        ['path_redirect', 'prefix_rewrite', typeof red['path_redirect'] === 'string' && typeof red['prefix_rewrite'] === 'string'],
        ['https_redirect', 'scheme_redirect', red['https_redirect'] === true && typeof red['scheme_redirect'] === 'string'],
      ];
      for (const [x, y, both] of conflicts) {
        if (!both) continue;
        const px = `${route.path}.redirect.${x}`;
        const py = `${route.path}.redirect.${y}`;
        const [a, b, pb] = (keySpanOf(input, px)?.start ?? 0) <= (keySpanOf(input, py)?.start ?? 0) ? [x, y, py] : [y, x, px];
        r.report(RouteRedirectConflict, keySpanOf(input, pb), { a, b }, pb);
      }
    }
  },
};
