/**
 * `/.svc/signout` (GET or POST form): with a valid CSRF token, revoke the session server-side,
 * clear the cookie and leave (through the provider's end-session endpoint, or straight back to
 * sign in for "switch user"); without one, a confirmation page carrying the token.
 */
import { csrfToken, csrfTokenValid } from '../core/keys.ts';
import type { ResolvedSession } from '../sessions/session-cache.ts';
import type { AuthState } from './auth-state.ts';
import { absoluteTarget, sendPage, sendRedirect, type EndpointContext, type Req, type Res } from './endpoint-context.ts';
import { acceptOf, sendError } from './error-page.ts';
import { PAGE_HEADERS, signOutPage } from './pages.ts';
import { shortId } from './session-resolver.ts';
import { clearedSessionCookie } from './sign-in-cookies.ts';
import { browserSignIn } from './sign-in-link.ts';

/** Largest POST body read from a sign-out form. */
const MAX_FORM_BYTES = 8 * 1024;

/** Answers `/.svc/signout[/]`: GET with query parameters, or POST with a form. */
export async function signOutEndpoint(ctx: EndpointContext, state: AuthState, session: ResolvedSession | null, params: URLSearchParams, host: string, req: Req, res: Res, requestId: string): Promise<void> {
  const method = req.method ?? 'GET';
  if (method !== 'GET' && method !== 'POST') return sendError(res, 405, requestId, 'method-not-allowed', acceptOf(req), false);
  const form = method === 'POST' ? await readForm(req) : params;
  if (form === undefined) return sendError(res, 400, requestId, 'form-invalid', acceptOf(req), false);
  return signOut(ctx, state, session, form, method, host, req, res, requestId);
}

async function signOut(ctx: EndpointContext, state: AuthState, session: ResolvedSession | null, form: URLSearchParams, method: string, host: string, req: Req, res: Res, requestId: string): Promise<void> {
  const requested = form.get('svc_redirect_uri');
  const safe = requested === null ? undefined : absoluteTarget(requested, state);
  const target = safe ?? state.body.settings.authenticate.signoutRedirectUrl ?? '/';
  const clear = clearedSessionCookie(state, host);
  if (!session) return sendRedirect(res, target, clear);
  const token = form.get('svc_csrf');
  if (!csrfTokenValid(state.keys!.csrf, session.record.id, token)) {
    if (method === 'POST' || token !== null) return sendError(res, 403, requestId, 'csrf-token-invalid', acceptOf(req), false);
    // A plain link to the sign-out page: ask, with a form carrying the token (CSRF-safe).
    return sendPage(res, 200, PAGE_HEADERS, signOutPage(csrfToken(state.keys!.csrf, session.record.id), safe ?? null));
  }
  // INVARIANT (revocation): the record is deleted server-side, so a saved cookie replayed later
  // finds nothing (docs/security.md S30), on every host and in every process.
  // Dropped here first: a sign-out the store cannot record (an outage: 503) still ends the
  // session in this process, and the outage grace never serves it again.
  ctx.sessions.cache.forget(session.record.id);
  state.signer.forget(session.publicId);
  await ctx.store.delete(session.record.id);
  // Again: a lookup may have cached the session from the store while the delete ran.
  ctx.sessions.cache.forget(session.record.id);
  ctx.log?.({ msg: 'signed out', requestId, user: session.record.userId, session: shortId(session.record.id) });
  if (form.get('svc_switch_user') === '1' && safe !== undefined && state.authenticateOrigin !== null) {
    // Switch user: straight back to sign-in, where the provider prompts for an account; not
    // through its end-session endpoint, whose return URL must be registered exactly.
    const signIn = browserSignIn(state, { svc_redirect_uri: safe, svc_prompt: 'switch_user' }, ctx.now());
    return sendRedirect(res, signIn.location, [clear, ...signIn.setCookie]);
  }
  const end = state.idp ? await state.idp.endSessionUrl(session.record.idToken, target) : undefined;
  sendRedirect(res, end ?? target, clear);
}

async function readForm(req: Req): Promise<URLSearchParams | undefined> {
  const type = String(req.headers['content-type'] ?? '');
  if (!/^application\/x-www-form-urlencoded\b/i.test(type)) return undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_FORM_BYTES) return undefined;
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}
