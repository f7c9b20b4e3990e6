/**
 * svc's authentication at request time, one `Authn` per process (docs/authentication.md): the
 * session a request carries (session-resolver.ts), svc's own endpoints (endpoints.ts, one file
 * each), the sign-in redirect of an unauthenticated browser request, and the identity an allowed
 * request takes upstream. What depends on the plan (secrets, keys, identity provider, signer) is
 * the generation's `AuthState` (auth-state.ts), passed in per request.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import { checkedEmail } from '../policy/email.ts';
import type { InternalEndpoint, OutgoingHeaders, RequestHeaders } from '../core/types.ts';
import type { SessionStore } from '../core/session-store.ts';
import type { CanonicalRequest } from '../request/canonical-request.ts';
import type { AuthState } from './auth-state.ts';
import type { GraceObserver, OutageGrace } from '../sessions/outage-grace.ts';
import type { ResolvedSession, SessionCache } from '../sessions/session-cache.ts';
import type { SessionRefresher } from '../sessions/session-refresher.ts';
import type { EndpointContext } from './endpoint-context.ts';
import { serveEndpoint } from './endpoints.ts';
import { SessionResolver, type SessionLookup } from './session-resolver.ts';
import { browserSignIn, type SignInRedirect } from './sign-in-link.ts';
import { stripCredentials } from './identity-headers.ts';

export { STORE_UNAVAILABLE, storeUnavailable, type SessionLookup } from './session-resolver.ts';
export { PROGRAMMATIC_TOKEN_PREFIX, programmaticCredential } from './credentials.ts';
export type { SignInRedirect } from './sign-in-link.ts';

type Req = IncomingMessage | Http2ServerRequest;
type Res = ServerResponse | Http2ServerResponse;

export interface AuthnOptions {
  readonly scheme: 'http' | 'https';
  readonly log?: (entry: Record<string, unknown>) => void;
  /** Clock (tests). */
  readonly now?: () => number;
  /**
   * Refreshes sessions (shared with the identity manager in the same process, so one session is
   * never refreshed twice at once); default: one of this Authn's own.
   */
  readonly refresher?: SessionRefresher;
  /**
   * How long past its cache entry a session this process verified may still be served while the
   * store cannot be reached (`svc run --store-outage-grace`; default 30 s; 0: off). outage-grace.ts.
   */
  readonly storeOutageGraceMs?: number;
  /** Counts the requests served from that grace (`svc_sessions_served_stale_total`). */
  readonly graceObserver?: GraceObserver;
}

export class Authn {
  readonly #sessions: SessionResolver;
  readonly #ctx: EndpointContext;

  constructor(store: SessionStore, options: AuthnOptions) {
    this.#sessions = new SessionResolver(store, options);
    this.#ctx = { store, sessions: this.#sessions, scheme: options.scheme, now: options.now ?? Date.now, log: options.log };
  }

  /** The credential cache (session-cache.ts). */
  get cache(): SessionCache {
    return this.#sessions.cache;
  }

  /** The store's outages as this process sees them, and the requests served from the grace. */
  get grace(): OutageGrace {
    return this.#sessions.grace;
  }

  close(): void {
    this.#sessions.close();
  }

  /** The session of a request (session-resolver.ts): synchronous on a cache hit; never rejects. */
  resolve(state: AuthState, headers: RequestHeaders, host: string): SessionLookup {
    return this.#sessions.resolve(state, headers, host);
  }

  /** The session of a `CONNECT` to a `tcp+https` route (session-resolver.ts). */
  resolveTunnel(state: AuthState, headers: RequestHeaders, authority: string): SessionLookup {
    return this.#sessions.resolveTunnel(state, headers, authority);
  }

  // -------------------------------------------------------------------------------------------
  // Identity for upstreams

  /**
   * Adds the identity svc sends upstream for an allowed request: the signed `x-svc-jwt-assertion`
   * (signed once per session and audience, then reused), the orchestrator bearer token with
   * impersonation headers, and removes svc's own credentials (session cookie, programmatic bearer
   * token) so an upstream never holds them. `audience` is the route's canonical host.
   */
  upstreamIdentity(state: AuthState, session: ResolvedSession | null, routeIndex: number, assertion: boolean, audience: string, headers: OutgoingHeaders): void | Promise<void> {
    stripCredentials(headers, state.cookie.name);
    this.#orchestrator(state, session, routeIndex, headers);
    if (!session || !assertion) return;
    const jwt = this.assertion(state, session, audience);
    if (typeof jwt === 'string') headers['x-svc-jwt-assertion'] = jwt;
    else
      return jwt.then((token) => {
        headers['x-svc-jwt-assertion'] = token;
      });
  }

  #orchestrator(state: AuthState, session: ResolvedSession | null, routeIndex: number, headers: OutgoingHeaders): void {
    const token = state.orchestratorTokens.get(routeIndex);
    if (token !== undefined) {
      headers['authorization'] = `Bearer ${token}`;
      headers['impersonate-user'] = undefined;
      headers['impersonate-group'] = undefined;
      if (session) {
        headers['impersonate-user'] = checkedEmail(session.identity.email) ?? session.identity.user;
        if (session.identity.groups.length > 0) headers['impersonate-group'] = [...session.identity.groups];
      }
    }
  }

  /** The signed assertion for a session and audience (cached until shortly before it expires). */
  assertion(state: AuthState, session: ResolvedSession, audience: string): string | Promise<string> {
    const cached = state.signer.cached(session.publicId, audience);
    if (cached !== undefined) return cached;
    // Only the session's own claims: a configured name like `toString` must not reach the prototype.
    const claims = session.record.claims;
    const named = Object.values(state.body.settings.identity.claimHeaders).filter((c) => Object.hasOwn(claims, c));
    const extra: Record<string, unknown> = Object.fromEntries(named.map((c) => [c, claims[c]]));
    return state.signer.sign({ sessionId: session.publicId, issuer: state.authenticateHost ?? audience, audience, identity: session.identity, extraClaims: extra });
  }

  /**
   * The sign-in redirect of an unauthenticated browser request on a route host: the sign-in URL, with
   * its parameters signed (S05), and the `Set-Cookie` values to send with it, on the host the
   * browser asked (the route's host, also through a forward-auth proxy, which passes the answer on).
   * Null without authentication configured.
   */
  signInRedirect(state: AuthState, unsignedLocation: string): SignInRedirect | null {
    if (state.keys === null || state.authenticateOrigin === null) return null;
    const back = new URL(unsignedLocation).searchParams.get('svc_redirect_uri') ?? '';
    return browserSignIn(state, { svc_redirect_uri: back }, this.#ctx.now());
  }

  /** Answers a request for one of svc's own endpoints on a route or authenticate host (endpoints.ts). */
  endpoint(state: AuthState, endpoint: InternalEndpoint, request: CanonicalRequest, session: ResolvedSession | null, req: Req, res: Res, requestId: string): Promise<void> {
    return serveEndpoint(this.#ctx, state, endpoint, request, session, req, res, requestId);
  }
}
