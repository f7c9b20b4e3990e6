/**
 * `/.svc/` on any host svc serves: who is signed in (never raw tokens, S26) with a sign-out form,
 * and their registered devices, for top-level navigations only; a browser not signed in is sent to sign in and comes back here.
 */
import { csrfToken } from '../core/keys.ts';
import { isDeviceStore } from '../core/device-store.ts';
import type { ResolvedSession } from '../sessions/session-cache.ts';
import type { AuthState } from './auth-state.ts';
import { returnScheme, sendPage, sendRedirect, type EndpointContext, type Req, type Res } from './endpoint-context.ts';
import { acceptOf, sendError } from './error-page.ts';
import { PAGE_HEADERS, userInfoPage } from './pages.ts';
import { browserSignIn } from './sign-in-link.ts';

export async function userPage(ctx: EndpointContext, state: AuthState, session: ResolvedSession | null, host: string, req: Req, res: Res, requestId: string): Promise<void> {
  const dest = req.headers['sec-fetch-dest'];
  if (dest !== undefined && dest !== 'document') return sendError(res, 403, requestId, 'top-level-navigation-only', acceptOf(req), false);
  if (!session) {
    const accept = String(req.headers['accept'] ?? '');
    if (/\btext\/html\b/i.test(accept) && state.authenticateOrigin !== null) {
      const back = `${returnScheme(ctx, state)}://${host}/.svc/`;
      const signIn = browserSignIn(state, { svc_redirect_uri: back }, ctx.now());
      return sendRedirect(res, signIn.location, signIn.setCookie);
    }
    return sendError(res, 401, requestId, 'sign-in-required', acceptOf(req), false);
  }
  // The user's registered devices (docs/authentication.md "Devices"), where the store keeps them.
  const devices = isDeviceStore(ctx.store) ? await ctx.store.listDevices(session.record.userId) : null;
  sendPage(res, 200, PAGE_HEADERS, userInfoPage(session.record, csrfToken(state.keys!.csrf, session.record.id), devices));
}
