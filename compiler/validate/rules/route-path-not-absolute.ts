import { RoutePathNotAbsolute } from '../../diagnostics/codes/routes.ts';
import type { Reporter } from '../../diagnostics/diagnostic.ts';
import type { RouteInput, RuleInput, ValidationRule } from '../rule.ts';
import { spanOf } from '../rule.ts';
import { hasControlChar } from '../../ir/values.ts';
import { mapField } from './helpers.ts';

const ROUTE_FIELDS = ['path', 'prefix', 'prefix_rewrite'] as const;
const REDIRECT_FIELDS = ['path_redirect', 'prefix_rewrite'] as const;

/** Reports `obj[field]` (`label` under the route) when it is a string that does not start with `/`. */
function checkPath(input: RuleInput, r: Reporter, route: RouteInput, obj: Readonly<Record<string, unknown>>, field: string, label: string): void {
  const v = obj[field];
  if (typeof v !== 'string' || v.startsWith('/') || hasControlChar(v)) return;
  const p = `${route.path}.${label}`;
  r.report(RoutePathNotAbsolute, spanOf(input, p), { field: label, value: v }, p);
}

/**
 * `route-path-not-absolute`: `path`, `prefix`, `prefix_rewrite` and the redirect's `path_redirect`
 * and `prefix_rewrite` must start with `/` (an empty value too: it matches or writes a path
 * without its leading slash). Matching runs on normalized paths, which always start with `/`.
 */
export const routePathNotAbsolute: ValidationRule = {
  reports: [RoutePathNotAbsolute],
  check(input, r) {
    for (const route of input.routes) {
      for (const f of ROUTE_FIELDS) checkPath(input, r, route, route.raw, f, f);
      const redirect = mapField(route.raw, 'redirect');
      if (redirect) for (const f of REDIRECT_FIELDS) checkPath(input, r, route, redirect, f, `redirect.${f}`);
    }
  },
};
