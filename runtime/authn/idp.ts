/**
 * The identity provider, through openid-client 6 (no hand-written protocol): discovery, the
 * authorization code flow with PKCE, `state` and `nonce`, the refresh token grant and the
 * end-session URL. One `IdentityProvider` per plan generation; discovery runs on first use and is
 * retried after a failure, so svc starts even while the provider is down (sign-in then answers 503).
 *
 * Built-in provider names (spec 2.4) only supply defaults: the discovery base URL when
 * `idp_provider_url` is not set, and the scopes when `idp_scopes` is not set (docs/authentication.md).
 */
import * as oidc from 'openid-client';
import type { PlanSettings } from '../../compiler/plan/types.ts';
import { parseEmail } from '../authz/email.ts';
import type { SessionRecord } from '../databroker/session-store.ts';

/** Defaults of the built-in provider names (spec 2.4); `oidc` is the generic provider. */
export const PROVIDER_DEFAULTS: Readonly<Record<string, { readonly url: string | null; readonly scopes: readonly string[]; readonly switchPrompt: string }>> = {
  oidc: { url: null, scopes: ['openid', 'profile', 'email', 'offline_access'], switchPrompt: 'login' },
  // Google and Microsoft offer an account chooser (`select_account`); Google refuses `login`.
  google: { url: 'https://accounts.google.com', scopes: ['openid', 'profile', 'email'], switchPrompt: 'select_account' },
  gitlab: { url: 'https://gitlab.com', scopes: ['openid', 'profile', 'email'], switchPrompt: 'login' },
  azure: { url: 'https://login.microsoftonline.com/common/v2.0', scopes: ['openid', 'profile', 'email', 'offline_access'], switchPrompt: 'select_account' },
  okta: { url: null, scopes: ['openid', 'profile', 'email', 'groups', 'offline_access'], switchPrompt: 'login' },
  github: { url: null, scopes: ['openid', 'profile', 'email'], switchPrompt: 'login' },
};

/** Why the identity provider could not be used; shown to the user as a 502 with this code. */
export class IdentityProviderError extends Error {
  constructor(
    readonly code: 'SVC_ERR_IDP_UNAVAILABLE' | 'SVC_ERR_IDP_CONFIG' | 'SVC_ERR_IDP_CALLBACK' | 'SVC_ERR_IDP_REFRESH',
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'IdentityProviderError';
  }
}

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

export class IdentityProvider {
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
      this.#config = oidc.discovery(issuer, clientId, this.#clientSecret, undefined, { execute, timeout: 10 }).catch((e: unknown) => {
        this.#config = undefined;
        throw new IdentityProviderError('SVC_ERR_IDP_UNAVAILABLE', `discovery at ${url} failed: ${(e as Error).message}`, { cause: e });
      });
    }
    return this.#config;
  }

  /** Fresh `state`, `nonce` and PKCE verifier for one sign-in (CSPRNG, SECURITY.md S31). */
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

  /** Refreshes a session's tokens; rejects (`SVC_ERR_IDP_REFRESH`) when the provider refuses. */
  async refresh(refreshToken: string, previous: SignedInUser, nowMs: number): Promise<SignedInUser> {
    const config = await this.config();
    let tokens: Awaited<ReturnType<typeof oidc.refreshTokenGrant>>;
    try {
      tokens = await oidc.refreshTokenGrant(config, refreshToken);
    } catch (e) {
      throw new IdentityProviderError('SVC_ERR_IDP_REFRESH', `refresh refused: ${(e as Error).message}`, { cause: e });
    }
    const user = this.#user(tokens, previous, nowMs);
    // The subject of a session never changes (OpenID Connect Core 12.2).
    if (user.userId !== previous.userId) throw new IdentityProviderError('SVC_ERR_IDP_REFRESH', 'refresh returned another subject');
    return { ...user, ...(user.refreshToken === undefined ? { refreshToken } : {}) };
  }

  /** The provider's end-session URL, when it has one (spec: sign-out calls it). */
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
    const g = claims['groups'];
    const groups = Array.isArray(g) ? g.filter((x): x is string => typeof x === 'string') : typeof g === 'string' ? [g] : [];
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
 * "Emails"): the `email` claim when it is an address (runtime/authz/email.ts; kept with its domain
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
