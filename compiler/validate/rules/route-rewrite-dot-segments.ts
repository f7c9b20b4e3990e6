import { RouteRewriteDotSegments } from '../../diagnostics/codes/routes.ts';
import type { PathMatch } from '../../plan/types.ts';
import type { ValidationRule } from '../rule.ts';
import { fieldKeySpan, fieldPath } from './helpers.ts';

/** A segment that an upstream resolves: `.` or `..`, a dot also written `%2E`. */
function isDotSegment(segment: string): boolean {
  const s = segment.replace(/%2e/gi, '.');
  return s === '.' || s === '..';
}

/**
 * The request and forwarded path that show a `prefix_rewrite` `rewrite` (joined with the `to`
 * path `to`) splicing a dot segment, or undefined when it cannot (docs/decisions.md §6 steps 1-5).
 * The canonical path has no dot segment, so the splice makes one only (a) inside the constant part
 * (the joined replacement), or (b) at its end, when the rest begins mid-segment (a prefix not ending
 * in `/`) and the constant part's last segment is `` or `.`, so a rest of `..` or `.` completes it.
 */
export function dotSegmentExample(match: PathMatch, rewrite: string, to: string): { request: string; forwarded: string } | undefined {
  const replacement = rewrite.startsWith('/') ? rewrite : `/${rewrite}`;
  const constant = to === '' ? replacement : to + replacement.slice(1);
  const matched = match.kind === 'prefix' ? match.prefix : match.kind === 'path' ? match.path : '/';
  const segments = constant.split('/');
  if (segments.some(isDotSegment)) return { request: matched, forwarded: constant };
  const midSegment = match.kind === 'prefix' && !match.prefix.endsWith('/');
  const last = segments[segments.length - 1]!;
  if (midSegment && (last === '' || last === '.')) {
    const rest = last === '' ? '..' : '.';
    return { request: `${match.prefix}${rest}/x`, forwarded: `${constant}${rest}/x` };
  }
  return undefined;
}

/**
 * `route-rewrite-dot-segments` (warning): a `prefix_rewrite` that can turn a request path into a
 * forwarded path with a dot segment (docs/decisions.md §6), e.g. prefix `/app` with `prefix_rewrite: /`:
 * `/app../admin` would forward `/../admin`. The runtime refuses those requests (400); this tells
 * the author before a user meets it. Regex rewrites are not analysed (the runtime check holds).
 */
export const routeRewriteDotSegments: ValidationRule = {
  reports: [RouteRewriteDotSegments],
  check(input, r) {
    for (const ri of input.routes) {
      const route = ri.lowered;
      if (!route || route.from.scheme !== 'https') continue;
      const action = route.action;
      const rewrite = action.kind === 'forward' ? route.rewrite.prefixRewrite : action.redirect.path === null ? action.redirect.prefixRewrite : null;
      if (rewrite === null) continue;
      const tos = action.kind === 'forward' ? [...new Set(action.upstreams.map((u) => u.path))] : [''];
      for (const to of tos) {
        const example = dotSegmentExample(route.match, rewrite, to);
        if (!example) continue;
        const field = action.kind === 'forward' ? 'prefix_rewrite' : 'redirect';
        const prefix = route.match.kind === 'prefix' ? route.match.prefix : route.match.kind === 'path' ? route.match.path : '/';
        r.report(RouteRewriteDotSegments, fieldKeySpan(input, ri, field), { rewrite, prefix, ...example }, fieldPath(ri, field));
        break;
      }
    }
  },
};
