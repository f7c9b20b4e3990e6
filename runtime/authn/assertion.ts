/**
 * The `x-svc-jwt-assertion` signer (`jwt_claims_headers`; docs/authentication.md "Identity for upstreams"): a JWT saying who the
 * user is, signed with the signing key, for one upstream audience. Signing costs tens of
 * microseconds, so each token is signed once per (session, audience) and served from a cache until
 * shortly before it expires.
 *
 * Cache contract: a token is keyed by (session id, audience) only. The caller keeps everything else
 * that goes into it (issuer, identity, extra claims) a function of the session for the signer's
 * life, and calls `forget` whenever the session's identity may have changed (refresh, sign-out).
 */
import { randomBytes } from 'node:crypto';
import { SignJWT } from 'jose';
import { checkedEmail } from '../policy/email.ts';
import type { Identity } from '../core/types.ts';
import type { SigningKey } from './signing-key.ts';
import { SvcError } from '../core/errors.ts';

/** What one assertion says. */
export interface AssertionInput {
  /** → claim `sid`. */
  readonly sessionId: string;
  /** → `iss` (a host[:port], e.g. 'authenticate.example.com' — caller decides). */
  readonly issuer: string;
  /** → `aud` (the route's host, with the port when not the default: port specific). */
  readonly audience: string;
  /** sub = user = identity.user; email (omitted when the identity has none); groups. */
  readonly identity: Identity;
  /** Extra claims from jwt_claims_headers (claim name → value), merged in but never overriding the registered claims above. */
  readonly extraClaims?: Readonly<Record<string, unknown>>;
}

/** Tuning of {@link AssertionSigner}; every field has a default. */
export interface AssertionSignerOptions {
  /** The clock, in ms since the epoch. Default `Date.now`. */
  readonly now?: () => number;
  /** Token lifetime in ms (exp = iat + ttl, whole seconds). Default 300_000. */
  readonly ttlMs?: number;
  /** A cached token is reused while now < exp - margin (ms). Default 60_000; must be below `ttlMs`. */
  readonly reuseMarginMs?: number;
  /** Most cached tokens; past it the sessions signed longest ago are dropped. Default 100_000. */
  readonly maxEntries?: number;
}

/** An `AssertionSigner` built with options that cannot work (a caller bug). */
export class AssertionSignerError extends SvcError<'SVC_ERR_ASSERTION_OPTIONS'> {
  constructor(message: string, options?: ErrorOptions) {
    super('SVC_ERR_ASSERTION_OPTIONS', message, options);
    this.name = 'AssertionSignerError';
  }
}

/**
 * Claims the signer alone sets: the JWT registered claims (RFC 7519 §4.1, `nbf` included though
 * unused, so no extra claim can postpone validity) and svc's identity claims. An extra claim with
 * one of these names is dropped.
 */
const RESERVED_CLAIMS: ReadonlySet<string> = new Set(['iss', 'sub', 'aud', 'exp', 'nbf', 'iat', 'jti', 'user', 'email', 'groups', 'sid']);

const JTI_BYTES = 16;

interface CacheEntry {
  readonly token: string;
  /** The token is served from the cache while now < this (ms): exp - margin. */
  readonly reuseUntilMs: number;
}

/** Signs assertions and caches them per (session, audience). One per signing key. */
export class AssertionSigner {
  readonly #key: SigningKey;
  readonly #now: () => number;
  readonly #ttlSeconds: number;
  readonly #marginMs: number;
  readonly #maxEntries: number;
  /** session id → audience → token. Outer order: sessions by last sign, oldest first (eviction order). */
  readonly #cache = new Map<string, Map<string, CacheEntry>>();
  #entries = 0;
  /**
   * Signs in flight per session. `forget` drops the session's set, so a sign that started before
   * the `forget` finds its ticket gone and does not cache its (possibly stale) token.
   */
  readonly #inFlight = new Map<string, Set<symbol>>();

  /** @throws {AssertionSignerError} when ttlMs is not a whole number of seconds ≥ 1 s, the margin is not in [0, ttlMs), or maxEntries < 1. */
  constructor(key: SigningKey, options: AssertionSignerOptions = {}) {
    const ttlMs = options.ttlMs ?? 300_000;
    const marginMs = options.reuseMarginMs ?? 60_000;
    const maxEntries = options.maxEntries ?? 100_000;
    if (!Number.isSafeInteger(ttlMs) || ttlMs < 1000 || ttlMs % 1000 !== 0) throw new AssertionSignerError('ttlMs must be a whole number of seconds, at least 1000');
    if (!Number.isFinite(marginMs) || marginMs < 0 || marginMs >= ttlMs) throw new AssertionSignerError('reuseMarginMs must be at least 0 and below ttlMs');
    if (!Number.isSafeInteger(maxEntries) || maxEntries < 1) throw new AssertionSignerError('maxEntries must be a positive integer');
    this.#key = key;
    this.#now = options.now ?? Date.now;
    this.#ttlSeconds = ttlMs / 1000;
    this.#marginMs = marginMs;
    this.#maxEntries = maxEntries;
  }

  /** The cached token for (sessionId, audience) when still fresh enough, else undefined. Synchronous: the hot path. */
  cached(sessionId: string, audience: string): string | undefined {
    const bySession = this.#cache.get(sessionId);
    const entry = bySession?.get(audience);
    if (bySession === undefined || entry === undefined) return undefined;
    if (this.#now() < entry.reuseUntilMs) return entry.token;
    bySession.delete(audience);
    this.#entries--;
    if (bySession.size === 0) this.#cache.delete(sessionId);
    return undefined;
  }

  /**
   * Signs (claims iss, aud, sub, user, email (the checked one: runtime/policy/email.ts), groups, sid, iat, exp = iat + ttl, jti random 16
   * bytes base64url from the CSPRNG, plus extraClaims), caches and returns it. Header: alg, kid,
   * typ 'JWT'. A `forget` of the session while this runs keeps the token out of the cache.
   */
  async sign(input: AssertionInput): Promise<string> {
    const { sessionId, audience, identity } = input;
    const email = checkedEmail(identity.email);
    const ticket = Symbol('assertion sign');
    let tickets = this.#inFlight.get(sessionId);
    if (tickets === undefined) this.#inFlight.set(sessionId, (tickets = new Set()));
    tickets.add(ticket);
    try {
      const iat = Math.floor(this.#now() / 1000);
      const exp = iat + this.#ttlSeconds;
      // Object.fromEntries defines own properties, so a claim named `__proto__` stays a claim.
      const extra = Object.fromEntries(Object.entries(input.extraClaims ?? {}).filter(([name]) => !RESERVED_CLAIMS.has(name)));
      const claims: Record<string, unknown> = {
        ...extra,
        iss: input.issuer,
        aud: audience,
        sub: identity.user,
        user: identity.user,
        ...(email === undefined ? {} : { email }),
        groups: [...identity.groups],
        sid: sessionId,
        iat,
        exp,
        jti: randomBytes(JTI_BYTES).toString('base64url'),
      };
      const token = await new SignJWT(claims)
        .setProtectedHeader({ alg: this.#key.alg, kid: this.#key.kid, typ: 'JWT' })
        .sign(this.#key.privateKey);
      if (this.#inFlight.get(sessionId)?.has(ticket) === true) this.#store(sessionId, audience, { token, reuseUntilMs: exp * 1000 - this.#marginMs });
      return token;
    } finally {
      const current = this.#inFlight.get(sessionId);
      if (current !== undefined) {
        current.delete(ticket);
        if (current.size === 0) this.#inFlight.delete(sessionId);
      }
    }
  }

  /** Drops every cached token of a session (on sign-out or refresh), so a changed identity is never served from the cache. */
  forget(sessionId: string): void {
    const bySession = this.#cache.get(sessionId);
    if (bySession !== undefined) {
      this.#entries -= bySession.size;
      this.#cache.delete(sessionId);
    }
    this.#inFlight.delete(sessionId);
  }

  /** How many tokens the cache holds (for metrics and tests). */
  get size(): number {
    return this.#entries;
  }

  /** Caches a token, moving its session to the young end and evicting the oldest sessions past `maxEntries`. */
  #store(sessionId: string, audience: string, entry: CacheEntry): void {
    let bySession = this.#cache.get(sessionId);
    if (bySession === undefined) bySession = new Map();
    else this.#cache.delete(sessionId);
    this.#cache.set(sessionId, bySession);
    if (bySession.delete(audience)) this.#entries--;
    bySession.set(audience, entry);
    this.#entries++;
    while (this.#entries > this.#maxEntries) {
      const oldest = this.#cache.keys().next().value as string;
      const tokens = this.#cache.get(oldest) as Map<string, CacheEntry>;
      if (oldest !== sessionId) {
        this.#entries -= tokens.size;
        this.#cache.delete(oldest);
      } else {
        // Only this session is left and it alone is over the limit: drop its oldest audiences.
        tokens.delete(tokens.keys().next().value as string);
        this.#entries--;
      }
    }
  }
}
