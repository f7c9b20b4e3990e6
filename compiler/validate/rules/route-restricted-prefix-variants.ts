import { RouteRestrictedPrefixVariants } from '../../diagnostics/codes/routes.ts';
import type { PathMatch, Route } from '../../plan/types.ts';
import { formatLocation } from '../../source/source-file.ts';
import type { RouteInput, ValidationRule } from '../rule.ts';
import { fieldPath, fieldSpan } from './helpers.ts';
import { matchCoversPath } from './route-shadowed.ts';

/** The matched path of a `path` or `prefix` matcher; undefined for the rest (nothing to vary). */
function matchedPath(m: PathMatch): string | undefined {
  return m.kind === 'path' ? m.path : m.kind === 'prefix' && m.prefix !== '' && m.prefix !== '/' ? m.prefix : undefined;
}

/**
 * The paths a restricted route misses that an upstream may read as its own: the upper-cased form
 * (a case-sensitive route with letters in its path), and the form with a `;` path parameter in its
 * first segment (`/admin;x/…`), which only a route that opts into `;` can be asked for.
 */
function variants(route: Route, path: string): { readonly path: string; readonly parameter: boolean }[] {
  const out: { path: string; parameter: boolean }[] = [];
  if (route.pathCase === 'sensitive' && path.toUpperCase() !== path) out.push({ path: path.toUpperCase(), parameter: false });
  const first = /^\/[^/;]+/.exec(path)?.[0];
  if (first !== undefined) out.push({ path: `${first};x${path.slice(first.length)}`, parameter: true });
  return out;
}

/** Whether public route `p` answers `path` (its own `path_case`; `;` only when it opts in). */
function answers(p: Route, v: { readonly path: string; readonly parameter: boolean }): boolean {
  if (v.parameter && !p.allowPathParameters) return false;
  const m = p.match;
  if (p.pathCase !== 'insensitive') return matchCoversPath(m, v.path);
  const folded: PathMatch = m.kind === 'prefix' ? { kind: 'prefix', prefix: m.prefix.toLowerCase() } : m.kind === 'path' ? { kind: 'path', path: m.path.toLowerCase() } : m;
  return matchCoversPath(folded, v.path.toLowerCase());
}

/**
 * `route-restricted-prefix-variants` (warning, docs/decisions.md §3): a route with a policy on `path` or
 * `prefix`, followed on the same `from` by a public route that answers the restricted path's case
 * variants or `;` variants. Routes are tried in order and the restricted one misses those variants,
 * so they reach the public route and an upstream that reads paths case-insensitively, or drops `;`
 * parameters, serves the restricted path to anyone. Reported once per restricted route, naming the
 * first public route that answers a variant. Regex routes are not analysed.
 */
export const routeRestrictedPrefixVariants: ValidationRule = {
  reports: [RouteRestrictedPrefixVariants],
  check(input, r) {
    const byListener = new Map<string, { route: Route; input: RouteInput }[]>();
    for (const ri of input.routes) {
      const route = ri.lowered;
      if (!route || route.from.scheme !== 'https') continue;
      const key = `${route.from.host}:${route.from.port ?? ''}`;
      let list = byListener.get(key);
      if (list === undefined) byListener.set(key, (list = []));
      list.push({ route, input: ri });
    }
    for (const routes of byListener.values()) {
      routes.forEach(({ route, input: ri }, i) => {
        const path = route.public ? undefined : matchedPath(route.match);
        if (path === undefined) return;
        const vs = variants(route, path);
        for (let j = i + 1; j < routes.length; j++) {
          const later = routes[j]!;
          if (!later.route.public) continue;
          const v = vs.find((x) => answers(later.route, x));
          if (v === undefined) continue;
          const field = route.match.kind === 'path' ? 'path' : 'prefix';
          const at = fieldSpan(input, later.input, 'from');
          r.report(RouteRestrictedPrefixVariants, fieldSpan(input, ri, field), { matcher: `${field} \`${path}\``, variant: v.path, by: later.route.index, byAt: at ? formatLocation(at) : later.input.path }, fieldPath(ri, field));
          return;
        }
      });
    }
  },
};
