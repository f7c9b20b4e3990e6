/**
 * What authentication needs from one plan generation, built once per generation (never per
 * request): the resolved secrets and the keys derived from them, the identity provider, the
 * assertion signer, the origins a user may be sent back to, and the cookie settings.
 *
 * Secrets are read and checked here (runtime/plan/secrets.ts); a secret that is missing or changed
 * since compile makes the build throw, so a reload keeps the old plan and a start fails loudly.
 */
import type { PlanBody, Route, Secret } from '../../compiler/plan/types.ts';
import { resolvePem, resolveSecret, resolveSecretText } from '../plan/secrets.ts';
import { AssertionSigner } from './assertion.ts';
import { directorySource } from '../sessions/identity-manager.ts';
import { IdentityProvider, type SignInProvider } from '../sessions/idp.ts';
import { GitHubProvider } from '../sessions/github.ts';
import { hostCookieName } from './cookies.ts';
import { deriveKey } from '../core/keys.ts';
import type { RedirectPolicy } from './redirect-target.ts';
import { loadSigningKey, type SigningKey } from './signing-key.ts';
import { ServerlessTokens, tokenSourceOf } from './serverless-token.ts';

export interface AuthState {
  readonly body: PlanBody;
  /** `cookie_secret` bytes, or null when this svc has none (no sessions: everyone is anonymous). */
  readonly cookieSecret: Buffer | null;
  readonly cookie: PlanBody['settings']['cookie'];
  /** Keys per purpose (runtime/core/keys.ts); absent without `cookie_secret`. */
  readonly keys: {
    /** Signs internal redirect parameters (signed-params.ts): `shared_secret`, else `cookie_secret`. */
    readonly params: Buffer;
    readonly flow: Uint8Array;
    readonly handoff: Uint8Array;
    readonly programmatic: Uint8Array;
    readonly csrf: Uint8Array;
  } | null;
  /** Null without an identity provider configured (a proxy-only service). */
  readonly idp: SignInProvider | null;
  /** What the identity provider client was made from: a later plan with the same key reuses it. */
  readonly idpKey: string | null;
  readonly signingKey: SigningKey;
  readonly signer: AssertionSigner;
  /** The authenticate service's origin and host (`authenticate_service_url`), or null. */
  readonly authenticateOrigin: string | null;
  readonly authenticateHost: string | null;
  /**
   * The session cookie's name on the authenticate host: `__Host-{cookie_name}` when cookies are
   * `Secure`, which no sibling subdomain can plant (a browser takes a `__Host-` cookie only when it is
   * Secure, host-only and `Path=/`); else `cookie_name`, which a sibling can plant, so a sign-in
   * bound for a route never adopts it (runtime/authn/service.ts, docs/authentication.md).
   */
  readonly authenticateCookieName: string;
  /** True when {@link authenticateCookieName} cannot be planted from a sibling domain (`__Host-`). */
  readonly authenticateCookieUnplantable: boolean;
  /** `authenticate_service_url` + `authenticate_callback_path`. */
  readonly callbackUrl: string | null;
  /** Origins of svc's routes and its authenticate service: the only places a user is sent back to. */
  readonly redirects: RedirectPolicy;
  /** Canonical route hosts (`name`, or `name:port` off the default port) that take sign-in hand-offs. */
  readonly routeHosts: ReadonlySet<string>;
  /**
   * `host:port` of every `tcp+https` route (the CONNECT authority, as `PlanIndex.tcpHosts` keys it):
   * programmatic login for a tunnel is asked for with this as the `Host`.
   */
  readonly tcpRouteHosts: ReadonlySet<string>;
  /** Resolved `orchestrator_service_account_token` per route index. */
  readonly orchestratorTokens: ReadonlyMap<number, string>;
  /** `jwt_claims_headers` as (lower-case header, claim) pairs, as `PlanIndex.claimHeaders` holds them. */
  readonly claimHeaders: readonly (readonly [string, string])[];
  /**
   * ID tokens for the routes with `enable_hostedcloud_serverless_authentication` (serverless-token.ts);
   * null when no route has it. Taken over from the previous generation while its source is the same,
   * so a reload keeps the tokens cached.
   */
  readonly serverless: ServerlessTokens | null;
  /** What `serverless` was made from (the key file's text, or the ambient variables). */
  readonly serverlessKey: string | null;
  /** The ID token's audience per serverless route index: `https://<to host>`. */
  readonly serverlessAudiences: ReadonlyMap<number, string>;
}

/**
 * Builds the authentication state of a plan; the assertion signer (with its cache) and the identity
 * provider client are taken over from `previous` while their inputs are unchanged. Without
 * `signing_key`, `ephemeralKey` gives the process's key (one per svc, shared by cluster workers:
 * runtime/process/cluster.ts). Throws `SecretError` or `SigningKeyError`.
 */
export function buildAuthState(
  body: PlanBody,
  scheme: 'http' | 'https',
  previous: AuthState | undefined,
  ephemeralKey: () => SigningKey,
  env: NodeJS.ProcessEnv = process.env,
  log?: (entry: Record<string, unknown>) => void,
): AuthState {
  const s = body.settings;
  const cookieSecret = s.cookie.secret ? secretBytes(s.cookie.secret, 'cookie_secret') : null;
  const shared = s.mode.sharedSecret ? secretBytes(s.mode.sharedSecret, 'shared_secret') : null;
  const keys =
    cookieSecret === null
      ? null
      : {
          params: shared ?? cookieSecret,
          flow: deriveKey(cookieSecret, 'sign-in flow'),
          handoff: deriveKey(shared ?? cookieSecret, 'hand-off'),
          programmatic: deriveKey(shared ?? cookieSecret, 'programmatic token'),
          csrf: deriveKey(cookieSecret, 'csrf'),
        };

  const signingKey = s.identity.signingKey ? loadSigningKey(resolvePem(s.identity.signingKey, 'signing_key')) : ephemeralKey();
  const signer = previous?.signingKey.kid === signingKey.kid ? previous.signer : new AssertionSigner(signingKey);

  const serviceUrl = s.authenticate.serviceUrl;
  const auth = serviceUrl === null ? null : new URL(serviceUrl);
  const callbackUrl = auth === null ? null : `${auth.origin}${s.authenticate.callbackPath}`;
  let idp: SignInProvider | null = null;
  let idpKey: string | null = null;
  if (callbackUrl !== null && s.idp.clientId !== null && (s.idp.provider !== null || s.idp.providerUrl !== null)) {
    const clientSecret = s.idp.clientSecret ? resolveSecretText(s.idp.clientSecret, 'idp_client_secret') : '';
    idpKey = JSON.stringify([s.idp, clientSecret.length, s.idp.clientSecret?.fingerprint ?? null, callbackUrl]);
    idp = previous?.idp && previous.idpKey === idpKey ? previous.idp : s.idp.provider === 'github' ? new GitHubProvider(s.idp, clientSecret, callbackUrl) : new IdentityProvider(s.idp, clientSecret, callbackUrl);
  }
  // `idp_service_account` is read and checked with the plan, as the client secret is: one missing or
  // changed since the plan was compiled refuses the generation (at start and on reload) rather than
  // failing every directory read (docs/authentication.md "Groups from the directory").
  const directory = directorySource(s.idp);
  if (directory !== null && 'error' in directory) throw directory.cause instanceof Error ? directory.cause : new Error(directory.error);

  // Browsing without TLS (plain-HTTP listener, cookies not Secure) also allows http:// origins.
  const allowHttp = scheme === 'http' && !s.cookie.secure;
  const origins = new Set<string>();
  const routeHosts = new Set<string>();
  const tcpRouteHosts = new Set<string>();
  for (const r of body.routes) {
    if (r.from.scheme === 'tcp+https' && r.from.port !== null) tcpRouteHosts.add(`${r.from.host}:${r.from.port}`);
    if (r.from.scheme !== 'https') continue;
    const host = r.from.port === null || r.from.port === 443 ? r.from.host : `${r.from.host}:${r.from.port}`;
    routeHosts.add(host);
    origins.add(`https://${host}`);
    if (allowHttp) origins.add(`http://${host}`);
  }
  if (auth) origins.add(auth.origin);

  const orchestratorTokens = new Map<number, string>();
  for (const r of body.routes) if (r.orchestratorServiceAccountToken) orchestratorTokens.set(r.index, orchestratorToken(r));
  const { serverless, serverlessKey, serverlessAudiences } = serverlessState(body, previous, env, log);

  return {
    body,
    cookieSecret,
    cookie: s.cookie,
    keys,
    idp,
    idpKey,
    signingKey,
    signer,
    authenticateOrigin: auth?.origin ?? null,
    authenticateCookieName: hostCookieName(s.cookie.name, s.cookie.secure),
    authenticateCookieUnplantable: s.cookie.secure,
    authenticateHost: auth === null ? null : auth.port === '' ? auth.hostname.toLowerCase() : `${auth.hostname.toLowerCase()}:${auth.port}`,
    callbackUrl,
    redirects: { allowedOrigins: origins, allowHttp },
    routeHosts,
    tcpRouteHosts,
    orchestratorTokens,
    claimHeaders: Object.entries(s.identity.claimHeaders).map(([h, c]) => [h.toLowerCase(), c] as const),
    serverless,
    serverlessKey,
    serverlessAudiences,
  };
}

/**
 * The serverless ID-token source of a plan (serverless-token.ts), when a route asks for one: the
 * key file of `hostedcloud_serverless_authentication_service_account`, else with `idp_provider:
 * google` the key file of `idp_service_account`, else ambient credentials. Throws when a key file
 * cannot be used, so the plan is refused.
 */
function serverlessState(body: PlanBody, previous: AuthState | undefined, env: NodeJS.ProcessEnv, log: ((entry: Record<string, unknown>) => void) | undefined): Pick<AuthState, 'serverless' | 'serverlessKey' | 'serverlessAudiences'> {
  const audiences = new Map<number, string>();
  for (const r of body.routes) {
    if (!r.hostedcloudServerlessAuthentication || r.action.kind !== 'forward') continue;
    audiences.set(r.index, `https://${r.action.upstreams[0]!.host}`);
  }
  if (audiences.size === 0) return { serverless: null, serverlessKey: null, serverlessAudiences: audiences };
  const s = body.settings;
  const account = s.identity.hostedcloudServiceAccount ?? (s.idp.provider === 'google' ? s.idp.serviceAccount : null);
  const what = s.identity.hostedcloudServiceAccount ? 'hostedcloud_serverless_authentication_service_account' : 'idp_service_account';
  const keyJson = account ? Buffer.from(resolveSecretText(account, what).trim(), 'base64').toString('utf8') : null;
  const key = JSON.stringify([keyJson, keyJson === null ? [env['GOOGLE_APPLICATION_CREDENTIALS'] ?? null, env['GCE_METADATA_HOST'] ?? null] : null]);
  if (previous?.serverless && previous.serverlessKey === key) return { serverless: previous.serverless, serverlessKey: key, serverlessAudiences: audiences };
  return { serverless: new ServerlessTokens(tokenSourceOf(keyJson, env), Date.now, log), serverlessKey: key, serverlessAudiences: audiences };
}

function secretBytes(secret: Secret, what: string): Buffer {
  const text = resolveSecretText(secret, what).trim();
  return Buffer.from(text, 'base64');
}

function orchestratorToken(r: Route): string {
  return resolveSecret(r.orchestratorServiceAccountToken!, `route ${r.id}: orchestrator_service_account_token`).data.toString('utf8').trim();
}
