/**
 * svc's authentication at request time, one `Authn` per process (docs/authentication.md): the
 * session a request carries (session-resolver.ts), svc's own endpoints (endpoints.ts, one file
 * each), the sign-in redirect of an unauthenticated browser request, and the identity an allowed
 * request takes upstream. What depends on the plan (secrets, keys, identity provider, signer) is
 * the generation's `AuthState` (auth-state.ts), passed in per request.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
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
import { applyIdentityHeaders, assertion, identityHeaders } from './identity-headers.ts';

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

  /**
   * Compatible form of the identity step (identity-headers.ts) for callers that complete the
   * upstream headers in place: applies its edits to `headers` (this request's own copy).
   * `_assertion` is read from the route now; kept so older call sites still compile.
   */
  upstreamIdentity(state: AuthState, session: ResolvedSession | null, routeIndex: number, _assertion: boolean, audience: string, headers: OutgoingHeaders): void | Promise<void> {
    const edits = identityHeaders(state, { routeIndex, session, audience, upstream: headers });
    if (!(edits instanceof Promise)) return applyIdentityHeaders(headers, edits);
    return edits.then((e) => applyIdentityHeaders(headers, e));
  }

  /** The signed assertion for a session and audience (identity-headers.ts). */
  assertion(state: AuthState, session: ResolvedSession, audience: string): string | Promise<string> {
    return assertion(state, session, audience);
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
