/**
 * `/.svc/sign_in` on the authenticate host: check the signed link (S05) and its target, then go to
 * the identity provider (PKCE, state, nonce, carried in a sealed flow cookie), or, already signed
 * in there with a cookie no sibling subdomain can plant, straight back (docs/authentication.md).
 */
import type { AuthState } from './auth-state.ts';
import { absoluteTarget, signInFailed, tunnelTarget, type EndpointContext, type Req, type Res } from './endpoint-context.ts';
import { acceptOf, sendError } from './error-page.ts';
import { programmaticTarget } from './programmatic-redirect.ts';
import { sealToken } from './sealed-token.ts';
import { flowCookie, flowCookieName, FLOW_TTL_MS } from './sign-in-cookies.ts';
import { redirectWithHandoff } from './sign-in-return.ts';
import { verifyParams } from './signed-params.ts';
import { STORE_RETRY_AFTER_SECONDS } from '../sessions/outage-grace.ts';
import type { ResolvedSession } from '../sessions/session-cache.ts';
import { writeHead } from './write-head.ts';

export async function signIn(ctx: EndpointContext, state: AuthState, session: ResolvedSession | null, params: URLSearchParams, req: Req, res: Res, requestId: string): Promise<void> {
  const now = ctx.now();
  const v = verifyParams(params, state.keys!.params, now);
  // Not trusted, but validated like any target (S01–S04): "try again" may go back where the user was.
  if (!v.ok) return signInFailed(ctx, res, req, requestId, `sign-in-link-${v.reason}`, absoluteTarget(params.get('svc_redirect_uri'), state));
  const programmatic = v.params['svc_programmatic_uri'];
  // A tunnel target only with a programmatic client: no browser is ever sent to one.
  const target = absoluteTarget(v.params['svc_redirect_uri'], state) ?? (programmatic !== undefined ? tunnelTarget(v.params['svc_redirect_uri'], state) : undefined);
  if (target === undefined) return sendError(res, 400, requestId, 'redirect-target-invalid', acceptOf(req), false);
  if (programmatic !== undefined && programmaticTarget(programmatic, state.body.settings.authenticate.programmaticRedirectDomains) === undefined) {
    return sendError(res, 400, requestId, 'programmatic-redirect-invalid', acceptOf(req), false);
  }
  // No sign-in into a dead store: its callback (or hand-off) could not store or read the session,
  // so nobody is sent to the provider while the store is known unreachable, nor handed a session
  // served from the outage grace.
  if (session?.servedFromGrace === true || ctx.sessions.grace.unreachable(now)) {
    ctx.log?.({ msg: 'sign-in refused: the session store is unreachable', requestId });
    return sendError(res, 503, requestId, 'session-store-unavailable', acceptOf(req), false, { 'retry-after': String(STORE_RETRY_AFTER_SECONDS) });
  }
  // Switch user: the previous session was just ended; the provider is asked to prompt for an account.
  const switchUser = v.params['svc_prompt'] === 'switch_user';
  const binding = v.params['svc_binding'];
  // Already signed in at the authenticate service: no provider round trip, straight to the hand-off,
  // INVARIANT (no-adoption): but only with a session cookie no sibling subdomain can have planted
  // (`__Host-`) when the session leaves this host (a route's hand-off, a programmatic token);
  // otherwise the provider is asked again, so a victim never ends up signed in as an attacker
  // whose cookie was tossed onto the authenticate host.
  const leaves = programmatic !== undefined || !target.startsWith(`${state.authenticateOrigin}/`);
  if (session && !switchUser && (!leaves || state.authenticateCookieUnplantable)) return redirectWithHandoff(ctx, state, session.record, target, programmatic, binding, [], res);
  if (state.idp === null) return signInFailed(ctx, res, req, requestId, 'identity-provider-not-configured', undefined);
  const checks = state.idp.newChecks();
  let location: string;
  try {
    location = await state.idp.authorizationUrl(checks, switchUser);
  } catch (e) {
    return signInFailed(ctx, res, req, requestId, 'identity-provider-unavailable', target, {}, { error: (e as Error).message });
  }
  const flow = await sealToken({ st: checks.state, n: checks.nonce, v: checks.verifier, r: target, ...(programmatic !== undefined ? { p: programmatic } : {}), ...(binding !== undefined ? { b: binding } : {}) }, state.keys!.flow, now, FLOW_TTL_MS);
  writeHead(res, 302, { location, 'cache-control': 'no-store', 'set-cookie': flowCookie(state, flowCookieName(state, checks.state), flow, FLOW_TTL_MS) });
  res.end();
}
