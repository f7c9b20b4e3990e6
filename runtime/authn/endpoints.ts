/**
 * Which of svc's own endpoints answers a request on a route or authenticate host, by path, method
 * and host: one file each (jwks.ts, sign-in.ts, callback.ts, hand-off.ts, sign-out.ts,
 * user-page.ts, programmatic-login.ts, webauthn.ts); anything else is 404 `no-such-endpoint`.
 */
import type { InternalEndpoint } from '../core/types.ts';
import type { CanonicalRequest } from '../request/canonical-request.ts';
import type { ResolvedSession } from '../sessions/session-cache.ts';
import type { AuthState } from './auth-state.ts';
import { callback } from './callback.ts';
import { TUNNEL_AUDIENCE_PREFIX } from './credentials.ts';
import { returnScheme, type EndpointContext, type Req, type Res } from './endpoint-context.ts';
import { acceptOf, sendError } from './error-page.ts';
import { handoff } from './hand-off.ts';
import { jwks } from './jwks.ts';
import { programmaticLogin } from './programmatic-login.ts';
import { signIn } from './sign-in.ts';
import { signOutEndpoint } from './sign-out.ts';
import { userPage } from './user-page.ts';
import { webauthnEndpoint } from './webauthn.ts';

export async function serveEndpoint(ctx: EndpointContext, state: AuthState, endpoint: InternalEndpoint, request: CanonicalRequest, session: ResolvedSession | null, req: Req, res: Res, requestId: string): Promise<void> {
  const { host, path, query } = request;
  const method = req.method ?? 'GET';
  const params = new URLSearchParams(query);
  const onAuthHost = endpoint.service === 'authenticate';
  if (path === '/.well-known/svc/jwks.json') return jwks(state, res);
  // A tcp+https route's `host:port` (not also an https route's host) serves programmatic login only.
  const tunnelOnly = !onAuthHost && !state.routeHosts.has(host) && state.tcpRouteHosts.has(host);
  if (!onAuthHost && !state.routeHosts.has(host) && !tunnelOnly) return sendError(res, 404, requestId, 'no-route', acceptOf(req), false);
  if (state.keys === null) return sendError(res, 404, requestId, 'authentication-not-configured', acceptOf(req), false);
  if (tunnelOnly) {
    if (path === '/.svc/api/v1/login' && method === 'GET') return programmaticLogin(ctx, state, params, `${TUNNEL_AUDIENCE_PREFIX}${host}`, req, res, requestId);
    return sendError(res, 404, requestId, 'no-such-endpoint', acceptOf(req), false);
  }
  if (onAuthHost && path === '/.svc/sign_in' && method === 'GET') return signIn(ctx, state, session, params, req, res, requestId);
  if (onAuthHost && path === state.body.settings.authenticate.callbackPath && method === 'GET') return callback(ctx, state, params, host, req, res, requestId);
  if (path === '/.svc/callback' && method === 'GET' && !onAuthHost) return handoff(ctx, state, params, host, req, res, requestId);
  if (path === '/.svc/signout' || path === '/.svc/signout/') return signOutEndpoint(ctx, state, session, params, host, req, res, requestId);
  if (!onAuthHost && (path === '/.svc/webauthn' || path.startsWith('/.svc/webauthn/'))) return webauthnEndpoint(ctx, state, session, params, host, path, req, res, requestId);
  if ((path === '/.svc' || path === '/.svc/') && method === 'GET') return userPage(ctx, state, session, host, req, res, requestId);
  if (path === '/.svc/api/v1/login' && method === 'GET' && !onAuthHost) return programmaticLogin(ctx, state, params, `${returnScheme(ctx, state)}://${host}/`, req, res, requestId);
  return sendError(res, 404, requestId, 'no-such-endpoint', acceptOf(req), false);
}
