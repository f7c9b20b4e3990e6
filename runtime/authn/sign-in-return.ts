/**
 * How a completed sign-in (a callback, or a sign-in that found a session) returns: straight to its
 * target on the authenticate host, through a route host's hand-off (sealed, 60 s, single use,
 * bound to that host and to the browser's binding), or as a programmatic token sent to a local
 * client (docs/authentication.md, docs/tcp.md).
 */
import { randomBytes } from 'node:crypto';
import { SvcError } from '../core/errors.ts';
import type { SessionRecord } from '../core/session-store.ts';
import type { AuthState } from './auth-state.ts';
import { PROGRAMMATIC_TOKEN_PREFIX, TUNNEL_AUDIENCE_PREFIX } from './credentials.ts';
import { sendRedirect, type EndpointContext, type Res } from './endpoint-context.ts';
import { programmaticTarget } from './programmatic-redirect.ts';
import { sealToken } from './sealed-token.ts';

/** How long a hand-off to a route domain is valid; it is also single use. */
const HANDOFF_TTL_MS = 60_000;

/**
 * Redirects to `target`: directly on the authenticate host, else through a route-host hand-off
 * that carries `binding` (the hash of the browser's binding cookie, from the signed link).
 */
export async function redirectWithHandoff(ctx: EndpointContext, state: AuthState, record: SessionRecord, target: string, programmatic: string | undefined, binding: string | undefined, cookies: readonly string[], res: Res): Promise<void> {
  if (target.startsWith(TUNNEL_AUDIENCE_PREFIX)) {
    // A tunnel's token is sealed here: its target was checked against the plan's tcp routes
    // (tunnelTarget) in the signed sign-in link; `programmatic` was checked there too.
    const client = programmatic === undefined ? undefined : programmaticTarget(programmatic, state.body.settings.authenticate.programmaticRedirectDomains);
    // Reached when the plan in service no longer accepts the client the signed link named (the
    // whitelist changed during the sign-in): no token is sent, the endpoint fails (hand-off.ts
    // answers 400 for the same case on a route host).
    if (client === undefined) throw new SvcError('SVC_ERR_PROGRAMMATIC_CLIENT_REFUSED', 'a tunnel sign-in without a programmatic client');
    return sendToken(ctx, state, record, client, target, cookies, res);
  }
  const origin = new URL(target).origin;
  let location = target;
  if (origin !== state.authenticateOrigin || programmatic !== undefined) {
    const to = new URL(target);
    const audience = to.host.toLowerCase();
    const token = await sealToken({ sid: record.id, r: target, aud: audience, jti: randomBytes(16).toString('base64url'), ...(programmatic !== undefined ? { p: programmatic } : {}), ...(binding !== undefined ? { b: binding } : {}) }, state.keys!.handoff, ctx.now(), HANDOFF_TTL_MS);
    location = `${origin}/.svc/callback?svc_handoff=${token}`;
  }
  sendRedirect(res, location, cookies);
}

/**
 * Sends a programmatic token for `audience` (a route host, or `tcp+https://host:port`) to the local
 * client: `svc_jwt` the token, `svc_jwt_expiry` when it expires (seconds since the epoch; the
 * token itself is encrypted, so a client reads its life here).
 */
export async function sendToken(ctx: EndpointContext, state: AuthState, record: SessionRecord, client: string, audience: string, cookies: readonly string[], res: Res): Promise<void> {
  const now = ctx.now();
  const ttlMs = record.expiresAtMs - now;
  const token = await sealToken({ sid: record.id, aud: audience }, state.keys!.programmatic, now, ttlMs);
  const u = new URL(client);
  u.searchParams.set('svc_jwt', `${PROGRAMMATIC_TOKEN_PREFIX}${token}`);
  u.searchParams.set('svc_jwt_expiry', String(Math.ceil((now + ttlMs) / 1000)));
  sendRedirect(res, u.href, cookies);
}
