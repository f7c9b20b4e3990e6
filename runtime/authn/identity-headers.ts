/**
 * The one identity step (docs/authentication.md, "Identity upstream"): what an allowed request
 * carries upstream as identity, for the HTTP handler, upgrades and the forward-auth answer alike.
 * In this order: svc's own credentials taken out (its session, sign-in and binding cookies, a
 * programmatic bearer token), the `jwt_claims_headers` claim headers, the orchestrator's bearer
 * token with impersonation headers, the serverless cloud's ID token as the bearer token
 * (`enable_hostedcloud_serverless_authentication`: serverless-token.ts; it replaces whatever
 * `Authorization` the client sent), and the signed `x-svc-jwt-assertion`. Claims and the
 * assertion only for a signed-in user on a route with `pass_identity_headers`.
 *
 * The step returns the edits (a header set to undefined is removed) and changes nothing itself:
 * the caller applies them to its own copy of the upstream headers, or to its answer.
 * INVARIANT (identity-headers): identity headers are only ever set here; client copies never pass
 * the decision (runtime/request/forward.ts; docs/security.md S16, S18).
 */
import { claimValues } from '../policy/criteria.ts';
import { checkedEmail } from '../policy/email.ts';
import type { Identity, OutgoingHeaders } from '../core/types.ts';
import type { ResolvedSession } from '../sessions/session-cache.ts';
import type { AuthState } from './auth-state.ts';
import { PROGRAMMATIC_TOKEN_PREFIX } from './credentials.ts';
import { ServerlessTokenError } from './serverless-token.ts';

/** The headers to set (a string or list) or remove (undefined), in the order they apply. */
export type IdentityHeaders = OutgoingHeaders;

/** One allowed request, as the identity step reads it. */
export interface IdentityRequest {
  readonly routeIndex: number;
  readonly session: ResolvedSession | null;
  /** The assertion's audience: the route's host, with the port when not the default. */
  readonly audience: string;
  /**
   * The upstream request's headers, read for svc's credentials to take out; null for the answer to
   * a forward-auth proxy, which gets the claims and the assertion only (the proxy sends the
   * client's own headers on, and svc's upstream credentials are not the proxy's).
   */
  readonly upstream: Readonly<OutgoingHeaders> | null;
}

/**
 * The identity edits of one allowed request: synchronous unless an assertion must be signed or a
 * serverless ID token fetched. Rejects with the signer's error, or `ServerlessTokenError`.
 */
export function identityHeaders(state: AuthState, r: IdentityRequest): IdentityHeaders | Promise<IdentityHeaders> {
  const out: IdentityHeaders = {};
  if (r.upstream !== null) credentialEdits(r.upstream, state.cookie.name, out);
  const session = r.session;
  const route = state.body.routes[r.routeIndex]!;
  const pass = session !== null && route.passIdentityHeaders;
  if (pass) claimHeaders(state.claimHeaders, session.identity, out);
  if (r.upstream !== null) orchestrator(state, session, r.routeIndex, out);
  // The cloud's ID token for the route's upstream (never for a forward-auth answer: its proxy's upstream is not svc's).
  const cloud = r.upstream !== null && route.hostedcloudServerlessAuthentication ? serverlessToken(state, r.routeIndex) : undefined;
  if (typeof cloud === 'string') out['authorization'] = `Bearer ${cloud}`;
  const jwt = pass ? assertion(state, session, r.audience) : undefined;
  if (typeof jwt === 'string') out['x-svc-jwt-assertion'] = jwt;
  if (!(cloud instanceof Promise) && !(jwt instanceof Promise)) return out;
  return Promise.all([cloud, jwt]).then(([token, signed]) => {
    if (token !== undefined) out['authorization'] = `Bearer ${token}`;
    if (signed !== undefined) out['x-svc-jwt-assertion'] = signed;
    return out;
  });
}

/** The serverless ID token of a route's upstream (audience `https://<to host>`: every `to` of such a route has one host). */
function serverlessToken(state: AuthState, routeIndex: number): string | Promise<string> {
  const audience = state.serverlessAudiences.get(routeIndex);
  if (state.serverless === null || audience === undefined) return Promise.reject(new ServerlessTokenError('bug: a serverless route without a token source'));
  return state.serverless.token(audience);
}

/** Applies identity edits to headers bound upstream (this request's own copy). */
export function applyIdentityHeaders(headers: OutgoingHeaders, edits: IdentityHeaders): void {
  for (const name in edits) headers[name] = edits[name];
}

/**
 * The claim headers of `identity` (`jwt_claims_headers` as `AuthState.claimHeaders` holds them,
 * docs/configuration.md), added to `out`;
 * a claim the identity lacks gives no header. Never `Host`: that is the route's host rule's.
 */
export function claimHeaders(headers: readonly (readonly [string, string])[], identity: Identity, out: Record<string, string | string[] | undefined>): void {
  let known = claimHeaderCache.get(identity);
  if (known === undefined || known.headers !== headers) {
    const values: (readonly [string, string])[] = [];
    for (const [header, claim] of headers) {
      if (header === 'host') continue;
      const value = claimHeaderValue(identity, claim);
      if (value !== undefined) values.push([header, value]);
    }
    known = { headers, values };
    claimHeaderCache.set(identity, known);
  }
  for (const [header, value] of known.values) out[header] = value;
}

/**
 * The claim headers of an identity, computed once per identity and plan's header list: a cached
 * session hands every request the same identity object, which never changes (a refresh makes a new
 * one), so its headers are the same on every request.
 */
const claimHeaderCache = new WeakMap<Identity, { readonly headers: readonly (readonly [string, string])[]; readonly values: readonly (readonly [string, string])[] }>();

/** The value of a claim header (docs/decisions.md §6 step 5), or undefined when the claim is missing. */
export function claimHeaderValue(identity: Identity, claim: string): string | undefined {
  if (claim === 'user' || claim === 'sub' || claim === 'id') return identity.user;
  if (claim === 'email') return checkedEmail(identity.email);
  const values = claim === 'groups' ? identity.groups : claimValues(identity, claim);
  return values.length > 0 ? values.join(',') : undefined;
}

/** The route's orchestrator bearer token, with the session's user and groups to impersonate. */
function orchestrator(state: AuthState, session: ResolvedSession | null, routeIndex: number, out: IdentityHeaders): void {
  const token = state.orchestratorTokens.get(routeIndex);
  if (token === undefined) return;
  out['authorization'] = `Bearer ${token}`;
  out['impersonate-user'] = undefined;
  out['impersonate-group'] = undefined;
  if (session) {
    out['impersonate-user'] = checkedEmail(session.identity.email) ?? session.identity.user;
    if (session.identity.groups.length > 0) out['impersonate-group'] = [...session.identity.groups];
  }
}

/** The signed assertion for a session and audience (cached until shortly before it expires). */
export function assertion(state: AuthState, session: ResolvedSession, audience: string): string | Promise<string> {
  const cached = state.signer.cached(session.publicId, audience);
  if (cached !== undefined) return cached;
  // Only the session's own claims: a configured name like `toString` must not reach the prototype.
  const claims = session.record.claims;
  const named = Object.values(state.body.settings.identity.claimHeaders).filter((c) => Object.hasOwn(claims, c));
  const extra: Record<string, unknown> = Object.fromEntries(named.map((c) => [c, claims[c]]));
  return state.signer.sign({ sessionId: session.publicId, issuer: state.authenticateHost ?? audience, audience, identity: session.identity, extraClaims: extra });
}

/** The edits that take svc's session cookie and programmatic token out of `headers`, into `out`. */
function credentialEdits(headers: Readonly<OutgoingHeaders>, cookieName: string, out: IdentityHeaders): void {
  const cookie = headers['cookie'];
  if (typeof cookie === 'string' && cookie.includes(cookieName)) out['cookie'] = withoutSvcCookies(cookie, cookieName);
  const auth = headers['authorization'];
  if (typeof auth === 'string' && auth.startsWith(`Bearer ${PROGRAMMATIC_TOKEN_PREFIX}`)) out['authorization'] = undefined;
}

/** Removes svc's session cookie and programmatic token from headers bound upstream. */
export function stripCredentials(headers: OutgoingHeaders, cookieName: string): void {
  credentialEdits(headers, cookieName, headers);
}

/**
 * A `Cookie` header without svc's session, sign-in and sign-in binding cookies (every copy of each:
 * a browser holding a host-only and a Domain cookie sends both); undefined when nothing is left.
 */
function withoutSvcCookies(cookie: string, cookieName: string): string | undefined {
  // The common case on every request: the header is svc's session cookie alone.
  if (cookie.startsWith(cookieName) && cookie.charCodeAt(cookieName.length) === 0x3d && !cookie.includes(';')) return undefined;
  const kept = cookie
    .split(';')
    .map((p) => p.trim())
    .filter((p) => p !== '' && !p.startsWith(`${cookieName}=`) && !p.startsWith(`${cookieName}_signin_`) && !p.startsWith(`${cookieName}_bind_`));
  return kept.length === 0 ? undefined : kept.join('; ');
}

