/**
 * The identity provider's callback on the authenticate host (`callback_path`): complete the code
 * flow checked against the flow cookie, start a NEW session (no fixation), set the authenticate
 * host's cookie, and return to the target, through a route host's hand-off (docs/authentication.md).
 */
import { newSessionId, type SessionRecord } from '../core/session-store.ts';
import { signInGroups } from '../sessions/directory/sign-in.ts';
import { IdentityProviderError, type SignedInUser } from '../sessions/idp.ts';
import type { AuthState } from './auth-state.ts';
import { readCookie } from './cookies.ts';
import { absoluteTarget, signInFailed, tunnelTarget, type EndpointContext, type Req, type Res } from './endpoint-context.ts';
import { openToken } from './sealed-token.ts';
import { shortId } from './session-resolver.ts';
import { flowCookie, flowCookieName, sessionCookie } from './sign-in-cookies.ts';
import { redirectWithHandoff } from './sign-in-return.ts';

export async function callback(ctx: EndpointContext, state: AuthState, params: URLSearchParams, host: string, req: Req, res: Res, requestId: string): Promise<void> {
  const now = ctx.now();
  const stateParam = params.get('state') ?? '';
  const cookieName = flowCookieName(state, stateParam);
  const clearFlow = flowCookie(state, cookieName, '', 0);
  const flow = /^[A-Za-z0-9_-]{16,128}$/.test(stateParam) ? await openToken(readCookie(req.headers['cookie'] === undefined ? undefined : [String(req.headers['cookie'])], cookieName), state.keys!.flow, now) : undefined;
  if (!flow || flow['st'] !== stateParam || typeof flow['n'] !== 'string' || typeof flow['v'] !== 'string' || typeof flow['r'] !== 'string') {
    return signInFailed(ctx, res, req, requestId, 'sign-in-state-invalid', undefined, { 'set-cookie': clearFlow });
  }
  const retry = absoluteTarget(flow['r'], state);
  if (params.has('error')) {
    const error = params.get('error') ?? '';
    return signInFailed(ctx, res, req, requestId, 'identity-provider-refused', retry, { 'set-cookie': clearFlow }, { error }, error);
  }
  let user: SignedInUser;
  try {
    user = await state.idp!.callback(params.toString(), { state: stateParam, nonce: flow['n'], verifier: flow['v'] }, now);
  } catch (e) {
    const reason = e instanceof IdentityProviderError && e.code === 'SVC_ERR_IDP_CALLBACK' ? 'sign-in-failed' : 'identity-provider-unavailable';
    return signInFailed(ctx, res, req, requestId, reason, retry, { 'set-cookie': clearFlow }, { error: (e as Error).message, code: (e as IdentityProviderError).code });
  }
  // With `idp_service_account`, the user's directory groups join the claim's (docs/authentication.md "Groups from the directory").
  const groups = await signInGroups(ctx.store, state.body.settings.idp, user, ctx.log);
  // INVARIANT (no-fixation): every sign-in gets a new random session id (docs/security.md S31).
  const record: SessionRecord = { ...user, groups, id: newSessionId(), createdAtMs: now, expiresAtMs: now + state.cookie.expireMs };
  await ctx.store.put(record);
  ctx.log?.({ msg: 'signed in', requestId, user: record.userId, email: record.email, session: shortId(record.id) });
  const cookies = [clearFlow, sessionCookie(state, host, record, ctx.now())];
  const programmatic = typeof flow['p'] === 'string' ? flow['p'] : undefined;
  const binding = typeof flow['b'] === 'string' ? flow['b'] : undefined;
  const target = absoluteTarget(flow['r'], state) ?? (programmatic !== undefined ? tunnelTarget(flow['r'], state) : undefined) ?? `${state.authenticateOrigin}/.svc/`;
  return redirectWithHandoff(ctx, state, record, target, programmatic, binding, cookies, res);
}
