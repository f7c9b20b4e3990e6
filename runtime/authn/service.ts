/**
 * Authentication at request time (spec §4, §5; docs/architecture.md §3, §5): which session a request carries,
 * svc's own endpoints (sign-in, callback, hand-off, sign-out, user info, JWKS, programmatic login),
 * and the identity an allowed request takes upstream. One `Authn` per process, holding what is
 * process-wide: the session store, the credential cache and the refreshes in progress. What depends
 * on the plan (secrets, keys, identity provider, signer) is the generation's `AuthState`
 * (auth-state.ts), built by its provisioner (runtime/generation/generation.ts) and passed in per request.
 *
 * The sign-in, for a route on another domain than the authenticate service:
 *   route 302 (+ binding cookie on the route host) → `{auth}/.svc/sign_in?svc_redirect_uri=…&
 *     svc_binding=<hash>&svc_expiry&svc_signature` (signed, S05)
 *   → the provider (PKCE, state, nonce; the checks ride in a sealed flow cookie on the auth host)
 *   → `{auth}{callback_path}`: code exchanged, a NEW session id (no fixation), record stored,
 *     auth-host cookie set → 302 `{route}/.svc/callback?svc_handoff=…` (sealed, 60 s, single use,
 *     bound to the route's host and to the binding hash) → binding cookie checked and cleared,
 *     route-host cookie set → 302 back to the validated target.
 *
 * Login CSRF (issue 13 §2): a hand-off opens only in the browser holding its binding cookie, and a
 * sign-in that leaves the authenticate host adopts that host's session only from a `__Host-` cookie
 * (Secure), which no sibling subdomain can plant; otherwise the provider is asked again.
 *
 * Programmatic login for a `tcp+https` route (docs/tcp.md): the CLI asks for the login URL with the
 * route's `host:port` as `Host`; the signed sign-in link names `tcp+https://host:port` as its target.
 * No browser can reach that authority (it names a CONNECT target, not a listener), so there is no
 * route-host hand-off: the authenticate service, which checked the signed link, seals the token
 * itself with `aud: tcp+https://host:port` and sends it to the local client. Such a token opens
 * only CONNECT to that route ({@link Authn.resolveTunnel}); an https route's token (`aud` = its
 * host) never opens a tunnel, and a tunnel token never opens an https route (docs/security.md S32).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import { checkedEmail } from '../policy/email.ts';
import type { InternalEndpoint, OutgoingHeaders, RequestHeaders } from '../core/types.ts';
import { newSessionId, SessionStoreError, type SessionRecord, type SessionStore } from '../core/session-store.ts';
import type { CanonicalRequest } from '../request/canonical-request.ts';
import { errorAnswer, wantsJson } from './error-page.ts';
import type { AuthState } from './auth-state.ts';
import { cookieDomainFor, HOST_PREFIX, readCookie, serializeCookie } from './cookies.ts';
import { IdentityProviderError, type SignedInUser } from '../sessions/idp.ts';
import { csrfToken, csrfTokenValid } from '../core/keys.ts';
import { PAGE_HEADERS, signInFailedAnswer, signOutPage, userInfoPage, type SignInFailure } from './pages.ts';
import { programmaticTarget } from './programmatic-redirect.ts';
import { FALLBACK_TARGET, safeRedirectTarget } from './redirect-target.ts';
import { DEFAULT_STORE_OUTAGE_GRACE_MS, OutageGrace, STORE_RETRY_AFTER_SECONDS, type GraceObserver } from '../sessions/outage-grace.ts';
import { publicSessionId, resolvedSession, SessionCache, type ResolvedSession } from '../sessions/session-cache.ts';
import { openSessionCookie, sealSessionCookie } from './session-cookie.ts';
import { signParams, verifyParams } from './signed-params.ts';
import { openToken, sealToken } from './sealed-token.ts';
import { jwksDocument } from './signing-key.ts';
import { SessionRefresher } from '../sessions/session-refresher.ts';
import type { AssertionSigner } from './assertion.ts';
import { writeHead } from './write-head.ts';

type Req = IncomingMessage | Http2ServerRequest;
type Res = ServerResponse | Http2ServerResponse;

/** The prefix of a programmatic-login bearer token (`Authorization: Bearer svc1.…`). */
export const PROGRAMMATIC_TOKEN_PREFIX = 'svc1.';
/** The audience prefix of a tunnel token: `tcp+https://host:port`, never a bare host. */
const TUNNEL_AUDIENCE_PREFIX = 'tcp+https://';
/** How long a signed sign-in link stays valid. */
const SIGN_IN_LINK_TTL_MS = 10 * 60_000;
/** How long the provider round trip may take (the flow cookie's life). */
const FLOW_TTL_MS = 10 * 60_000;
/** How long a hand-off to a route domain is valid; it is also single use. */
const HANDOFF_TTL_MS = 60_000;
/**
 * How long a sign-in binding cookie lives on the route host: the sign-in link's life plus the
 * provider round trip, so a sign-in that may still complete still finds its binding.
 */
const BINDING_TTL_MS = SIGN_IN_LINK_TTL_MS + FLOW_TTL_MS;
/** Where a binding cookie is sent: only to the route host's hand-off, never to an upstream. */
const BINDING_COOKIE_PATH = '/.svc/callback';
/**
 * A session is refreshed when its access token has expired: the request that finds it so waits for
 * the refresh, and a refused refresh ends the session before that request is decided. (The identity
 * manager, runtime/sessions/, refreshes sessions before that, in the background.) When the provider
 * cannot answer, the session is kept and the request decided on it (runtime/sessions/session-refresher.ts).
 */
const REFRESH_MARGIN_MS = 0;
/** Largest POST body read from a sign-out form. */
const MAX_FORM_BYTES = 8 * 1024;
/**
 * Where "try again" goes when a failed sign-in has no validated target: this host's user info page,
 * which starts a sign-in and then shows who is signed in.
 */
const RETRY_FALLBACK = '/.svc/';

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

/**
 * The session store did not answer (a Redis outage): the request is neither signed in nor signed
 * out. Callers answer 503 where a session would matter (fail closed, and never a sign-out).
 */
export const STORE_UNAVAILABLE: unique symbol = Symbol('session-store-unavailable');

/** The session a request carries: resolved now, later (a store round trip), none, or unknown (store down). */
export type SessionLookup = ResolvedSession | null | typeof STORE_UNAVAILABLE | Promise<ResolvedSession | null | typeof STORE_UNAVAILABLE>;

/** True for the error of a store that could not be reached (the store logs the outage once). */
export function storeUnavailable(e: unknown): boolean {
  return e instanceof SessionStoreError && e.code === 'SVC_ERR_SESSION_STORE_UNAVAILABLE';
}

export class Authn {
  readonly cache: SessionCache;
  readonly #store: SessionStore;
  readonly #options: AuthnOptions;
  readonly #refresher: SessionRefresher;
  readonly #now: () => number;
  /** The store's outages as this process sees them, and the requests served from the grace. */
  readonly grace: OutageGrace;
  /** The signer of the last generation a request used: its cached assertions are dropped when a session changes. */
  #signer: AssertionSigner | undefined;
  readonly #offChange: () => void;

  constructor(store: SessionStore, options: AuthnOptions) {
    this.#store = store;
    this.#options = options;
    this.#now = options.now ?? Date.now;
    const graceMs = options.storeOutageGraceMs ?? DEFAULT_STORE_OUTAGE_GRACE_MS;
    this.cache = new SessionCache(store, { graceMs });
    this.grace = new OutageGrace({
      graceMs,
      ...(store.unreachable ? { storeUnreachable: () => store.unreachable!() } : {}),
      ...(options.graceObserver ? { observer: options.graceObserver } : {}),
      ...(options.log ? { log: options.log } : {}),
    });
    this.#refresher = options.refresher ?? new SessionRefresher(store, { now: this.#now, logId: shortId, ...(options.log ? { log: options.log } : {}) });
    // A session replaced anywhere (a background refresh of its groups, in this or another process)
    // must not keep being asserted upstream with its old identity.
    this.#offChange = store.onChange((id) => this.#signer?.forget(publicSessionId(id)));
  }

  close(): void {
    this.#offChange();
    this.cache.close();
  }

  // -------------------------------------------------------------------------------------------
  // Sessions

  /**
   * The session of a request: its session cookie, or a programmatic bearer token bound to `host`
   * (the request's canonical host, from the gate: the one normalization of docs/architecture.md §2.2).
   * Synchronous on a cache hit (the common request); a promise on a miss. Never rejects.
   */
  resolve(state: AuthState, headers: RequestHeaders, host: string): SessionLookup {
    if (state.keys === null || state.cookieSecret === null) return null;
    this.#signer = state.signer;
    const now = this.#now();
    const bearer = programmaticCredential(headers);
    let credential: string;
    let audience: string | undefined;
    if (bearer !== undefined) {
      credential = `bearer ${host} ${bearer}`;
      audience = host;
    } else {
      const cookie = readCookie(headers['cookie'], sessionCookieName(state, host));
      if (cookie === undefined || cookie === '') return null;
      credential = cookie;
      audience = sessionCookieName(state, host);
    }
    return this.#lookup(state, credential, bearer, audience, now);
  }

  /**
   * The session of a `CONNECT` to a `tcp+https` route: its `Proxy-Authorization: Bearer svc1.…`
   * token, accepted only when it was issued for `tcp+https://<authority>` (`authority` is the
   * canonical `host:port` the route is indexed by). Same cache, refresh and revocation as
   * {@link resolve}; no cookie is read. Never rejects.
   */
  resolveTunnel(state: AuthState, headers: RequestHeaders, authority: string): SessionLookup {
    if (state.keys === null || state.cookieSecret === null) return null;
    const bearer = bearerToken(headers['proxy-authorization']);
    if (bearer === undefined) return null;
    const audience = `${TUNNEL_AUDIENCE_PREFIX}${authority}`;
    return this.#lookup(state, `tunnel ${audience} ${bearer}`, bearer, audience, this.#now());
  }

  #lookup(state: AuthState, credential: string, bearer: string | undefined, audience: string | undefined, now: number): SessionLookup {
    const hit = this.cache.get(credential, state, now);
    if (hit) return hit;
    return this.#load(state, credential, bearer, audience, now).catch((e: unknown) => {
      if (storeUnavailable(e)) {
        // INVARIANT (bounded grace): only after this credential's own lookup failed as unreachable,
        // and only what the cache still holds for it (outage-grace.ts).
        const failedAt = this.#now();
        this.grace.failed(failedAt);
        const stale = this.cache.stale(credential, state, failedAt);
        if (stale === undefined) return STORE_UNAVAILABLE;
        this.grace.served();
        return { ...stale, servedFromGrace: true } satisfies ResolvedSession;
      }
      this.#options.log?.({ msg: 'session lookup failed; treating the request as signed out', error: (e as Error).message });
      return null;
    });
  }

  /**
   * `bearer` set: a programmatic token that must name `audience`; else `credential` is a session
   * cookie and `audience` the name it was read under (the name is sealed into the cookie).
   */
  async #load(state: AuthState, credential: string, bearer: string | undefined, audience: string | undefined, now: number): Promise<ResolvedSession | null> {
    let handle: string;
    let until: number;
    if (bearer !== undefined) {
      const claims = await openToken(bearer, state.keys!.programmatic, now);
      if (!claims || typeof claims['sid'] !== 'string' || audience === undefined || claims['aud'] !== audience || typeof claims.exp !== 'number') return null;
      handle = claims['sid'];
      until = claims.exp * 1000;
    } else {
      const opened = openSessionCookie(credential, state.cookieSecret!, audience ?? state.cookie.name, now);
      if (!opened.ok) return null;
      handle = opened.handle;
      until = opened.expiresAtMs;
    }
    // The credential's own expiry: no cache entry, fresh or within the outage grace, outlives it.
    const expiresAt = until;
    let record: SessionRecord | null | undefined = await this.#store.get(handle);
    this.grace.answered(this.#now());
    if (!record) {
      // The store says there is no such session (signed out, expired, revoked): nothing cached for it may stand in later.
      this.cache.forget(handle);
      return null;
    }
    const accessExpiry = record.accessTokenExpiresAtMs;
    if (record.refreshToken !== undefined && accessExpiry !== undefined && state.idp !== null) {
      if (now >= accessExpiry - REFRESH_MARGIN_MS) {
        const outcome = await this.#refresher.refresh(state.idp, record);
        state.signer.forget(publicSessionId(record.id));
        if (outcome.kind === 'ended') {
          this.cache.forget(record.id);
          return null;
        }
        record = outcome.record;
        // Kept while the provider cannot answer: cached until the next try, not decided again per request.
        if (outcome.kind === 'kept') until = Math.min(until, outcome.retryAtMs);
      }
      if (record.accessTokenExpiresAtMs !== undefined && record.accessTokenExpiresAtMs > now) until = Math.min(until, record.accessTokenExpiresAtMs - REFRESH_MARGIN_MS);
    }
    const session = resolvedSession(record);
    if (until > now) this.cache.set(credential, state, session, now, Math.min(until, record.expiresAtMs), Math.min(expiresAt, record.expiresAtMs));
    return session;
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
    return this.#browserSignIn(state, { svc_redirect_uri: back });
  }

  /**
   * A sign-in for a browser that will come back to `params.svc_redirect_uri`. When that is a route
   * host (not the authenticate service), the sign-in is bound to this browser: a random value goes
   * into a short-lived cookie on the route host, its hash into the signed link, and from there into
   * the flow cookie and the hand-off, which the route host accepts only from a browser holding the
   * value (login CSRF: an attacker's own hand-off link opened by a victim sets nothing).
   */
  #browserSignIn(state: AuthState, params: Record<string, string>): SignInRedirect {
    const target = params['svc_redirect_uri'] ?? '';
    let origin: string | undefined;
    try {
      origin = new URL(target).origin;
    } catch {
      origin = undefined;
    }
    if (origin === undefined || origin === state.authenticateOrigin) return { location: this.#signInUrl(state, params), setCookie: [] };
    // INVARIANT (csprng): the binding value is 256 random bits from node:crypto (docs/security.md S31).
    const value = randomBytes(32).toString('base64url');
    const binding = bindingHash(value);
    const cookie = serializeCookie(bindingCookieName(state, binding), value, { ...this.#bindingCookieAttributes(state), maxAgeSeconds: BINDING_TTL_MS / 1000 });
    return { location: this.#signInUrl(state, { ...params, svc_binding: binding }), setCookie: [cookie] };
  }

  #signInUrl(state: AuthState, params: Record<string, string>): string {
    return `${state.authenticateOrigin}/.svc/sign_in?${signParams(params, state.keys!.params, this.#now() + SIGN_IN_LINK_TTL_MS).toString()}`;
  }

  // -------------------------------------------------------------------------------------------
  // svc's own endpoints

  /** Answers a request for one of svc's own endpoints on a route or authenticate host. */
  async endpoint(state: AuthState, endpoint: InternalEndpoint, request: CanonicalRequest, session: ResolvedSession | null, req: Req, res: Res, requestId: string): Promise<void> {
    const { host, path, query } = request;
    const method = req.method ?? 'GET';
    const params = new URLSearchParams(query);
    const onAuthHost = endpoint.service === 'authenticate';
    if (path === '/.well-known/svc/jwks.json') {
      return answer(res, 200, { 'content-type': 'application/json', 'cache-control': 'public, max-age=300' }, `${JSON.stringify(jwksDocument(state.signingKey))}\n`);
    }
    // A tcp+https route's `host:port` (not also an https route's host) serves programmatic login only.
    const tunnelOnly = !onAuthHost && !state.routeHosts.has(host) && state.tcpRouteHosts.has(host);
    if (!onAuthHost && !state.routeHosts.has(host) && !tunnelOnly) return answerError(res, 404, requestId, 'no-route', req);
    if (state.keys === null) return answerError(res, 404, requestId, 'authentication-not-configured', req);
    if (tunnelOnly) {
      if (path === '/.svc/api/v1/login' && method === 'GET') return this.#programmaticLogin(state, params, `${TUNNEL_AUDIENCE_PREFIX}${host}`, req, res, requestId);
      return answerError(res, 404, requestId, 'no-such-endpoint', req);
    }
    if (onAuthHost && path === '/.svc/sign_in' && method === 'GET') return this.#signIn(state, session, params, req, res, requestId);
    if (onAuthHost && path === state.body.settings.authenticate.callbackPath && method === 'GET') return this.#callback(state, params, host, req, res, requestId);
    if (path === '/.svc/callback' && method === 'GET' && !onAuthHost) return this.#handoff(state, params, host, req, res, requestId);
    if (path === '/.svc/signout' || path === '/.svc/signout/') {
      if (method !== 'GET' && method !== 'POST') return answerError(res, 405, requestId, 'method-not-allowed', req);
      const form = method === 'POST' ? await readForm(req) : params;
      if (form === undefined) return answerError(res, 400, requestId, 'form-invalid', req);
      return this.#signOut(state, session, form, method, host, req, res, requestId);
    }
    if ((path === '/.svc' || path === '/.svc/') && method === 'GET') return this.#userInfo(state, session, host, req, res, requestId);
    if (path === '/.svc/api/v1/login' && method === 'GET' && !onAuthHost) {
      const scheme = this.#options.scheme === 'http' && !state.cookie.secure ? 'http' : 'https';
      return this.#programmaticLogin(state, params, `${scheme}://${host}/`, req, res, requestId);
    }
    return answerError(res, 404, requestId, 'no-such-endpoint', req);
  }

  /** `/.svc/sign_in` on the authenticate host: check the signed request, then go to the provider. */
  async #signIn(state: AuthState, session: ResolvedSession | null, params: URLSearchParams, req: Req, res: Res, requestId: string): Promise<void> {
    const now = this.#now();
    const v = verifyParams(params, state.keys!.params, now);
    // Not trusted, but validated like any target (S01–S04): "try again" may go back where the user was.
    if (!v.ok) return this.#failed(res, req, requestId, `sign-in-link-${v.reason}`, absoluteTarget(params.get('svc_redirect_uri'), state));
    const programmatic = v.params['svc_programmatic_uri'];
    // A tunnel target only with a programmatic client: no browser is ever sent to one.
    const target = absoluteTarget(v.params['svc_redirect_uri'], state) ?? (programmatic !== undefined ? tunnelTarget(v.params['svc_redirect_uri'], state) : undefined);
    if (target === undefined) return answerError(res, 400, requestId, 'redirect-target-invalid', req);
    if (programmatic !== undefined && programmaticTarget(programmatic, state.body.settings.authenticate.programmaticRedirectDomains) === undefined) {
      return answerError(res, 400, requestId, 'programmatic-redirect-invalid', req);
    }
    // No sign-in into a dead store: its callback (or hand-off) could not store or read the session,
    // so nobody is sent to the provider while the store is known unreachable, nor handed a session
    // served from the outage grace.
    if (session?.servedFromGrace === true || this.grace.unreachable(now)) {
      this.#options.log?.({ msg: 'sign-in refused: the session store is unreachable', requestId });
      return answerError(res, 503, requestId, 'session-store-unavailable', req, { 'retry-after': String(STORE_RETRY_AFTER_SECONDS) });
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
    if (session && !switchUser && (!leaves || state.authenticateCookieUnplantable)) return this.#redirectWithHandoff(state, session.record, target, programmatic, binding, [], res);
    if (state.idp === null) return this.#failed(res, req, requestId, 'identity-provider-not-configured', undefined);
    const checks = state.idp.newChecks();
    let location: string;
    try {
      location = await state.idp.authorizationUrl(checks, switchUser);
    } catch (e) {
      return this.#failed(res, req, requestId, 'identity-provider-unavailable', target, {}, { error: (e as Error).message });
    }
    const flow = await sealToken({ st: checks.state, n: checks.nonce, v: checks.verifier, r: target, ...(programmatic !== undefined ? { p: programmatic } : {}), ...(binding !== undefined ? { b: binding } : {}) }, state.keys!.flow, now, FLOW_TTL_MS);
    writeHead(res, 302, { location, 'cache-control': 'no-store', 'set-cookie': serializeCookie(flowCookieName(state, checks.state), flow, this.#flowCookieAttributes(state, FLOW_TTL_MS)) });
    res.end();
  }

  /** The provider's callback: complete the code flow, start a new session, hand off to the route. */
  async #callback(state: AuthState, params: URLSearchParams, host: string, req: Req, res: Res, requestId: string): Promise<void> {
    const now = this.#now();
    const stateParam = params.get('state') ?? '';
    const cookieName = flowCookieName(state, stateParam);
    const clearFlow = serializeCookie(cookieName, '', this.#flowCookieAttributes(state, 0));
    const flow = /^[A-Za-z0-9_-]{16,128}$/.test(stateParam) ? await openToken(readCookie(req.headers['cookie'] === undefined ? undefined : [String(req.headers['cookie'])], cookieName), state.keys!.flow, now) : undefined;
    if (!flow || flow['st'] !== stateParam || typeof flow['n'] !== 'string' || typeof flow['v'] !== 'string' || typeof flow['r'] !== 'string') {
      return this.#failed(res, req, requestId, 'sign-in-state-invalid', undefined, { 'set-cookie': clearFlow });
    }
    const retry = absoluteTarget(flow['r'], state);
    if (params.has('error')) {
      const error = params.get('error') ?? '';
      return this.#failed(res, req, requestId, 'identity-provider-refused', retry, { 'set-cookie': clearFlow }, { error }, error);
    }
    let user: SignedInUser;
    try {
      user = await state.idp!.callback(params.toString(), { state: stateParam, nonce: flow['n'], verifier: flow['v'] }, now);
    } catch (e) {
      const reason = e instanceof IdentityProviderError && e.code === 'SVC_ERR_IDP_CALLBACK' ? 'sign-in-failed' : 'identity-provider-unavailable';
      return this.#failed(res, req, requestId, reason, retry, { 'set-cookie': clearFlow }, { error: (e as Error).message, code: (e as IdentityProviderError).code });
    }
    // INVARIANT (no-fixation): every sign-in gets a new random session id (docs/security.md S31).
    const record: SessionRecord = { ...user, id: newSessionId(), createdAtMs: now, expiresAtMs: now + state.cookie.expireMs };
    await this.#store.put(record);
    this.#options.log?.({ msg: 'signed in', requestId, user: record.userId, email: record.email, session: shortId(record.id) });
    const cookies = [clearFlow, this.#sessionCookie(state, host, record)];
    const programmatic = typeof flow['p'] === 'string' ? flow['p'] : undefined;
    const binding = typeof flow['b'] === 'string' ? flow['b'] : undefined;
    const target = absoluteTarget(flow['r'], state) ?? (programmatic !== undefined ? tunnelTarget(flow['r'], state) : undefined) ?? `${state.authenticateOrigin}/.svc/`;
    return this.#redirectWithHandoff(state, record, target, programmatic, binding, cookies, res);
  }

  /**
   * Redirects to `target`: directly on the authenticate host, else through a route-host hand-off
   * that carries `binding` (the hash of the browser's binding cookie, from the signed link).
   */
  async #redirectWithHandoff(state: AuthState, record: SessionRecord, target: string, programmatic: string | undefined, binding: string | undefined, cookies: string[], res: Res): Promise<void> {
    if (target.startsWith(TUNNEL_AUDIENCE_PREFIX)) {
      // A tunnel's token is sealed here: its target was checked against the plan's tcp routes
      // (tunnelTarget) in the signed sign-in link; `programmatic` was checked there too.
      const client = programmatic === undefined ? undefined : programmaticTarget(programmatic, state.body.settings.authenticate.programmaticRedirectDomains);
      if (client === undefined) throw new Error('a tunnel sign-in without a programmatic client');
      return this.#sendToken(state, record, client, target, cookies, res);
    }
    const origin = new URL(target).origin;
    let location = target;
    if (origin !== state.authenticateOrigin || programmatic !== undefined) {
      const to = new URL(target);
      const audience = to.host.toLowerCase();
      const token = await sealToken({ sid: record.id, r: target, aud: audience, jti: randomBytes(16).toString('base64url'), ...(programmatic !== undefined ? { p: programmatic } : {}), ...(binding !== undefined ? { b: binding } : {}) }, state.keys!.handoff, this.#now(), HANDOFF_TTL_MS);
      location = `${origin}/.svc/callback?svc_handoff=${token}`;
    }
    writeHead(res, 302, { location, 'cache-control': 'no-store', ...(cookies.length > 0 ? { 'set-cookie': cookies } : {}) });
    res.end();
  }

  /**
   * `/.svc/callback` on a route host: accept a hand-off once, from the browser that started the
   * sign-in, set this host's cookie, go back.
   */
  async #handoff(state: AuthState, params: URLSearchParams, host: string, req: Req, res: Res, requestId: string): Promise<void> {
    const now = this.#now();
    const t = await openToken(params.get('svc_handoff'), state.keys!.handoff, now);
    if (!t || typeof t['sid'] !== 'string' || typeof t['r'] !== 'string' || typeof t['jti'] !== 'string' || typeof t.exp !== 'number') return this.#failed(res, req, requestId, 'hand-off-invalid', undefined);
    // Bound to this host: a hand-off made for one route domain does not open on another.
    const to = safeRedirectTarget(t['r'], state.redirects);
    if (to === FALLBACK_TARGET || !sameHost(to, host)) return this.#failed(res, req, requestId, 'hand-off-wrong-host', undefined);
    // INVARIANT (bound-hand-off): a hand-off that sets a cookie opens only in the browser holding
    // the binding value whose hash it carries (set on this host when svc sent that browser to sign
    // in). Checked before it is used up, so a victim opening an attacker's link spends nothing.
    // A programmatic hand-off sets no cookie here: its token goes to the local client, whose own
    // `svc_state` in the callback URL binds it (cli/tcp-login.ts).
    const programmatic = typeof t['p'] === 'string' ? t['p'] : undefined;
    const binding = typeof t['b'] === 'string' ? t['b'] : undefined;
    const clearBinding = binding === undefined ? [] : [serializeCookie(bindingCookieName(state, binding), '', this.#bindingCookieAttributes(state))];
    if (programmatic === undefined && (binding === undefined || !bindingHeld(req, state, binding))) {
      return this.#failed(res, req, requestId, 'hand-off-unbound', to, clearBinding.length > 0 ? { 'set-cookie': clearBinding[0]! } : {});
    }
    if (!(await this.#store.consumeOnce(`handoff:${t['jti']}`, t.exp * 1000))) return this.#failed(res, req, requestId, 'hand-off-replayed', to);
    const record = await this.#store.get(t['sid']);
    if (!record) return this.#failed(res, req, requestId, 'session-ended', to);
    if (programmatic !== undefined) {
      // Programmatic login: the token goes to the local client, never into a cookie.
      const client = programmaticTarget(programmatic, state.body.settings.authenticate.programmaticRedirectDomains);
      if (client === undefined) return answerError(res, 400, requestId, 'programmatic-redirect-invalid', req);
      return this.#sendToken(state, record, client, host, [], res);
    }
    writeHead(res, 302, { location: to, 'cache-control': 'no-store', 'set-cookie': [...clearBinding, this.#sessionCookie(state, host, record)] });
    res.end();
  }

  /**
   * Sends a programmatic token for `audience` (a route host, or `tcp+https://host:port`) to the local
   * client: `svc_jwt` the token, `svc_jwt_expiry` when it expires (seconds since the epoch; the
   * token itself is encrypted, so a client reads its life here).
   */
  async #sendToken(state: AuthState, record: SessionRecord, client: string, audience: string, cookies: string[], res: Res): Promise<void> {
    const now = this.#now();
    const ttlMs = record.expiresAtMs - now;
    const token = await sealToken({ sid: record.id, aud: audience }, state.keys!.programmatic, now, ttlMs);
    const u = new URL(client);
    u.searchParams.set('svc_jwt', `${PROGRAMMATIC_TOKEN_PREFIX}${token}`);
    u.searchParams.set('svc_jwt_expiry', String(Math.ceil((now + ttlMs) / 1000)));
    writeHead(res, 302, { location: u.href, 'cache-control': 'no-store', ...(cookies.length > 0 ? { 'set-cookie': cookies } : {}) });
    res.end();
  }

  /** `/.svc/signout/`: with a valid CSRF token revoke the session, clear the cookie, leave. */
  async #signOut(state: AuthState, session: ResolvedSession | null, form: URLSearchParams, method: string, host: string, req: Req, res: Res, requestId: string): Promise<void> {
    const requested = form.get('svc_redirect_uri');
    const safe = requested === null ? undefined : absoluteTarget(requested, state);
    const target = safe ?? state.body.settings.authenticate.signoutRedirectUrl ?? '/';
    const clear = serializeCookie(sessionCookieName(state, host), '', { ...this.#cookieAttributes(state, host), maxAgeSeconds: 0 });
    if (!session) {
      writeHead(res, 302, { location: target, 'cache-control': 'no-store', 'set-cookie': clear });
      res.end();
      return;
    }
    const token = form.get('svc_csrf');
    if (!csrfTokenValid(state.keys!.csrf, session.record.id, token)) {
      if (method === 'POST' || token !== null) return answerError(res, 403, requestId, 'csrf-token-invalid', req);
      // A plain link to the sign-out page: ask, with a form carrying the token (CSRF-safe).
      return answer(res, 200, PAGE_HEADERS, signOutPage(csrfToken(state.keys!.csrf, session.record.id), safe ?? null));
    }
    // INVARIANT (revocation): the record is deleted server-side, so a saved cookie replayed later
    // finds nothing (docs/security.md S30), on every host and in every process.
    // Dropped here first: a sign-out the store cannot record (an outage: 503) still ends the
    // session in this process, and the outage grace never serves it again.
    this.cache.forget(session.record.id);
    state.signer.forget(session.publicId);
    await this.#store.delete(session.record.id);
    // Again: a lookup may have cached the session from the store while the delete ran.
    this.cache.forget(session.record.id);
    this.#options.log?.({ msg: 'signed out', requestId, user: session.record.userId, session: shortId(session.record.id) });
    if (form.get('svc_switch_user') === '1' && safe !== undefined && state.authenticateOrigin !== null) {
      // Switch user: straight back to sign-in, where the provider prompts for an account; not
      // through its end-session endpoint, whose return URL must be registered exactly.
      const signIn = this.#browserSignIn(state, { svc_redirect_uri: safe, svc_prompt: 'switch_user' });
      writeHead(res, 302, { location: signIn.location, 'cache-control': 'no-store', 'set-cookie': [clear, ...signIn.setCookie] });
      res.end();
      return;
    }
    const end = state.idp ? await state.idp.endSessionUrl(session.record.idToken, target) : undefined;
    writeHead(res, 302, { location: end ?? target, 'cache-control': 'no-store', 'set-cookie': clear });
    res.end();
  }

  /** `/.svc/`: who is signed in (never raw tokens, S26), for top-level navigations only. */
  #userInfo(state: AuthState, session: ResolvedSession | null, host: string, req: Req, res: Res, requestId: string): void {
    const dest = req.headers['sec-fetch-dest'];
    if (dest !== undefined && dest !== 'document') return answerError(res, 403, requestId, 'top-level-navigation-only', req);
    if (!session) {
      const accept = String(req.headers['accept'] ?? '');
      if (/\btext\/html\b/i.test(accept) && state.authenticateOrigin !== null) {
        const back = `${this.#options.scheme === 'http' && !state.cookie.secure ? 'http' : 'https'}://${host}/.svc/`;
        const signIn = this.#browserSignIn(state, { svc_redirect_uri: back });
        writeHead(res, 302, { location: signIn.location, 'cache-control': 'no-store', ...(signIn.setCookie.length > 0 ? { 'set-cookie': [...signIn.setCookie] } : {}) });
        res.end();
        return;
      }
      return answerError(res, 401, requestId, 'sign-in-required', req);
    }
    answer(res, 200, PAGE_HEADERS, userInfoPage(session.record, csrfToken(state.keys!.csrf, session.record.id)));
  }

  /**
   * `/.svc/api/v1/login?svc_redirect_uri=<local callback>`: the sign-in URL for a CLI (spec 5.6).
   * `target` is what the token will be for: the route's origin (`https://host/`), or
   * `tcp+https://host:port` for a tunnel.
   */
  #programmaticLogin(state: AuthState, params: URLSearchParams, target: string, req: Req, res: Res, requestId: string): void {
    const client = programmaticTarget(params.get('svc_redirect_uri'), state.body.settings.authenticate.programmaticRedirectDomains);
    if (client === undefined) return answerError(res, 400, requestId, 'programmatic-redirect-invalid', req);
    if (state.authenticateOrigin === null) return answerError(res, 404, requestId, 'authentication-not-configured', req);
    answer(res, 200, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' }, `${this.#signInUrl(state, { svc_redirect_uri: target, svc_programmatic_uri: client })}\n`);
  }

  /**
   * Answers a failed sign-in with its page and a "try again" link to `retry` (a validated target;
   * this host's `/.svc/` without one), and logs it with the same stable code.
   */
  #failed(res: Res, req: Req, requestId: string, reason: SignInFailure, retry: string | undefined, headers: Record<string, string> = {}, log: Record<string, unknown> = {}, detail?: string): void {
    this.#options.log?.({ msg: 'sign-in failed', requestId, reason, ...log });
    const a = signInFailedAnswer(reason, requestId, retry ?? RETRY_FALLBACK, wantsJson(req.headers['accept'] === undefined ? undefined : String(req.headers['accept'])), detail);
    writeHead(res, a.status, { ...a.headers, ...headers });
    res.end(a.body);
  }

  #sessionCookie(state: AuthState, host: string, record: SessionRecord): string {
    const name = sessionCookieName(state, host);
    const value = sealSessionCookie({ handle: record.id, expiresAtMs: record.expiresAtMs }, state.cookieSecret!, name);
    return serializeCookie(name, value, { ...this.#cookieAttributes(state, host), maxAgeSeconds: (record.expiresAtMs - this.#now()) / 1000 });
  }

  /**
   * The session cookie's attributes on `host`: `SameSite=Lax` everywhere; host-only, `Path=/` and
   * `Secure` for the authenticate host's `__Host-` cookie; else `cookie_domain` when it covers `host`.
   */
  #cookieAttributes(state: AuthState, host: string) {
    const hostOnly = sessionCookieName(state, host).startsWith(HOST_PREFIX);
    return { maxAgeSeconds: 0, secure: state.cookie.secure, httpOnly: state.cookie.httpOnly, domain: hostOnly ? null : cookieDomainFor(host, state.cookie.domain), sameSite: 'Lax' as const };
  }

  /** A binding cookie: host-only, HttpOnly, sent only to `/.svc/callback` (`/` under a `__Host-` name). */
  #bindingCookieAttributes(state: AuthState) {
    const path = state.cookie.name.startsWith(HOST_PREFIX) ? '/' : BINDING_COOKIE_PATH;
    return { maxAgeSeconds: 0, secure: state.cookie.secure, httpOnly: true, domain: null, path, sameSite: 'Lax' as const };
  }

  #flowCookieAttributes(state: AuthState, ttlMs: number) {
    return { maxAgeSeconds: ttlMs / 1000, secure: state.cookie.secure, httpOnly: true, domain: null, sameSite: 'Lax' as const };
  }
}

/** A browser sign-in: where to send the browser, and the cookies to set on the way. */
export interface SignInRedirect {
  readonly location: string;
  readonly setCookie: readonly string[];
}

/**
 * The session cookie's name on `host` (canonical, maybe with a port): the authenticate host keeps
 * its own (`__Host-` when Secure, see {@link AuthState.authenticateCookieName}); every route host
 * keeps `cookie_name`.
 */
function sessionCookieName(state: AuthState, host: string): string {
  const auth = state.authenticateHost;
  if (auth === null || state.authenticateCookieName === state.cookie.name) return state.cookie.name;
  return host === auth || host.replace(/:(443|80)$/, '') === auth ? state.authenticateCookieName : state.cookie.name;
}

/** The hash of a binding value, as the signed link, the flow cookie and the hand-off carry it. */
function bindingHash(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('base64url');
}

/** The binding cookie of one sign-in: named after its hash, so parallel sign-ins in several tabs do not collide. */
function bindingCookieName(state: AuthState, binding: string): string {
  return `${state.cookie.name}_bind_${binding.slice(0, 12).replace(/[^A-Za-z0-9_-]/g, '')}`;
}

/** The request carries the binding cookie whose value hashes to `binding` (compared in constant time). */
function bindingHeld(req: Req, state: AuthState, binding: string): boolean {
  const header = req.headers['cookie'];
  const value = readCookie(header === undefined ? undefined : [String(header)], bindingCookieName(state, binding));
  if (value === undefined || value === '') return false;
  const a = Buffer.from(bindingHash(value));
  const b = Buffer.from(binding);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The flow cookie of one sign-in: named after its state, so parallel sign-ins do not collide. */
function flowCookieName(state: AuthState, stateParam: string): string {
  return `${state.cookie.name}_signin_${stateParam.slice(0, 12).replace(/[^A-Za-z0-9_-]/g, '')}`;
}

/** An absolute redirect target svc serves (S01–S04), or undefined. */
function absoluteTarget(raw: string | undefined | null, state: AuthState): string | undefined {
  const t = safeRedirectTarget(raw, state.redirects);
  return t === FALLBACK_TARGET || t.startsWith('/') ? undefined : t;
}

/** `tcp+https://host:port` when `raw` is exactly a tcp route's target in this plan, else undefined. */
function tunnelTarget(raw: string | undefined | null, state: AuthState): string | undefined {
  if (typeof raw !== 'string' || !raw.startsWith(TUNNEL_AUDIENCE_PREFIX)) return undefined;
  return state.tcpRouteHosts.has(raw.slice(TUNNEL_AUDIENCE_PREFIX.length)) ? raw : undefined;
}

/** `url` is on the canonical `host` (URL.host already leaves out the scheme's default port). */
function sameHost(url: string, host: string): boolean {
  const h = new URL(url).host.toLowerCase();
  return h === host || h === host.replace(/:(443|80)$/, '');
}

/** The programmatic bearer token of a request (`Authorization: Bearer svc1.…`), if any. */
export function programmaticCredential(headers: RequestHeaders): string | undefined {
  return bearerToken(headers['authorization']);
}

/** The token of a single `Bearer svc1.…` header value (`Authorization` or `Proxy-Authorization`). */
function bearerToken(auth: readonly string[] | undefined): string | undefined {
  if (!auth || auth.length !== 1) return undefined;
  const v = auth[0]!;
  const prefix = `Bearer ${PROGRAMMATIC_TOKEN_PREFIX}`;
  return v.length > prefix.length && v.startsWith(prefix) ? v.slice(prefix.length) : undefined;
}

/** Removes svc's session cookie and programmatic token from headers bound upstream. */
export function stripCredentials(headers: OutgoingHeaders, cookieName: string): void {
  const cookie = headers['cookie'];
  if (typeof cookie === 'string' && cookie.includes(cookieName)) headers['cookie'] = withoutSvcCookies(cookie, cookieName);
  const auth = headers['authorization'];
  if (typeof auth === 'string' && auth.startsWith(`Bearer ${PROGRAMMATIC_TOKEN_PREFIX}`)) headers['authorization'] = undefined;
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

/** A session in logs: its public id, never the handle itself. */
function shortId(id: string): string {
  return publicSessionId(id);
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

function answer(res: Res, status: number, headers: Readonly<Record<string, string>>, body: string): void {
  writeHead(res, status, { ...headers, 'content-length': String(Buffer.byteLength(body)) });
  res.end(body);
}

function answerError(res: Res, status: number, requestId: string, reason: string, req: Req, extra: Record<string, string> = {}): void {
  const a = errorAnswer(status, requestId, reason, wantsJson(req.headers['accept'] === undefined ? undefined : String(req.headers['accept'])));
  writeHead(res, a.status, { ...a.headers, ...extra });
  res.end(a.body);
}

