/**
 * ID tokens for serverless cloud upstreams (docs/authentication.md "Serverless upstreams"): a route
 * with `enable_hostedcloud_serverless_authentication` sends its upstream `Authorization: Bearer
 * <ID token>` whose audience is the upstream's origin, `https://<to host>`, the identity such a
 * service accepts instead of a user's.
 *
 * Where the token comes from (`tokenSourceOf`):
 * - a service-account key file (`hostedcloud_serverless_authentication_service_account`, base64 of
 *   the JSON key; with `idp_provider: google` it defaults to `idp_service_account`): a JWT signed
 *   with the key, `target_audience` set, exchanged at the key file's own `token_uri` (JWT bearer
 *   grant, RFC 7523) for an ID token. `token_uri` is the contract: private and sovereign clouds set it;
 * - else ambient credentials: the key file `GOOGLE_APPLICATION_CREDENTIALS` names, else the
 *   metadata server (`GCE_METADATA_HOST`, default `metadata.google.internal`).
 *
 * Tokens are cached per audience until `EXPIRY_MARGIN_MS` before they expire. Once a token is
 * within `REFRESH_MARGIN_MS` of that, the next request that reads it starts one refresh in the
 * background and is still served the cached token: only the first request for an audience, or
 * one after a failed refresh let the token expire, waits for the cloud.
 *
 * INVARIANT (fail-closed): without a token the request is refused (502 `serverless-token-unavailable`),
 * never forwarded without one or with the client's own `Authorization`.
 */
import { readFileSync } from 'node:fs';
import { decodeJwt, importPKCS8, SignJWT } from 'jose';
import { SvcError } from '../core/errors.ts';
import { serverlessKeyProblem } from '../../compiler/plan/serverless-account.ts';

/** The cloud could not give an ID token (unreachable, refused, or an answer without one). */
export class ServerlessTokenError extends SvcError<'SVC_ERR_SERVERLESS_TOKEN'> {
  constructor(message: string, options?: ErrorOptions) {
    super('SVC_ERR_SERVERLESS_TOKEN', message, options);
    this.name = 'ServerlessTokenError';
  }
}

/** How long before its expiry a cached token is no longer served. */
export const EXPIRY_MARGIN_MS = 60_000;
/** How long before its expiry a cached token is refreshed in the background. */
export const REFRESH_MARGIN_MS = 5 * 60_000;
/** The most a token request may take. */
const REQUEST_TIMEOUT_MS = 10_000;
/** Google's token endpoint, for a key file without `token_uri`. */
const DEFAULT_TOKEN_URI = 'https://oauth2.googleapis.com/token';

/** Gets a new ID token for an audience. */
export interface TokenSource {
  /** What the source is, for logs and errors (never a secret). */
  readonly description: string;
  fetch(audience: string): Promise<string>;
}

/** The fields of a service-account key file svc reads. */
interface ServiceAccountKey {
  readonly client_email: string;
  readonly private_key: string;
  readonly private_key_id?: string;
  readonly token_uri?: string;
}

/** Reads a service-account key file's JSON; throws `ServerlessTokenError` naming a missing field. */
export function parseServiceAccountKey(json: string, what: string): ServiceAccountKey {
  let key: unknown;
  try {
    key = JSON.parse(json);
  } catch {
    throw new ServerlessTokenError(`${what} is not a service-account key file (JSON)`);
  }
  if (typeof key !== 'object' || key === null || Array.isArray(key)) throw new ServerlessTokenError(`${what} is not a service-account key file (JSON object)`);
  // The compiler's check of the setting (SVC3046) reads the key file with the same function.
  const wrong = serverlessKeyProblem(key);
  if (wrong !== undefined) throw new ServerlessTokenError(`${what} ${wrong.problem}`);
  return key as ServiceAccountKey;
}

/** A source signing with a service-account key and exchanging at its `token_uri`. */
export function keyFileSource(key: ServiceAccountKey): TokenSource {
  const tokenUri = key.token_uri ?? DEFAULT_TOKEN_URI;
  let signingKey: ReturnType<typeof importPKCS8> | undefined;
  return {
    description: `service account ${key.client_email} at ${tokenUri}`,
    async fetch(audience) {
      signingKey ??= importPKCS8(key.private_key, 'RS256');
      let assertion: string;
      try {
        const now = Math.floor(Date.now() / 1000);
        assertion = await new SignJWT({ target_audience: audience })
          .setProtectedHeader({ alg: 'RS256', typ: 'JWT', ...(key.private_key_id ? { kid: key.private_key_id } : {}) })
          .setIssuer(key.client_email)
          .setSubject(key.client_email)
          .setAudience(tokenUri)
          .setIssuedAt(now)
          .setExpirationTime(now + 3600)
          .sign(await signingKey);
      } catch (e) {
        signingKey = undefined;
        throw new ServerlessTokenError(`the service account's private_key cannot sign: ${(e as Error).message}`, { cause: e });
      }
      const body = new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion });
      const answer = await call(tokenUri, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' }, body });
      let token: unknown;
      try {
        token = (JSON.parse(answer) as Record<string, unknown>)['id_token'];
      } catch {
        throw new ServerlessTokenError(`${tokenUri} answered with no JSON`);
      }
      if (typeof token !== 'string' || token === '') throw new ServerlessTokenError(`${tokenUri} answered with no id_token`);
      return token;
    },
  };
}

/** A source asking the metadata server of the machine svc runs on. */
export function metadataSource(host: string): TokenSource {
  const base = `http://${host}/computeMetadata/v1/instance/service-accounts/default/identity`;
  return {
    description: `the metadata server at ${host}`,
    async fetch(audience) {
      const token = (await call(`${base}?audience=${encodeURIComponent(audience)}&format=full`, { headers: { 'metadata-flavor': 'Google' } })).trim();
      if (token === '') throw new ServerlessTokenError(`the metadata server at ${host} answered with no token`);
      return token;
    },
  };
}

/**
 * The token source of a plan: the service-account key file's JSON text when given, else ambient
 * credentials read from `env` (see the file comment). Throws `ServerlessTokenError` for a key file
 * that cannot be used.
 */
export function tokenSourceOf(keyJson: string | null, env: NodeJS.ProcessEnv): TokenSource {
  if (keyJson !== null) return keyFileSource(parseServiceAccountKey(keyJson, 'hostedcloud_serverless_authentication_service_account'));
  const file = env['GOOGLE_APPLICATION_CREDENTIALS'];
  if (file !== undefined && file !== '') {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (e) {
      throw new ServerlessTokenError(`GOOGLE_APPLICATION_CREDENTIALS: cannot read ${file}: ${(e as Error).message}`, { cause: e });
    }
    return keyFileSource(parseServiceAccountKey(text, `GOOGLE_APPLICATION_CREDENTIALS (${file})`));
  }
  return metadataSource(env['GCE_METADATA_HOST'] || 'metadata.google.internal');
}

/** ID tokens per audience, cached and refreshed as the file comment says. */
export class ServerlessTokens {
  readonly #cache = new Map<string, { readonly token: string; readonly expiresAtMs: number }>();
  readonly #pending = new Map<string, Promise<string>>();

  constructor(
    readonly source: TokenSource,
    private readonly now: () => number = Date.now,
    private readonly log?: (entry: Record<string, unknown>) => void,
  ) {}

  /** The token for `audience`: a string when a fresh one is cached (the common request), else a promise; rejects with `ServerlessTokenError`. */
  token(audience: string): string | Promise<string> {
    const cached = this.#cache.get(audience);
    const now = this.now();
    if (cached !== undefined && now < cached.expiresAtMs - EXPIRY_MARGIN_MS) {
      if (now >= cached.expiresAtMs - REFRESH_MARGIN_MS && !this.#pending.has(audience)) {
        // Served the cached token; the refresh runs beside it, and a failure keeps the cached one.
        this.#refresh(audience).catch((e: unknown) => this.log?.({ level: 'warn', msg: 'serverless ID token: background refresh failed; serving the cached token', audience, error: (e as Error).message }));
      }
      return cached.token;
    }
    return this.#pending.get(audience) ?? this.#refresh(audience);
  }

  #refresh(audience: string): Promise<string> {
    const p = this.source
      .fetch(audience)
      .then((token) => {
        this.#cache.set(audience, { token, expiresAtMs: expiryOf(token) });
        return token;
      })
      .catch((e: unknown) => {
        throw e instanceof ServerlessTokenError ? e : new ServerlessTokenError(`${this.source.description}: ${(e as Error).message}`, { cause: e });
      })
      .finally(() => this.#pending.delete(audience));
    this.#pending.set(audience, p);
    return p;
  }
}

/** When an ID token expires (its `exp`), in ms; throws `ServerlessTokenError` when it has none. */
function expiryOf(token: string): number {
  let exp: unknown;
  try {
    exp = decodeJwt(token).exp;
  } catch (e) {
    throw new ServerlessTokenError('the ID token the cloud answered is not a JWT', { cause: e });
  }
  if (typeof exp !== 'number') throw new ServerlessTokenError('the ID token the cloud answered has no `exp`');
  return exp * 1000;
}

/** One HTTP request to the cloud, its body as text; a failure or a non-2xx answer is `ServerlessTokenError`. */
async function call(url: string, init: RequestInit): Promise<string> {
  let res: Response;
  try {
    res = await fetch(url, { ...init, redirect: 'error', signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  } catch (e) {
    throw new ServerlessTokenError(`${new URL(url).origin} cannot be reached: ${(e as Error).message}`, { cause: e });
  }
  const text = await res.text().catch(() => '');
  if (!res.ok) throw new ServerlessTokenError(`${new URL(url).origin} answered ${res.status}${text ? `: ${text.slice(0, 200)}` : ''}`);
  return text;
}
