/**
 * Route matching (docs/decisions.md §2–3): svc's own endpoints first, then the routes
 * answering the canonical host, in listed order; the first whose path matcher holds wins.
 * INVARIANT (match-once): the route chosen here is the one whose policy is evaluated and whose
 * upstream is used; nothing downstream matches again (docs/security.md S11).
 */
import type { InternalEndpoint } from '../core/types.ts';
import type { CompiledRoute, PlanIndex } from '../plan/index.ts';
import type { CanonicalRequest } from './canonical-request.ts';

/** svc's own endpoint addressed by a request, if any. */
export function internalEndpoint(index: PlanIndex, req: CanonicalRequest): InternalEndpoint | undefined {
  const service = index.internalHosts.get(req.host);
  if (service) return { service, path: req.path };
  const p = req.path;
  if (p.charCodeAt(1) !== 0x2e) return undefined; // every own path starts with `/.`
  if (p === '/.svc' || p.startsWith('/.svc/') || p === '/.well-known/svc' || p.startsWith('/.well-known/svc/')) return { service: 'proxy', path: p };
  return undefined;
}

/** The first route answering the request's host whose path matcher holds. */
export function matchRoute(index: PlanIndex, req: CanonicalRequest): CompiledRoute | undefined {
  const candidates = index.hosts.get(req.host);
  if (!candidates) return undefined;
  const path = req.path;
  let lower: string | undefined; // lower-cased once, when a `path_case: insensitive` route asks
  for (const r of candidates) {
    if (r.foldCase && r.matchKind !== 'regex') {
      if (pathMatches(r, (lower ??= path.toLowerCase()))) return r;
    } else if (pathMatches(r, path)) return r;
  }
  return undefined;
}

/**
 * Tells whether a route's path matcher holds for a canonical path (docs/decisions.md §3); for a
 * `path_case: insensitive` route with a `path` or `prefix`, `path` must be lower-cased already.
 */
export function pathMatches(r: CompiledRoute, path: string): boolean {
  switch (r.matchKind) {
    case 'any':
      return true;
    case 'path':
      return path === r.matchText;
    case 'prefix':
      return path.startsWith(r.matchText);
    case 'regex':
      return r.matchRegex!(path);
  }
}
