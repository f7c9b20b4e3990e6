/**
 * Which session a request carries (docs/authentication.md, "Sessions"): its session cookie, a
 * programmatic bearer token bound to the request's host, or for a CONNECT to a `tcp+https` route
 * a `Proxy-Authorization` token bound to that route. One `SessionResolver` per process, holding
 * what is process-wide: the credential cache, the store's outage grace and the refreshes in
 * progress; what depends on the plan comes in per request as the generation's `AuthState`.
 *
 * A lookup is synchronous on a cache hit, a promise on a miss, and never rejects: a store that
 * cannot be reached gives `STORE_UNAVAILABLE` (or a session from the bounded outage grace), any
 * other failure a signed-out request.
 */
import { SessionStoreError, type SessionRecord, type SessionStore } from '../core/session-store.ts';
import type { RequestHeaders } from '../core/types.ts';
import { isDirectoryRecord } from '../sessions/directory/record.ts';
import { DEFAULT_STORE_OUTAGE_GRACE_MS, OutageGrace, type GraceObserver } from '../sessions/outage-grace.ts';
import { publicSessionId, resolveSession, SessionCache, type ResolvedSession } from '../sessions/session-cache.ts';
import { SessionRefresher } from '../sessions/session-refresher.ts';
import type { AssertionSigner } from './assertion.ts';
import type { AuthState } from './auth-state.ts';
import { readCookie } from './cookies.ts';
import { bearerToken, sessionCookieName, TUNNEL_AUDIENCE_PREFIX } from './credentials.ts';
import { openToken } from './sealed-token.ts';
import { openSessionCookie } from './session-cookie.ts';

/**
 * A session is refreshed when its access token has expired: the request that finds it so waits for
 * the refresh, and a refused refresh ends the session before that request is decided. (The identity
 * manager, runtime/sessions/, refreshes sessions before that, in the background.) When the provider
 * cannot answer, the session is kept and the request decided on it (runtime/sessions/session-refresher.ts).
 */
const REFRESH_MARGIN_MS = 0;

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

/** A session in logs: its public id, never the handle itself. */
export function shortId(id: string): string {
  return publicSessionId(id);
}

export interface SessionResolverOptions {
  readonly log?: (entry: Record<string, unknown>) => void;
  /** Clock (tests). */
  readonly now?: () => number;
  /**
   * Refreshes sessions (shared with the identity manager in the same process, so one session is
   * never refreshed twice at once); default: one of this resolver's own.
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

export class SessionResolver {
  readonly cache: SessionCache;
  /** The store's outages as this process sees them, and the requests served from the grace. */
  readonly grace: OutageGrace;
  readonly #store: SessionStore;
  readonly #log: ((entry: Record<string, unknown>) => void) | undefined;
  readonly #refresher: SessionRefresher;
  readonly #now: () => number;
  /** The signer of the last generation a request used: its cached assertions are dropped when a session changes. */
  #signer: AssertionSigner | undefined;
  readonly #offChange: () => void;

  constructor(store: SessionStore, options: SessionResolverOptions) {
    this.#store = store;
    this.#log = options.log;
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

  /**
   * The session of a request: its session cookie, or a programmatic bearer token bound to `host`
   * (the request's canonical host, from the gate: the one normalization of docs/architecture.md §2.2).
   */
  resolve(state: AuthState, headers: RequestHeaders, host: string): SessionLookup {
    if (state.keys === null || state.cookieSecret === null) return null;
    this.#signer = state.signer;
    const now = this.#now();
    const bearer = bearerToken(headers['authorization']);
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
   * {@link resolve}; no cookie is read.
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
      this.#log?.({ msg: 'session lookup failed; treating the request as signed out', error: (e as Error).message });
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
    // The directory's record shares the store (runtime/sessions/directory/record.ts): it is never a session.
    if (isDirectoryRecord(handle)) return null;
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
    const session = await resolveSession(this.#store, record);
    if (until > now) this.cache.set(credential, state, session, now, Math.min(until, record.expiresAtMs), Math.min(expiresAt, record.expiresAtMs));
    return session;
  }
}
