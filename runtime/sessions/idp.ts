/**
 * The identity provider, through openid-client 6 (no hand-written protocol): discovery, the
 * authorization code flow with PKCE, `state` and `nonce`, the refresh token grant and the
 * end-session URL. One `IdentityProvider` per plan generation; discovery runs on first use and is
 * retried after a failure, so svc starts even while the provider is down (sign-in then answers 503).
 *
 * Built-in provider names (docs/authentication.md "Sign-in") only supply defaults: the discovery base URL when
 * `idp_provider_url` is not set, and the scopes when `idp_scopes` is not set (docs/authentication.md).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import * as oidc from 'openid-client';
import type { PlanSettings } from '../../compiler/plan/types.ts';
import { SvcError } from '../core/errors.ts';
import { parseEmail } from '../policy/email.ts';
import type { SessionRecord } from '../core/session-store.ts';

/** Defaults of the built-in provider names (docs/authentication.md "Sign-in"); `oidc` is the generic provider. */
const PROVIDER_DEFAULTS: Readonly<Record<string, { readonly url: string | null; readonly scopes: readonly string[]; readonly switchPrompt: string }>> = {
  oidc: { url: null, scopes: ['openid', 'profile', 'email', 'offline_access'], switchPrompt: 'login' },
  // Google and Microsoft offer an account chooser (`select_account`); Google refuses `login`.
  google: { url: 'https://accounts.google.com', scopes: ['openid', 'profile', 'email'], switchPrompt: 'select_account' },
  gitlab: { url: 'https://gitlab.com', scopes: ['openid', 'profile', 'email'], switchPrompt: 'login' },
  azure: { url: 'https://login.microsoftonline.com/common/v2.0', scopes: ['openid', 'profile', 'email', 'offline_access'], switchPrompt: 'select_account' },
  okta: { url: null, scopes: ['openid', 'profile', 'email', 'groups', 'offline_access'], switchPrompt: 'login' },
  github: { url: null, scopes: ['openid', 'profile', 'email'], switchPrompt: 'login' },
};

/** The codes of {@link IdentityProviderError}. */
export type IdentityProviderErrorCode = 'SVC_ERR_IDP_UNAVAILABLE' | 'SVC_ERR_IDP_CONFIG' | 'SVC_ERR_IDP_CALLBACK' | 'SVC_ERR_IDP_REFRESH' | 'SVC_ERR_IDP_USERINFO';

/** Why the identity provider could not be used; shown to the user as a 502 with this code. */
export class IdentityProviderError extends SvcError<IdentityProviderErrorCode> {
  constructor(
    /**
     * `SVC_ERR_IDP_UNAVAILABLE`: the provider could not answer (unreachable, timeout, 5xx, 429 rate
     * limit): try again later, keep the session. `SVC_ERR_IDP_REFRESH`: the provider refused a
     * session's refresh token (`invalid_grant`) or answered for another subject: the session is over.
     * `SVC_ERR_IDP_USERINFO`: the userinfo endpoint refused the access token or answered for another
     * subject. `SVC_ERR_IDP_CONFIG`, `SVC_ERR_IDP_CALLBACK`: sign-in problems.
     */
    code: IdentityProviderErrorCode,
    message: string,
    options?: ErrorOptions & {
      /** The provider's `Retry-After`, in ms, when it sent one with a 429 or 503. */
      readonly retryAfterMs?: number;
    },
  ) {
    super(code, message, options);
    this.name = 'IdentityProviderError';
    this.retryAfterMs = options?.retryAfterMs;
  }

  readonly retryAfterMs: number | undefined;
}

/**
 * Carries a caller's abort signal into openid-client's requests (its functions take no signal):
 * a background refresh stopped by the identity manager's `close` is aborted, not waited for.
 */
const callerSignal = new AsyncLocalStorage<AbortSignal>();

/** openid-client's fetch, with the caller's signal (see {@link callerSignal}) added to its own timeout. */
const fetchWithCallerSignal: oidc.CustomFetch = (url, options) => {
  const caller = callerSignal.getStore();
  const signal = caller === undefined ? options.signal : options.signal ? AbortSignal.any([options.signal, caller]) : caller;
  return fetch(url, { ...options, ...(signal ? { signal } : {}) } as RequestInit);
};

/** What svc keeps of a token response: a session record's identity and tokens (server-side only). */
export type SignedInUser = Omit<SessionRecord, 'id' | 'createdAtMs' | 'expiresAtMs'>;

/** The per-sign-in secrets a browser carries back (sealed) to the callback. */
export interface SignInChecks {
  readonly state: string;
  readonly nonce: string;
  readonly verifier: string;
}

/** Token claims never copied into a session's identity claims (protocol bookkeeping). */
const PROTOCOL_CLAIMS = new Set(['aud', 'azp', 'exp', 'iat', 'auth_time', 'nonce', 'at_hash', 'c_hash', 's_hash', 'sid', 'jti', 'nbf']);

/**
 * What svc asks of a sign-in provider: an OpenID Connect provider (`IdentityProvider`, below) or
 * GitHub's OAuth 2.0 (github.ts). Errors are `IdentityProviderError`s with the codes documented on it.
 */
export interface SignInProvider {
  /** Where the provider is (`idp_provider_url`, else the built-in provider's default); null when unknown. */
  readonly providerUrl: string | null;
  /** Fresh `state`, `nonce` and PKCE verifier for one sign-in. */
  newChecks(): SignInChecks;
  /** The provider's authorization URL for one sign-in (`switchUser`: let the user choose an account). */
  authorizationUrl(checks: SignInChecks, switchUser?: boolean): Promise<string>;
  /** Completes a sign-in from the callback's query string. */
  callback(query: string, checks: SignInChecks, nowMs: number): Promise<SignedInUser>;
  /** Refreshes a session's tokens (the session is over on `SVC_ERR_IDP_REFRESH`). */
  refresh(refreshToken: string, previous: SignedInUser, nowMs: number, signal?: AbortSignal): Promise<SignedInUser>;
  /** Whether `userInfo` can read the user again with a session's access token. */
  hasUserInfo(): Promise<boolean>;
  /** The user as the provider describes them now (claims, email, groups); tokens and subject stay. */
  userInfo(accessToken: string, previous: SignedInUser, signal?: AbortSignal): Promise<SignedInUser>;
  /** The provider's end-session URL, when it has one. */
  endSessionUrl(idToken: string | undefined, postLogoutRedirectUri: string): Promise<string | undefined>;
  /**
   * True when an access token given without an expiry never expires (GitHub's OAuth apps): `userInfo`
   * refusing one means it was revoked, and the identity manager ends the session.
   */
  readonly unexpiringTokens?: boolean;
}

export class IdentityProvider implements SignInProvider {
  readonly #settings: PlanSettings['idp'];
  readonly #clientSecret: string;
  readonly #callbackUrl: string;
  #config: Promise<oidc.Configuration> | undefined;

  /** `callbackUrl`: `authenticate_service_url` + `authenticate_callback_path`, the registered redirect URI. */
  constructor(settings: PlanSettings['idp'], clientSecret: string, callbackUrl: string) {
    this.#settings = settings;
    this.#clientSecret = clientSecret;
    this.#callbackUrl = callbackUrl;
  }

  /** The discovery base URL: `idp_provider_url`, else the built-in provider's. */
  get providerUrl(): string | null {
    return this.#settings.providerUrl ?? PROVIDER_DEFAULTS[this.#settings.provider ?? 'oidc']?.url ?? null;
  }

  /** The discovered configuration; a failed discovery is forgotten so the next call retries. */
  config(): Promise<oidc.Configuration> {
    if (!this.#config) {
      const url = this.providerUrl;
      const clientId = this.#settings.clientId;
      if (url === null || clientId === null) return Promise.reject(new IdentityProviderError('SVC_ERR_IDP_CONFIG', 'no identity provider URL or client id is configured'));
      const issuer = new URL(url);
      // Plain-HTTP providers are the operator's explicit choice (a local development provider).
      const execute = issuer.protocol === 'http:' ? [oidc.allowInsecureRequests] : [];
      this.#config = oidc.discovery(issuer, clientId, this.#clientSecret, undefined, { execute, timeout: 10, [oidc.customFetch]: fetchWithCallerSignal }).catch((e: unknown) => {
        this.#config = undefined;
        throw new IdentityProviderError('SVC_ERR_IDP_UNAVAILABLE', `discovery at ${url} failed: ${(e as Error).message}`, { cause: e });
      });
    }
    return this.#config;
  }

  /** Fresh `state`, `nonce` and PKCE verifier for one sign-in (CSPRNG, docs/security.md S31). */
  newChecks(): SignInChecks {
    return { state: oidc.randomState(), nonce: oidc.randomNonce(), verifier: oidc.randomPKCECodeVerifier() };
  }

  /**
   * The provider's authorization URL for one sign-in. `switchUser` asks the provider to let the user
   * choose or re-enter an account (`prompt`: `select_account` for Google and Azure, else `login`)
   * instead of reusing the provider's own session.
   */
  async authorizationUrl(checks: SignInChecks, switchUser = false): Promise<string> {
    const config = await this.config();
    const scopes = this.#settings.scopes.length > 0 ? this.#settings.scopes : PROVIDER_DEFAULTS[this.#settings.provider ?? 'oidc']?.scopes ?? ['openid'];
    const url = oidc.buildAuthorizationUrl(config, {
      ...this.#settings.requestParams,
      redirect_uri: this.#callbackUrl,
      scope: scopes.join(' '),
      state: checks.state,
      nonce: checks.nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(checks.verifier),
      code_challenge_method: 'S256',
      ...(switchUser ? { prompt: PROVIDER_DEFAULTS[this.#settings.provider ?? 'oidc']?.switchPrompt ?? 'login' } : {}),
    });
    return url.href;
  }

  /**
   * Completes a sign-in: checks `state`, exchanges the code (PKCE), validates the ID token (issuer,
   * audience, signature, `nonce`, expiry: openid-client) and returns the user. `query` is the
   * callback's query string; the URL itself is the configured callback, never request headers.
   */
  async callback(query: string, checks: SignInChecks, nowMs: number): Promise<SignedInUser> {
    const config = await this.config();
    const current = new URL(this.#callbackUrl);
    current.search = query;
    let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
    try {
      tokens = await oidc.authorizationCodeGrant(config, current, { pkceCodeVerifier: checks.verifier, expectedState: checks.state, expectedNonce: checks.nonce, idTokenExpected: true });
    } catch (e) {
      if (unreachable(e)) throw new IdentityProviderError('SVC_ERR_IDP_UNAVAILABLE', `the token endpoint could not be reached: ${(e as Error).message}`, { cause: e });
      throw new IdentityProviderError('SVC_ERR_IDP_CALLBACK', `the sign-in could not be completed: ${(e as Error).message}`, { cause: e });
    }
    return this.#user(tokens, undefined, nowMs);
  }

  /**
   * Refreshes a session's tokens. Rejects with `SVC_ERR_IDP_REFRESH` when the provider refuses the
   * grant (`invalid_grant`) or answers for another subject (the session is over), and with
   * `SVC_ERR_IDP_UNAVAILABLE` for everything else (unreachable, timeout, 5xx, 429, another OAuth
   * error such as `invalid_client`): a provider outage or misconfiguration never ends sessions.
   * `signal` aborts the request.
   */
  async refresh(refreshToken: string, previous: SignedInUser, nowMs: number, signal?: AbortSignal): Promise<SignedInUser> {
    const config = await this.#configFor('refresh');
    let tokens: Awaited<ReturnType<typeof oidc.refreshTokenGrant>>;
    try {
      tokens = await withSignal(signal, () => oidc.refreshTokenGrant(config, refreshToken));
    } catch (e) {
      if (e instanceof oidc.ResponseBodyError && e.error === 'invalid_grant') throw new IdentityProviderError('SVC_ERR_IDP_REFRESH', `refresh refused: ${e.error}`, { cause: e });
      throw unavailable('the refresh token grant', e);
    }
    const user = this.#user(tokens, previous, nowMs);
    // The subject of a session never changes (OpenID Connect Core 12.2).
    if (user.userId !== previous.userId) throw new IdentityProviderError('SVC_ERR_IDP_REFRESH', 'refresh returned another subject');
    return { ...user, ...(user.refreshToken === undefined ? { refreshToken } : {}) };
  }

  /** True when the discovered provider has a userinfo endpoint (the directory refresh reads it). Rejects like {@link config}. */
  async hasUserInfo(): Promise<boolean> {
    return typeof (await this.config()).serverMetadata().userinfo_endpoint === 'string';
  }

  /**
   * The user as the provider's userinfo endpoint describes them now, with a session's access token
   * (the directory refresh, docs/authentication.md "Keeping sessions fresh"): `previous` with its
   * email (checked as at sign-in), claims (the answer's, over the previous ones) and groups (the
   * `groups` claim, read as at sign-in; kept as they were when the answer has no `groups` claim,
   * since a provider that never sends groups there must not empty them). Tokens and subject stay.
   * Rejects with `SVC_ERR_IDP_USERINFO` when the provider refuses the token (401/403) or answers for
   * another subject, `SVC_ERR_IDP_UNAVAILABLE` otherwise.
   */
  async userInfo(accessToken: string, previous: SignedInUser, signal?: AbortSignal): Promise<SignedInUser> {
    const config = await this.#configFor('userinfo');
    let info: oidc.UserInfoResponse;
    try {
      info = await withSignal(signal, () => oidc.fetchUserInfo(config, accessToken, previous.userId));
    } catch (e) {
      if (e instanceof oidc.WWWAuthenticateChallengeError || (e instanceof oidc.ResponseBodyError && (e.status === 401 || e.status === 403))) {
        throw new IdentityProviderError('SVC_ERR_IDP_USERINFO', `userinfo refused the access token: ${(e as Error).message}`, { cause: e });
      }
      if (e instanceof oidc.ClientError && e.code === 'OAUTH_JSON_ATTRIBUTE_COMPARISON_FAILED') throw new IdentityProviderError('SVC_ERR_IDP_USERINFO', 'userinfo answered for another subject', { cause: e });
      throw unavailable('the userinfo endpoint', e);
    }
    const fresh = Object.fromEntries(Object.entries(info).filter(([k]) => !PROTOCOL_CLAIMS.has(k)));
    const claims: Record<string, unknown> = Object.fromEntries([...Object.entries(previous.claims), ...Object.entries(fresh)]);
    const email = identityEmail(claims, this.#settings.trustUnverifiedEmail);
    const { email: _old, ...rest } = previous;
    return { ...rest, ...(email !== undefined ? { email } : {}), claims, groups: Object.hasOwn(fresh, 'groups') ? groupsClaim(fresh) : previous.groups };
  }

  /** The discovered configuration for a background call: a failed discovery is an outage. */
  async #configFor(what: string): Promise<oidc.Configuration> {
    try {
      return await this.config();
    } catch (e) {
      if (e instanceof IdentityProviderError && e.code === 'SVC_ERR_IDP_CONFIG') throw e;
      throw unavailable(`discovery before ${what}`, e);
    }
  }

  /** The provider's end-session URL, when it has one (sign-out calls it: docs/authentication.md "Sign-out"). */
  async endSessionUrl(idToken: string | undefined, postLogoutRedirectUri: string): Promise<string | undefined> {
    let config: oidc.Configuration;
    try {
      config = await this.config();
    } catch {
      return undefined;
    }
    if (!config.serverMetadata().end_session_endpoint) return undefined;
    return oidc.buildEndSessionUrl(config, { post_logout_redirect_uri: postLogoutRedirectUri, ...(idToken ? { id_token_hint: idToken } : {}) }).href;
  }

  #user(tokens: oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers, previous: SignedInUser | undefined, nowMs: number): SignedInUser {
    const idClaims = tokens.claims();
    const source = idClaims ?? previous?.claims ?? {};
    // fromEntries keeps a claim named `__proto__` as data; an assignment would replace the prototype.
    const claims: Record<string, unknown> = Object.fromEntries(Object.entries(source).filter(([k]) => !PROTOCOL_CLAIMS.has(k)));
    const userId = typeof claims['sub'] === 'string' ? claims['sub'] : previous?.userId;
    if (userId === undefined || userId === '') throw new IdentityProviderError('SVC_ERR_IDP_CALLBACK', 'the ID token has no subject');
    const email = identityEmail(claims, this.#settings.trustUnverifiedEmail);
    const groups = groupsClaim(claims);
    const expiresIn = tokens.expiresIn();
    return {
      userId,
      ...(email !== undefined ? { email } : {}),
      groups,
      claims,
      ...(tokens.id_token !== undefined ? { idToken: tokens.id_token } : previous?.idToken !== undefined ? { idToken: previous.idToken } : {}),
      ...(tokens.access_token !== undefined ? { accessToken: tokens.access_token } : {}),
      ...(tokens.refresh_token !== undefined ? { refreshToken: tokens.refresh_token } : {}),
      ...(expiresIn !== undefined ? { accessTokenExpiresAtMs: nowMs + expiresIn * 1000 } : {}),
    };
  }
}

/**
 * The email a session's identity holds, from the ID token's claims (docs/authentication.md
 * "Emails"): the `email` claim when it is an address (runtime/policy/email.ts; kept with its domain
 * lower-cased) and the provider vouches for it (`email_verified` is `true`, or the string `"true"`
 * some providers send), else none. `trustUnverified` (`idp_trust_unverified_email`) drops the
 * second condition, never the first.
 *
 * INVARIANT (no unchecked email): an identity made at sign-in or refresh never carries an email
 * that is not an address, nor (by default) one its provider did not mark verified; policy and
 * the identity sent upstream both read it (and check the address again, for identities from
 * elsewhere).
 */
export function identityEmail(claims: Readonly<Record<string, unknown>>, trustUnverified: boolean): string | undefined {
  const raw = claims['email'];
  if (typeof raw !== 'string') return undefined;
  const verified = claims['email_verified'] === true || claims['email_verified'] === 'true';
  if (!verified && !trustUnverified) return undefined;
  return parseEmail(raw)?.address;
}

/** A user's groups from the provider's `groups` claim (ID token or userinfo): a list of strings, or one string. */
function groupsClaim(claims: Readonly<Record<string, unknown>>): string[] {
  const g = claims['groups'];
  return Array.isArray(g) ? g.filter((x): x is string => typeof x === 'string') : typeof g === 'string' ? [g] : [];
}

/** Runs `call` with `signal` as its requests' caller signal. */
function withSignal<T>(signal: AbortSignal | undefined, call: () => Promise<T>): Promise<T> {
  return signal === undefined ? call() : callerSignal.run(signal, call);
}

/** A provider failure that is not a refusal: `SVC_ERR_IDP_UNAVAILABLE`, with the `Retry-After` of a 429 or 503. */
function unavailable(what: string, e: unknown): IdentityProviderError {
  const response = e instanceof oidc.ResponseBodyError ? e.response : e instanceof oidc.ClientError && e.cause instanceof Response ? e.cause : undefined;
  const retryAfterMs = response !== undefined && (response.status === 429 || response.status === 503) ? retryAfter(response.headers.get('retry-after')) : undefined;
  const status = response !== undefined ? ` (HTTP ${response.status})` : '';
  return new IdentityProviderError('SVC_ERR_IDP_UNAVAILABLE', `${what} failed${status}: ${(e as Error).message}`, { cause: e, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) });
}

/** A `Retry-After` value in ms (delay-seconds only, at most an hour), else undefined. */
function retryAfter(value: string | null): number | undefined {
  if (value === null || !/^\d{1,6}$/.test(value.trim())) return undefined;
  return Math.min(Number(value.trim()), 3600) * 1000;
}

/**
 * Whether a failed provider request means the provider is unreachable or failing (refused or reset
 * connection, unknown host, timeout, a 5xx answer) rather than refusing this sign-in.
 */
function unreachable(e: unknown): boolean {
  // undici's fetch rejects every network failure with this TypeError (the cause names ECONNREFUSED, …).
  if (e instanceof TypeError && e.message === 'fetch failed') return true;
  if (e instanceof oidc.ClientError) {
    if (e.code === 'OAUTH_TIMEOUT' || e.code === 'OAUTH_ABORT') return true;
    if (e.code === 'OAUTH_RESPONSE_IS_NOT_CONFORM' && e.cause instanceof Response && e.cause.status >= 500) return true;
  }
  return false;
}
