import { RouteShadowed } from '../../diagnostics/codes/routes.ts';
import type { PathMatch, Route } from '../../plan/types.ts';
import { formatLocation } from '../../source/source-file.ts';
import type { RouteInput, ValidationRule } from '../rule.ts';
import { fieldPath, fieldSpan } from './helpers.ts';

/**
 * Tells whether every path `b` matches is also matched by `a`. Conservative: `false` means "not
 * proven", never "proven not". Normalized paths always start with `/`, so prefix `/` (or the empty
 * prefix) matches everything. Regexes are compared by source only (no reasoning about languages).
 */
export function matchCovers(a: PathMatch, b: PathMatch): boolean {
  if (b.kind === 'path') return matchCoversPath(a, b.path);
  switch (a.kind) {
    case 'any':
      return true;
    case 'prefix': {
      const p = a.prefix;
      if (p === '' || p === '/') return true;
      return b.kind === 'prefix' && b.prefix.startsWith(p);
    }
    case 'path':
      return false;
    case 'regex':
      return b.kind === 'regex' && b.regex === a.regex;
  }
}

/** `matchCovers(a, { kind: 'path', path })`: whether `a` matches the path `path`. */
export function matchCoversPath(a: PathMatch, path: string): boolean {
  switch (a.kind) {
    case 'any':
      return true;
    case 'prefix':
      return a.prefix === '' || a.prefix === '/' || path.startsWith(a.prefix);
    case 'path':
      return path === a.path;
    case 'regex':
      return false;
  }
}

/** A path matcher with its `path`/`prefix` lower-cased (a regex folds case itself, by its route's flag). */
function folded(m: PathMatch): PathMatch {
  if (m.kind === 'prefix') return { ...m, prefix: m.prefix.toLowerCase() };
  if (m.kind === 'path') return { ...m, path: m.path.toLowerCase() };
  return m;
}

/**
 * Tells whether route `a` matches every path route `b` matches, `path_case` included: a
 * case-sensitive `a` covers a case-insensitive `b` only when it matches every path.
 */
export function routeCovers(a: Route, b: Route): boolean {
  if (a.pathCase === 'insensitive') return b.pathCase === 'insensitive' || b.match.kind !== 'regex' ? matchCovers(folded(a.match), folded(b.match)) : matchCovers(a.match, b.match);
  if (b.pathCase === 'insensitive') return a.match.kind === 'any' || (a.match.kind === 'prefix' && (a.match.prefix === '' || a.match.prefix === '/'));
  return matchCovers(a.match, b.match);
}

/** The listener a route answers on: scheme, host and port of its `from`. */
function listenerKey(route: Route): string {
  return `${route.from.scheme}://${route.from.host}:${route.from.port ?? ''}`;
}

/**
 * `route-shadowed` (warning): routes are tried in listed order and the first match wins (docs/decisions.md §3
 * rule 1), so a route is never used when an earlier route on the same `from` (scheme, host, port)
 * matches every path it matches. Reported once per shadowed route, at its `from`, naming the first
 * earlier route that covers it.
 */
export const routeShadowed: ValidationRule = {
  reports: [RouteShadowed],
  check(input, r) {
    // Earlier routes grouped by listener, so the cost grows with the routes sharing a host, not
    // with every route of the config (10,000 routes over 1,000 hosts stay cheap).
    const seenByListener = new Map<string, { route: Route; input: RouteInput }[]>();
    for (const ri of input.routes) {
      const route = ri.lowered;
      if (!route) continue;
      const key = listenerKey(route);
      let seen = seenByListener.get(key);
      if (seen === undefined) seenByListener.set(key, (seen = []));
      const by = seen.find((s) => routeCovers(s.route, route));
      if (by) {
        const at = fieldSpan(input, by.input, 'from');
        r.report(RouteShadowed, fieldSpan(input, ri, 'from'), { by: by.route.index, byAt: at ? formatLocation(at) : by.input.path }, fieldPath(ri, 'from'));
      }
      seen.push({ route, input: ri });
    }
  },
};
