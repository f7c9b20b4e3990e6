/**
 * The `Location` of a redirect route (spec 2.8, docs/decisions.md §7), built from the canonical
 * request and the route's redirect options, never from other request headers.
 */
import type { CompiledRoute } from '../plan/index.ts';
import { renormalizedPath, type CanonicalRequest } from './canonical-request.ts';

const DEFAULT_PORT: Readonly<Record<string, number>> = { http: 80, https: 443 };

/**
 * The redirect target of a redirect route for a canonical request; `null` when a `prefix_rewrite`
 * would make its path hold a dot segment (→ 400 `forwarded-path-dot-segment`, docs/decisions.md §7).
 */
export function redirectLocation(r: CompiledRoute, req: CanonicalRequest): string | null {
  if (r.route.action.kind !== 'redirect') throw new Error('redirectLocation: not a redirect route');
  const x = r.route.action.redirect;
  const scheme = x.httpsRedirect ? 'https' : (x.scheme ?? 'https');
  const hostname = x.host ?? req.hostname;
  const port = x.port ?? req.port;
  const authority = port === undefined || port === DEFAULT_PORT[scheme] ? hostname : `${hostname}:${port}`;
  let path = x.path ?? (x.prefixRewrite !== null ? r.rewritePrefix(req.path, x.prefixRewrite) : req.path);
  if (!path.startsWith('/')) path = `/${path}`;
  if (x.path === null && x.prefixRewrite !== null) {
    const normal = renormalizedPath(path);
    if (normal === undefined) return null;
    path = normal;
  }
  const query = x.stripQuery || req.query === '' ? '' : `?${req.query}`;
  return `${scheme}://${authority}${path}${query}`;
}
