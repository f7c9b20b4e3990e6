/**
 * Sign-in with GitHub (`idp_provider: github`; docs/authentication.md "GitHub"): GitHub speaks
 * OAuth 2.0 without OpenID Connect, so there is no discovery document and no ID token. The code
 * flow (`state`, PKCE S256, which GitHub accepts) ends with an access token; the user is then read
 * from GitHub's REST API:
 *
 * - `GET /user`: the subject is the account's numeric `id` (immutable: a login can be renamed and
 *   then taken by someone else); `login`, `name` and `avatar_url` become claims;
 * - `GET /user/emails`: the primary address, only when GitHub marks it verified (never an
 *   unverified one: docs/security.md S53);
 * - `GET /user/teams` (every page, `Link: rel="next"`): the user's teams as groups, each
 *   `<organization login>/<team slug>`, lower-case. A slug is unique only within its organization,
 *   so the organization is part of the name: a team called `admins` in any other organization the
 *   user belongs to never matches `groups has "acme/admins"`.
 *
 * `idp_provider_url` selects GitHub Enterprise Server (`https://HOST`: OAuth at `https://HOST/login/oauth/…`,
 * the API at `https://HOST/api/v3`); the default is github.com (API `https://api.github.com`).
 * An OAuth app's token does not expire and has no refresh token: the identity manager reads the
 * user again with it (`userInfo`) every `idp_refresh_directory_interval`, so a removed team or a
 * revoked token is seen there; a GitHub App's expiring token is refreshed with its refresh token.
 * Sign-out ends svc's session only: GitHub has no end-session endpoint.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { PlanSettings } from '../../compiler/plan/types.ts';
import { IdentityProviderError, type SignedInUser, type SignInChecks, type SignInProvider } from './idp.ts';
import { parseEmail } from '../policy/email.ts';

/** github.com's OAuth origin and API. */
const GITHUB_COM = 'https://github.com';
const GITHUB_COM_API = 'https://api.github.com';
/** The scopes svc asks for: the profile, the e-mail addresses, the organizations' teams. */
const DEFAULT_SCOPES = ['read:user', 'user:email', 'read:org'];
/** The most pages of teams read for one user (100 per page). */
const MAX_TEAM_PAGES = 50;
const REQUEST_TIMEOUT_MS = 10_000;

/** What svc reads of `GET /user`. */
interface GitHubUser {
  readonly id: number;
  readonly login: string;
  readonly name?: string | null;
  readonly avatar_url?: string;
}

export class GitHubProvider implements SignInProvider {
  readonly #settings: PlanSettings['idp'];
  readonly #clientSecret: string;
  readonly #callbackUrl: string;
  readonly #origin: string;
  readonly #api: string;

  constructor(settings: PlanSettings['idp'], clientSecret: string, callbackUrl: string) {
    this.#settings = settings;
    this.#clientSecret = clientSecret;
    this.#callbackUrl = callbackUrl;
    const base = (settings.providerUrl ?? GITHUB_COM).replace(/\/+$/, '');
    this.#origin = base;
    this.#api = new URL(base).host === 'github.com' ? GITHUB_COM_API : `${base}/api/v3`;
  }

  get providerUrl(): string {
    return this.#origin;
  }

  /** An OAuth app's token has no expiry: refused, it was revoked (the identity manager ends the session). */
  readonly unexpiringTokens = true;

  newChecks(): SignInChecks {
    return { state: randomBytes(32).toString('base64url'), nonce: randomBytes(32).toString('base64url'), verifier: randomBytes(32).toString('base64url') };
  }

  async authorizationUrl(checks: SignInChecks, switchUser = false): Promise<string> {
    const clientId = this.#settings.clientId;
    if (clientId === null) throw new IdentityProviderError('SVC_ERR_IDP_CONFIG', 'no identity provider client id is configured');
    const url = new URL(`${this.#origin}/login/oauth/authorize`);
    const scopes = this.#settings.scopes.length > 0 ? this.#settings.scopes : DEFAULT_SCOPES;
    const params: Record<string, string> = {
      ...this.#settings.requestParams,
      client_id: clientId,
      redirect_uri: this.#callbackUrl,
      scope: scopes.join(' '),
      state: checks.state,
      code_challenge: createHash('sha256').update(checks.verifier).digest('base64url'),
      code_challenge_method: 'S256',
      // GitHub's account picker.
      ...(switchUser ? { prompt: 'select_account' } : {}),
    };
    for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
    return url.href;
  }

  async callback(query: string, checks: SignInChecks, nowMs: number): Promise<SignedInUser> {
    const params = new URLSearchParams(query);
    if (params.get('state') !== checks.state) throw new IdentityProviderError('SVC_ERR_IDP_CALLBACK', 'the sign-in could not be completed: `state` does not match');
    const error = params.get('error');
    if (error !== null) throw new IdentityProviderError('SVC_ERR_IDP_CALLBACK', `the sign-in could not be completed: GitHub answered ${error}${params.get('error_description') ? `: ${params.get('error_description')}` : ''}`);
    const code = params.get('code');
    if (code === null || code === '') throw new IdentityProviderError('SVC_ERR_IDP_CALLBACK', 'the sign-in could not be completed: no `code`');
    const tokens = await this.#token({ grant_type: 'authorization_code', code, redirect_uri: this.#callbackUrl, code_verifier: checks.verifier }, 'SVC_ERR_IDP_CALLBACK');
    return this.#read(tokens, nowMs, undefined, 'SVC_ERR_IDP_CALLBACK');
  }

  async refresh(refreshToken: string, previous: SignedInUser, nowMs: number, signal?: AbortSignal): Promise<SignedInUser> {
    const tokens = await this.#token({ grant_type: 'refresh_token', refresh_token: refreshToken }, 'SVC_ERR_IDP_REFRESH', signal);
    const user = await this.#read(tokens, nowMs, signal, 'SVC_ERR_IDP_REFRESH');
    if (user.userId !== previous.userId) throw new IdentityProviderError('SVC_ERR_IDP_REFRESH', 'refresh returned another subject');
    return { ...user, ...(user.refreshToken === undefined ? { refreshToken } : {}) };
  }

  async hasUserInfo(): Promise<boolean> {
    return true;
  }

  /** The user as GitHub describes them now (teams, verified e-mail), with the session's token; tokens and subject stay. */
  async userInfo(accessToken: string, previous: SignedInUser, signal?: AbortSignal): Promise<SignedInUser> {
    const fresh = await this.#read({ access_token: accessToken }, Date.now(), signal, 'SVC_ERR_IDP_USERINFO');
    if (fresh.userId !== previous.userId) throw new IdentityProviderError('SVC_ERR_IDP_USERINFO', 'GitHub answered for another user');
    const { email: _old, ...rest } = previous;
    return { ...rest, ...(fresh.email !== undefined ? { email: fresh.email } : {}), claims: fresh.claims, groups: fresh.groups };
  }

  async endSessionUrl(): Promise<string | undefined> {
    return undefined;
  }

  /** One token request (`Accept: application/json`); an OAuth error is `refused`, anything else an outage. */
  async #token(form: Record<string, string>, refused: 'SVC_ERR_IDP_CALLBACK' | 'SVC_ERR_IDP_REFRESH', signal?: AbortSignal): Promise<TokenAnswer> {
    const clientId = this.#settings.clientId;
    if (clientId === null) throw new IdentityProviderError('SVC_ERR_IDP_CONFIG', 'no identity provider client id is configured');
    const body = new URLSearchParams({ ...form, client_id: clientId, client_secret: this.#clientSecret });
    const res = await this.#fetch(`${this.#origin}/login/oauth/access_token`, { method: 'POST', headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' }, body }, signal, 'the token endpoint');
    let answer: Record<string, unknown>;
    try {
      answer = (await res.json()) as Record<string, unknown>;
    } catch (e) {
      throw new IdentityProviderError('SVC_ERR_IDP_UNAVAILABLE', `the token endpoint answered ${res.status} without JSON`, { cause: e });
    }
    // GitHub answers an OAuth error with 200 and an `error` field.
    if (typeof answer['error'] === 'string') throw new IdentityProviderError(refused, `GitHub refused the ${form['grant_type']} grant: ${answer['error']}`);
    if (!res.ok) throw new IdentityProviderError('SVC_ERR_IDP_UNAVAILABLE', `the token endpoint answered ${res.status}`);
    if (typeof answer['access_token'] !== 'string' || answer['access_token'] === '') throw new IdentityProviderError(refused, 'GitHub answered without an access token');
    return answer as unknown as TokenAnswer;
  }

  /** The user behind `tokens.access_token`: `/user`, `/user/emails`, every page of `/user/teams`. */
  async #read(tokens: TokenAnswer, nowMs: number, signal: AbortSignal | undefined, refused: 'SVC_ERR_IDP_CALLBACK' | 'SVC_ERR_IDP_REFRESH' | 'SVC_ERR_IDP_USERINFO'): Promise<SignedInUser> {
    const auth = { authorization: `Bearer ${tokens.access_token}`, accept: 'application/vnd.github+json', 'x-github-api-version': '2022-11-28' };
    const get = async (path: string): Promise<{ body: unknown; next: string | null }> => {
      const res = await this.#fetch(path.startsWith('http') ? path : `${this.#api}${path}`, { headers: auth }, signal, `GitHub's API (${path.startsWith('http') ? new URL(path).pathname : path})`);
      if (res.status === 401) throw new IdentityProviderError(refused, 'GitHub refused the access token (revoked or expired)');
      if (res.status === 403 && res.headers.get('x-ratelimit-remaining') !== '0') throw new IdentityProviderError(refused, `GitHub refused ${path}: missing scope? (asked: ${DEFAULT_SCOPES.join(' ')})`);
      if (!res.ok) throw new IdentityProviderError('SVC_ERR_IDP_UNAVAILABLE', `GitHub's API answered ${res.status} for ${path}`, retryOf(res));
      return { body: await res.json(), next: nextLink(res.headers.get('link')) };
    };
    const user = (await get('/user')).body as GitHubUser;
    if (typeof user?.id !== 'number' || typeof user.login !== 'string') throw new IdentityProviderError(refused, 'GitHub answered /user without an id and login');
    const emails = (await get('/user/emails')).body;
    const primary = Array.isArray(emails) ? (emails as { email?: unknown; primary?: unknown; verified?: unknown }[]).find((e) => e.primary === true && e.verified === true && typeof e.email === 'string') : undefined;
    const email = primary ? parseEmail(primary.email as string)?.address : undefined;
    const groups = new Set<string>();
    let page: string | null = '/user/teams?per_page=100';
    for (let n = 0; page !== null && n < MAX_TEAM_PAGES; n++) {
      const r = await get(page);
      for (const t of Array.isArray(r.body) ? (r.body as { slug?: unknown; organization?: { login?: unknown } }[]) : []) {
        if (typeof t.slug === 'string' && typeof t.organization?.login === 'string') groups.add(`${t.organization.login}/${t.slug}`.toLowerCase());
      }
      page = r.next;
    }
    const teams = [...groups].sort();
    // The teams are also the `groups` claim, as an OpenID provider's would be: a directory sync
    // merges its groups with this claim (runtime/sessions/directory/record.ts).
    const claims: Record<string, unknown> = { sub: String(user.id), login: user.login, ...(user.name ? { name: user.name } : {}), ...(user.avatar_url ? { picture: user.avatar_url } : {}), ...(email !== undefined ? { email, email_verified: true } : {}), groups: teams };
    const expiresIn = typeof tokens.expires_in === 'number' ? tokens.expires_in : undefined;
    return {
      userId: String(user.id),
      ...(email !== undefined ? { email } : {}),
      groups: teams,
      claims,
      accessToken: tokens.access_token,
      ...(typeof tokens.refresh_token === 'string' ? { refreshToken: tokens.refresh_token } : {}),
      ...(expiresIn !== undefined ? { accessTokenExpiresAtMs: nowMs + expiresIn * 1000 } : {}),
    };
  }

  async #fetch(url: string, init: RequestInit, signal: AbortSignal | undefined, what: string): Promise<Response> {
    const timeout = AbortSignal.timeout(REQUEST_TIMEOUT_MS);
    try {
      return await fetch(url, { ...init, redirect: 'error', signal: signal ? AbortSignal.any([signal, timeout]) : timeout });
    } catch (e) {
      throw new IdentityProviderError('SVC_ERR_IDP_UNAVAILABLE', `${what} could not be reached: ${(e as Error).message}`, { cause: e });
    }
  }
}

interface TokenAnswer {
  readonly access_token: string;
  readonly refresh_token?: string;
  readonly expires_in?: number;
}

/** The `rel="next"` URL of a `Link` header, or null. */
function nextLink(link: string | null): string | null {
  if (link === null) return null;
  for (const part of link.split(',')) {
    const m = /<([^>]+)>\s*;\s*rel="?next"?/.exec(part);
    if (m) return m[1]!;
  }
  return null;
}

/** The wait GitHub asks for on a rate limit (`Retry-After`, else `x-ratelimit-reset`), for the back-off. */
function retryOf(res: Response): { retryAfterMs?: number } {
  const after = Number(res.headers.get('retry-after'));
  if (Number.isFinite(after) && after > 0) return { retryAfterMs: after * 1000 };
  const reset = Number(res.headers.get('x-ratelimit-reset'));
  if (Number.isFinite(reset) && reset > 0) return { retryAfterMs: Math.max(0, reset * 1000 - Date.now()) };
  return {};
}
