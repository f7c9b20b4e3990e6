/**
 * `/.svc/callback` on a route host: accept a hand-off once, for this host, from the browser that
 * started the sign-in (its binding cookie), set this host's session cookie and go back; a
 * programmatic hand-off sends its token to the local client instead (docs/authentication.md).
 */
import type { AuthState } from './auth-state.ts';
import { sendRedirect, signInFailed, type EndpointContext, type Req, type Res } from './endpoint-context.ts';
import { acceptOf, sendError } from './error-page.ts';
import { programmaticTarget } from './programmatic-redirect.ts';
import { FALLBACK_TARGET, safeRedirectTarget } from './redirect-target.ts';
import { openToken } from './sealed-token.ts';
import { bindingHeld, clearedBindingCookie, sessionCookie } from './sign-in-cookies.ts';
import { sendToken } from './sign-in-return.ts';

export async function handoff(ctx: EndpointContext, state: AuthState, params: URLSearchParams, host: string, req: Req, res: Res, requestId: string): Promise<void> {
  const now = ctx.now();
  const t = await openToken(params.get('svc_handoff'), state.keys!.handoff, now);
  if (!t || typeof t['sid'] !== 'string' || typeof t['r'] !== 'string' || typeof t['jti'] !== 'string' || typeof t.exp !== 'number') return signInFailed(ctx, res, req, requestId, 'hand-off-invalid', undefined);
  // Bound to this host: a hand-off made for one route domain does not open on another.
  const to = safeRedirectTarget(t['r'], state.redirects);
  if (to === FALLBACK_TARGET || !sameHost(to, host)) return signInFailed(ctx, res, req, requestId, 'hand-off-wrong-host', undefined);
  // INVARIANT (bound-hand-off): a hand-off that sets a cookie opens only in the browser holding
  // the binding value whose hash it carries (set on this host when svc sent that browser to sign
  // in). Checked before it is used up, so a victim opening an attacker's link spends nothing.
  // A programmatic hand-off sets no cookie here: its token goes to the local client, whose own
  // `svc_state` in the callback URL binds it (cli/tcp-login.ts).
  const programmatic = typeof t['p'] === 'string' ? t['p'] : undefined;
  const binding = typeof t['b'] === 'string' ? t['b'] : undefined;
  const clearBinding = binding === undefined ? [] : [clearedBindingCookie(state, binding)];
  if (programmatic === undefined && (binding === undefined || !bindingHeld(req, state, binding))) {
    return signInFailed(ctx, res, req, requestId, 'hand-off-unbound', to, clearBinding.length > 0 ? { 'set-cookie': clearBinding[0]! } : {});
  }
  if (!(await ctx.store.consumeOnce(`handoff:${t['jti']}`, t.exp * 1000))) return signInFailed(ctx, res, req, requestId, 'hand-off-replayed', to);
  const record = await ctx.store.get(t['sid']);
  if (!record) return signInFailed(ctx, res, req, requestId, 'session-ended', to);
  if (programmatic !== undefined) {
    // Programmatic login: the token goes to the local client, never into a cookie.
    const client = programmaticTarget(programmatic, state.body.settings.authenticate.programmaticRedirectDomains);
    if (client === undefined) return sendError(res, 400, requestId, 'programmatic-redirect-invalid', acceptOf(req), false);
    return sendToken(ctx, state, record, client, host, [], res);
  }
  sendRedirect(res, to, [...clearBinding, sessionCookie(state, host, record, ctx.now())]);
}

/** `url` is on the canonical `host` (URL.host already leaves out the scheme's default port). */
function sameHost(url: string, host: string): boolean {
  const h = new URL(url).host.toLowerCase();
  return h === host || h === host.replace(/:(443|80)$/, '');
}
