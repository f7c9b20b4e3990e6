/**
 * The `Location` of a redirect route (docs/decisions.md §7), built from the canonical
 * request and the route's redirect options, never from other request headers; and the `Location`
 * of the http→https redirect listener (`http_redirect_addr`), built the same way.
 */
import type { CompiledRoute } from '../plan/index.ts';
import { canonicalRequest, renormalizedPath, type CanonicalRequest } from './canonical-request.ts';

const DEFAULT_PORT: Readonly<Record<string, number>> = { http: 80, https: 443 };

/**
 * The redirect target of a redirect route for a canonical request; `null` when a `prefix_rewrite`
 * would make its path hold a dot segment (→ 400 `forwarded-path-dot-segment`, docs/decisions.md §7).
 */
export function redirectLocation(r: CompiledRoute, req: CanonicalRequest): string | null {
  if (r.route.action.kind !== 'redirect') throw new Error('bug: redirectLocation: not a redirect route');
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

/**
 * The `Location` the http→https redirect listener (`http_redirect_addr`) answers 308 with: the same
 * host (the request's one authority: an absolute-form target's, else the Host header; a Host that
 * names another host is refused) and the same path and query, on the HTTPS listener's `httpsPort`.
 * The path and query are those of the canonical target (canonical-request.ts), so an absolute-form
 * target (`http://host/p?q`) gives `https://host/p?q`, never the target glued after the authority.
 * `null` (→ 400) when the target cannot be rebuilt: not canonical, userinfo in its authority, or a
 * host that is not a DNS name or IPv4 address. Escapes and `;` are kept as the HTTPS listener reads
 * them (its routes decide whether to refuse them).
 */
export function httpsRedirectLocation(target: string, hostHeader: string | undefined, httpsPort: number): string | null {
  const c = canonicalRequest(target, hostHeader, 'http', { keepForbiddenEscapes: true, keepPathParameters: true });
  if (!c.ok || !/^[a-z0-9.-]+$/.test(c.request.hostname)) return null;
  const { hostname, path, query } = c.request;
  return `https://${hostname}${httpsPort === 443 ? '' : `:${httpsPort}`}${path}${query === '' ? '' : `?${query}`}`;
}
