/**
 * `/.svc/api/v1/login?svc_redirect_uri=<local callback>` on a route host (or a `tcp+https`
 * route's `host:port`): the signed sign-in URL for a CLI, whose completed sign-in sends a token to
 * that local callback (docs/authentication.md, docs/tcp.md).
 */
import type { AuthState } from './auth-state.ts';
import { sendPage, type EndpointContext, type Req, type Res } from './endpoint-context.ts';
import { acceptOf, sendError } from './error-page.ts';
import { programmaticTarget } from './programmatic-redirect.ts';
import { signInUrl } from './sign-in-link.ts';

/**
 * `target` is what the token will be for: the route's origin (`https://host/`), or
 * `tcp+https://host:port` for a tunnel.
 */
export function programmaticLogin(ctx: EndpointContext, state: AuthState, params: URLSearchParams, target: string, req: Req, res: Res, requestId: string): void {
  const client = programmaticTarget(params.get('svc_redirect_uri'), state.body.settings.authenticate.programmaticRedirectDomains);
  if (client === undefined) return sendError(res, 400, requestId, 'programmatic-redirect-invalid', acceptOf(req), false);
  if (state.authenticateOrigin === null) return sendError(res, 404, requestId, 'authentication-not-configured', acceptOf(req), false);
  sendPage(res, 200, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' }, `${signInUrl(state, { svc_redirect_uri: target, svc_programmatic_uri: client }, ctx.now())}\n`);
}
