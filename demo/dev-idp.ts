/**
 * svc dev identity provider — FOR LOCAL DEVELOPMENT AND TESTS ONLY.
 *
 * A small OpenID Provider built on the real `oidc-provider` 9 library (no hand-written protocol code).
 * It serves plain HTTP on a loopback address, keeps everything in memory, signs tokens with a key generated
 * at process start, uses a fixed cookie key and lets every demo user sign in with the well-known password
 * `DEV_PASSWORD`. Never expose it beyond the local machine, never use it in production.
 *
 * What it offers:
 * - authorization code flow with PKCE (S256, required for every client), `state` and `nonce`;
 * - confidential clients authenticating with `client_secret_basic` or `client_secret_post`;
 * - scopes `openid profile email offline_access groups`; the ID token itself carries `email`,
 *   `email_verified`, `name` and `groups` (`profile` includes `groups`), the userinfo endpoint works too;
 * - refresh tokens on every authorization_code exchange (no `prompt=consent` needed), refresh_token grant;
 * - RP-initiated logout whose confirmation page submits itself;
 * - a minimal login page (`/interaction/:uid`) and automatic consent.
 *
 * `startDevIdp()` is what `npm start` (demo/start.ts) and the tests use. Run as a program it serves one
 * client given on the command line (`--client-id`, `--client-secret`, `--redirect-uri`; `--help`):
 * docs/dev-idp.md. A bad option is an error line and exit code 2.
 */
import * as crypto from 'node:crypto';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';

import type {
  Account,
  Adapter,
  AdapterPayload,
  Configuration,
  JWK,
  KoaContextWithOIDC,
} from 'oidc-provider';
import type OidcProvider from 'oidc-provider';
import { escapeHtml } from '../runtime/authn/error-page.ts';
import { isMainModule } from './main-module.ts';

export interface DevUser {
  readonly id: string;
  readonly email: string;
  readonly name: string;
  readonly groups: readonly string[];
  /** The `email_verified` claim: default true; null leaves the claim out (test/security/email-claim.test.ts, docs/authentication.md). */
  readonly emailVerified?: boolean | null;
}

export const DEMO_USERS: readonly DevUser[] = Object.freeze([
  Object.freeze({ id: 'alice', email: 'alice@example.com', name: 'Alice Example', groups: Object.freeze(['admins', 'staff']) }),
  Object.freeze({ id: 'bob', email: 'bob@other.example', name: 'Bob Other', groups: Object.freeze(['guests']) }),
]);

/** Every dev user signs in with this password. Local development and tests only. */
export const DEV_PASSWORD = 'demo';

export interface DevClient {
  readonly clientId: string;
  readonly clientSecret: string;
  readonly redirectUris: readonly string[];
  readonly postLogoutRedirectUris: readonly string[];
}

export interface DevIdpOptions {
  /** Loopback address to listen on; default 127.0.0.1. */
  readonly host?: string;
  /** Default 0: a random free port. */
  readonly port?: number;
  readonly clients: readonly DevClient[];
  /** Default DEMO_USERS. */
  readonly users?: readonly DevUser[];
  /** Lifetime of access tokens and ID tokens; default 3600. */
  readonly accessTokenTtlSeconds?: number;
  /** Receives oidc-provider notices and server errors; without it they are dropped. */
  readonly log?: (line: string) => void;
}

export interface DevIdp {
  /** `http://<host>:<port>`, no trailing slash. */
  readonly issuer: string;
  readonly port: number;
  close(): Promise<void>;
  /** Revokes every grant (and so every refresh token) of a user: later refreshes fail with invalid_grant. */
  revokeUser(userId: string): Promise<void>;
  /** Number of successful token endpoint calls per grant type, for tests (e.g. refresh_token count). */
  readonly tokenCalls: Readonly<Record<string, number>>;
  /** Requests received per path (`/token`, `/me` for userinfo, …), answered or not, for tests. */
  readonly requests: Readonly<Record<string, number>>;
  /** Changes a user's claims from now on (the next token, refresh or userinfo answer), e.g. their groups. */
  updateUser(userId: string, changes: Partial<Omit<DevUser, 'id'>>): void;
  /**
   * Simulates an outage: while set, every request is answered with this status (e.g. 503), or never
   * answered (`'hang'`) until the client gives up; null ends it.
   */
  setOutage(status: number | 'hang' | null): void;
  /** Requests that were hanging (`setOutage('hang')`) when their client closed the connection. */
  readonly abandoned: number;
}

const PAGE_TITLE = 'svc dev identity provider — local use only';
/** Fixed cookie signing key: this provider is for local use only. */
const DEV_COOKIE_KEYS = ['svc-dev-idp-cookie-key-local-use-only'];
const MAX_FORM_BYTES = 64 * 1024;

type ProviderModule = typeof import('oidc-provider');

let providerModule: Promise<ProviderModule> | undefined;

/**
 * oidc-provider prints notices straight to the console (for instance an "unsupported runtime" notice on a Node
 * line it does not prefer). Load it once with those lines routed to `log` (or dropped).
 */
function loadProvider(log: ((line: string) => void) | undefined): Promise<ProviderModule> {
  if (providerModule === undefined) {
    const { warn, info } = console;
    const filter = (original: (...args: unknown[]) => void) => (...args: unknown[]): void => {
      const first = args[0];
      if (typeof first === 'string' && first.includes('oidc-provider')) {
        log?.(first);
        return;
      }
      original.apply(console, args);
    };
    console.warn = filter(warn);
    console.info = filter(info);
    providerModule = import('oidc-provider').finally(() => {
      console.warn = warn;
      console.info = info;
    });
  }
  return providerModule;
}

let signingKey: JWK | undefined;

/** One RSA signing key per process (generated lazily; the dev IdP never persists keys). */
function devSigningKey(): JWK {
  if (signingKey === undefined) {
    const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
    const jwk = privateKey.export({ format: 'jwk' }) as JWK;
    signingKey = { ...jwk, kid: `dev-${crypto.randomBytes(6).toString('hex')}`, use: 'sig', alg: 'RS256' };
  }
  return signingKey;
}

// ---------------------------------------------------------------------------------------------------------------
// Storage: a small Map-based adapter so that revokeUser can find a user's records.

interface StoredRecord {
  readonly model: string;
  readonly payload: AdapterPayload;
  readonly expiresAt: number | undefined;
}

/** Matches oidc-provider's default clock tolerance, like its own in-memory adapter does. */
const STORAGE_GRACE_SECONDS = 15;

class DevStore {
  readonly records = new Map<string, StoredRecord>();

  get(key: string): StoredRecord | undefined {
    const record = this.records.get(key);
    if (record !== undefined && record.expiresAt !== undefined && record.expiresAt <= Date.now()) {
      this.records.delete(key);
      return undefined;
    }
    return record;
  }

  findWhere(model: string, predicate: (payload: AdapterPayload) => boolean): AdapterPayload | undefined {
    for (const [key, record] of this.records) {
      if (record.model === model && predicate(record.payload)) {
        return this.get(key)?.payload;
      }
    }
    return undefined;
  }

  deleteWhere(predicate: (record: StoredRecord) => boolean): number {
    let deleted = 0;
    for (const [key, record] of [...this.records]) {
      if (predicate(record)) {
        this.records.delete(key);
        deleted += 1;
      }
    }
    return deleted;
  }
}

class DevAdapter implements Adapter {
  constructor(
    private readonly model: string,
    private readonly store: DevStore,
  ) {}

  private key(id: string): string {
    return `${this.model}:${id}`;
  }

  async upsert(id: string, payload: AdapterPayload, expiresIn?: number): Promise<void> {
    const expiresAt = typeof expiresIn === 'number' ? Date.now() + (expiresIn + STORAGE_GRACE_SECONDS) * 1000 : undefined;
    this.store.records.set(this.key(id), { model: this.model, payload, expiresAt });
  }

  async find(id: string): Promise<AdapterPayload | undefined> {
    return this.store.get(this.key(id))?.payload;
  }

  async findByUid(uid: string): Promise<AdapterPayload | undefined> {
    return this.store.findWhere(this.model, (payload) => (payload as { uid?: unknown }).uid === uid);
  }

  async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
    return this.store.findWhere(this.model, (payload) => (payload as { userCode?: unknown }).userCode === userCode);
  }

  async consume(id: string): Promise<void> {
    const record = this.store.get(this.key(id));
    if (record !== undefined) {
      record.payload.consumed = Math.floor(Date.now() / 1000);
    }
  }

  async destroy(id: string): Promise<void> {
    this.store.records.delete(this.key(id));
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    this.store.deleteWhere((record) => record.payload.grantId === grantId);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// HTML

function page(body: string): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>${escapeHtml(PAGE_TITLE)}</title>
  <style>body{font-family:system-ui,sans-serif;max-width:24rem;margin:3rem auto;padding:0 1rem}label,input,button{display:block;width:100%;margin:.25rem 0}input,button{padding:.5rem;box-sizing:border-box}.error{color:#b00020}.note{color:#666;font-size:.85rem}</style>
</head>
<body>
  <h1>${escapeHtml(PAGE_TITLE)}</h1>
${body}
</body>
</html>`;
}

function loginPage(uid: string, options: { readonly login?: string; readonly error?: string } = {}): string {
  const error = options.error === undefined ? '' : `  <p class="error" role="alert">${escapeHtml(options.error)}</p>\n`;
  const action = `/interaction/${encodeURIComponent(uid)}/login`;
  return page(`${error}  <form method="post" action="${escapeHtml(action)}">
    <label for="login">Email or user id</label>
    <input id="login" name="login" autocomplete="username" autofocus required value="${escapeHtml(options.login ?? '')}">
    <label for="password">Password</label>
    <input id="password" name="password" type="password" autocomplete="current-password" required>
    <button type="submit">Sign in</button>
  </form>
  <p class="note">Development identity provider: every demo user signs in with the dev password. Local use only.</p>`);
}

// ---------------------------------------------------------------------------------------------------------------
// Small HTTP helpers for the interaction routes

function send(res: http.ServerResponse, status: number, html: string): void {
  const body = Buffer.from(html, 'utf8');
  res.statusCode = status;
  res.setHeader('Content-Type', 'text/html; charset=utf-8');
  res.setHeader('Content-Length', String(body.length));
  res.setHeader('Cache-Control', 'no-store');
  res.end(body);
}

async function readForm(req: http.IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > MAX_FORM_BYTES) {
      throw new Error('form body too large');
    }
    chunks.push(buffer);
  }
  const type = String(req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') {
    return new URLSearchParams();
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

function stringList(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
}

// ---------------------------------------------------------------------------------------------------------------

export async function startDevIdp(options: DevIdpOptions): Promise<DevIdp> {
  const host = options.host ?? '127.0.0.1';
  const users = options.users ?? DEMO_USERS;
  const tokenTtl = options.accessTokenTtlSeconds ?? 3600;
  const log = options.log;
  if (!Number.isInteger(tokenTtl) || tokenTtl <= 0) {
    throw new TypeError('accessTokenTtlSeconds must be a positive integer');
  }

  const { default: Provider } = await loadProvider(log);

  const usersById = new Map<string, DevUser>(users.map((user) => [user.id, user]));
  const findUser = (login: string): DevUser | undefined => {
    const wanted = login.trim();
    return usersById.get(wanted) ?? [...usersById.values()].find((user) => user.email.toLowerCase() === wanted.toLowerCase());
  };

  // oidc-provider needs its issuer (and so the port) before construction: listen first, attach the handler later.
  let handler: http.RequestListener | undefined;
  const server = http.createServer((req, res) => {
    if (handler === undefined) {
      send(res, 503, page('<p>Starting.</p>'));
      return;
    }
    handler(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const issuer = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

  const store = new DevStore();
  const tokenCalls: Record<string, number> = {};
  const requests: Record<string, number> = {};
  let outage: number | 'hang' | null = null;
  let abandoned = 0;

  const configuration: Configuration = {
    adapter: (model: string) => new DevAdapter(model, store),
    jwks: { keys: [devSigningKey()] },
    clients: options.clients.map((client) => ({
      client_id: client.clientId,
      client_secret: client.clientSecret,
      redirect_uris: [...client.redirectUris],
      post_logout_redirect_uris: [...client.postLogoutRedirectUris],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      // oidc-provider 9 accepts client_secret_basic and client_secret_post for a client registered with either.
      token_endpoint_auth_method: 'client_secret_basic',
    })),
    clientAuthMethods: ['client_secret_basic', 'client_secret_post'],
    responseTypes: ['code'],
    pkce: { required: () => true },
    scopes: ['openid', 'profile', 'email', 'offline_access', 'groups'],
    claims: {
      acr: null,
      sid: null,
      auth_time: null,
      iss: null,
      openid: ['sub'],
      email: ['email', 'email_verified'],
      profile: ['name', 'groups'],
      groups: ['groups'],
    },
    // Put every claim of the granted scopes in the ID token, not only in userinfo.
    conformIdTokenClaims: false,
    // Refresh tokens whenever the client may use the grant, without requiring offline_access (which
    // oidc-provider drops unless prompt=consent is requested).
    issueRefreshToken: (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    cookies: {
      keys: DEV_COOKIE_KEYS,
      // Koa only marks cookies secure on https requests; this provider serves plain http on loopback.
      long: { httpOnly: true, sameSite: 'lax', secure: false },
      short: { httpOnly: true, sameSite: 'lax', secure: false },
    },
    ttl: {
      AccessToken: tokenTtl,
      IdToken: tokenTtl,
      AuthorizationCode: 60,
      Interaction: 60 * 60,
      Session: 24 * 60 * 60,
      Grant: 14 * 24 * 60 * 60,
      RefreshToken: 14 * 24 * 60 * 60,
    },
    interactions: {
      url: (_ctx, interaction) => `/interaction/${interaction.uid}`,
    },
    findAccount: (_ctx, sub): Account | undefined => {
      const user = usersById.get(sub);
      if (user === undefined) {
        return undefined;
      }
      return {
        accountId: user.id,
        claims: () => ({
          sub: user.id,
          email: user.email,
          ...(user.emailVerified === null ? {} : { email_verified: user.emailVerified ?? true }),
          name: user.name,
          groups: [...user.groups],
        }),
      };
    },
    clientBasedCORS: () => false,
    features: {
      devInteractions: { enabled: false },
      resourceIndicators: { enabled: false },
      userinfo: { enabled: true },
      revocation: {
        enabled: true,
        allowedPolicy: (_ctx, client, token) => token.clientId === client.clientId,
      },
      rpInitiatedLogout: {
        enabled: true,
        logoutSource: (ctx: KoaContextWithOIDC, form: string) => {
          // `form` is `<form id="op.logoutForm" ...><input type="hidden" name="xsrf" .../></form>`.
          // logout=yes ends the whole session at the provider (and revokes its grants).
          const controls = '<input type="hidden" name="logout" value="yes"/><button type="submit">Sign out</button>';
          const withControls = form.includes('</form>')
            ? form.replace('</form>', `${controls}</form>`)
            : `${form}<button type="submit" form="op.logoutForm" name="logout" value="yes">Sign out</button>`;
          ctx.type = 'html';
          ctx.body = page(`  <p>Signing you out…</p>
  ${withControls}
  <script>document.getElementById('op.logoutForm').submit();</script>`);
        },
        postLogoutSuccessSource: (ctx: KoaContextWithOIDC) => {
          ctx.type = 'html';
          ctx.body = page('  <p>You are signed out.</p>');
        },
      },
    },
    renderError: (ctx: KoaContextWithOIDC, out, error) => {
      log?.(`dev-idp error page: ${out.error}${out.error_description ? ` (${out.error_description})` : ''}: ${error.message}`);
      ctx.type = 'html';
      const lines = Object.entries(out)
        .map(([key, value]) => `  <p><strong>${escapeHtml(key)}</strong>: ${escapeHtml(String(value))}</p>`)
        .join('\n');
      ctx.body = page(lines);
    },
  };

  const provider: OidcProvider = new Provider(issuer, configuration);

  provider.on('grant.success', (ctx: KoaContextWithOIDC) => {
    const grantType = String((ctx.oidc.params as { grant_type?: unknown } | undefined)?.grant_type ?? 'unknown');
    tokenCalls[grantType] = (tokenCalls[grantType] ?? 0) + 1;
  });
  provider.on('server_error', (_ctx: KoaContextWithOIDC, error: Error) => {
    log?.(`dev-idp server error: ${error.stack ?? error.message}`);
  });

  const callback = provider.callback();

  async function grantConsent(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const interaction = await provider.interactionDetails(req, res);
    const accountId = interaction.session?.accountId;
    const clientId = interaction.params['client_id'];
    if (accountId === undefined || typeof clientId !== 'string') {
      throw new Error('consent requested without a signed-in user or client');
    }
    const grant = interaction.grantId === undefined
      ? new provider.Grant({ accountId, clientId })
      : await provider.Grant.find(interaction.grantId) ?? new provider.Grant({ accountId, clientId });
    const details = interaction.prompt.details;
    const scopes = stringList(details['missingOIDCScope']);
    if (scopes.length > 0) {
      grant.addOIDCScope(scopes.join(' '));
    }
    const claims = stringList(details['missingOIDCClaims']);
    if (claims.length > 0) {
      grant.addOIDCClaims(claims);
    }
    const resourceScopes = details['missingResourceScopes'];
    if (resourceScopes !== null && typeof resourceScopes === 'object') {
      for (const [resource, scope] of Object.entries(resourceScopes)) {
        grant.addResourceScope(resource, stringList(scope).join(' '));
      }
    }
    const grantId = await grant.save();
    await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
  }

  async function interactionRoute(req: http.IncomingMessage, res: http.ServerResponse, uid: string, action: string | undefined): Promise<void> {
    const interaction = await provider.interactionDetails(req, res);
    if (interaction.uid !== uid) {
      send(res, 400, page('  <p class="error">This sign-in request does not match your browser session. Start again.</p>'));
      return;
    }
    if (interaction.prompt.name === 'consent') {
      // Consent is implied for the dev provider.
      await grantConsent(req, res);
      return;
    }
    if (interaction.prompt.name !== 'login') {
      send(res, 400, page(`  <p class="error">Unsupported prompt ${escapeHtml(interaction.prompt.name)}.</p>`));
      return;
    }
    if (req.method === 'GET' && action === undefined) {
      send(res, 200, loginPage(uid));
      return;
    }
    if (req.method === 'POST' && action === 'login') {
      const form = await readForm(req);
      const login = form.get('login') ?? '';
      const password = form.get('password') ?? '';
      const user = findUser(login);
      if (user === undefined || password !== DEV_PASSWORD) {
        send(res, 401, loginPage(uid, { login, error: 'Unknown user or wrong password.' }));
        return;
      }
      await provider.interactionFinished(
        req,
        res,
        { login: { accountId: user.id, remember: true } },
        { mergeWithLastSubmission: false },
      );
      return;
    }
    res.setHeader('Allow', action === undefined ? 'GET' : 'POST');
    send(res, 405, page('  <p class="error">Method not allowed.</p>'));
  }

  handler = (req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    requests[path] = (requests[path] ?? 0) + 1;
    if (outage === 'hang') {
      req.once('close', () => {
        if (!res.writableEnded) abandoned += 1;
      });
      return;
    }
    if (outage !== null) {
      send(res, outage, page('  <p class="error">Simulated outage.</p>'));
      return;
    }
    const match = /^\/interaction\/([^/]+)(?:\/([^/]+))?\/?$/.exec(path);
    if (match === null) {
      void callback(req, res);
      return;
    }
    const uid = decodeURIComponent(match[1] ?? '');
    const action = match[2];
    interactionRoute(req, res, uid, action).catch((error: unknown) => {
      const message = error instanceof Error ? error.message : String(error);
      log?.(`dev-idp interaction error: ${message}`);
      if (!res.headersSent) {
        send(res, 400, page(`  <p class="error">${escapeHtml(message)}</p>`));
      } else {
        res.destroy();
      }
    });
  };

  let closing: Promise<void> | undefined;

  return {
    issuer,
    port,
    tokenCalls,
    requests,
    updateUser(userId: string, changes: Partial<Omit<DevUser, 'id'>>): void {
      const user = usersById.get(userId);
      if (user === undefined) throw new Error(`no dev user ${userId}`);
      usersById.set(userId, { ...user, ...changes, id: userId });
    },
    setOutage(status: number | 'hang' | null): void {
      outage = status;
    },
    get abandoned(): number {
      return abandoned;
    },
    async revokeUser(userId: string): Promise<void> {
      const grantIds = new Set<string>();
      for (const record of store.records.values()) {
        if (record.model === 'Grant' && record.payload.accountId === userId && typeof record.payload.jti === 'string') {
          grantIds.add(record.payload.jti);
        }
      }
      store.deleteWhere((record) =>
        (record.model === 'Grant' && record.payload.accountId === userId)
        || (record.payload.grantId !== undefined && grantIds.has(record.payload.grantId))
        || (record.model !== 'Session' && record.model !== 'Interaction' && record.payload.accountId === userId));
    },
    close(): Promise<void> {
      closing ??= new Promise<void>((resolve, reject) => {
        server.close((error) => (error === undefined ? resolve() : reject(error)));
        server.closeAllConnections();
      }).finally(() => {
        store.records.clear();
      });
      return closing;
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// The command line: `npx tsx demo/dev-idp.ts --client-id ID --client-secret SECRET --redirect-uri URI` (docs/dev-idp.md)

/** What `--help` prints. */
export const DEV_IDP_USAGE = `Usage: npx tsx demo/dev-idp.ts --client-id ID --client-secret SECRET --redirect-uri URI [options]
       (or: npm run dev-idp -- --client-id ID ...)

The svc development OpenID provider, FOR LOCAL USE ONLY: plain HTTP on a loopback address, every
user signs in with the password \`${DEV_PASSWORD}\`, keys and sessions live in memory until it stops.

Required:
  --client-id ID                  the client svc signs in as (svc's idp_client_id)
  --client-secret SECRET          its secret (svc's idp_client_secret)
  --redirect-uri URI              where sign-in may send the browser back: svc's
                                  authenticate_service_url + /oauth2/callback (its
                                  authenticate_callback_path); repeat it for several
Options:
  --post-logout-redirect-uri URI  where sign-out may land (svc's signout_redirect_url); repeatable
  --port PORT                     port to listen on (default 9000; 0: any free port)
  --host HOST                     loopback address to listen on (default 127.0.0.1)
  --token-ttl SECONDS             lifetime of access and ID tokens (default 3600)
  -h, --help                      print this help

Users (password \`${DEV_PASSWORD}\`):
${DEMO_USERS.map((u) => `  ${u.email.padEnd(20)} groups: ${u.groups.join(', ')}`).join('\n')}

Example, for svc on https://authenticate.example.test:
  npx tsx demo/dev-idp.ts --port 9000 --client-id my-svc --client-secret my-secret \\
      --redirect-uri https://authenticate.example.test/oauth2/callback
then in svc's config: idp_provider: oidc, idp_provider_url: http://127.0.0.1:9000,
idp_client_id: my-svc, idp_client_secret: my-secret.
Exit codes: 0 stopped (Ctrl+C), 2 a bad option or a port it cannot listen on.
`;

/** The parsed command line: run with these options, print the help, or a usage error (exit 2). */
export type DevIdpCommand =
  | { readonly kind: 'run'; readonly options: DevIdpOptions & { readonly host: string; readonly port: number } }
  | { readonly kind: 'help' }
  | { readonly kind: 'error'; readonly message: string };

/** Whether `host` is a loopback address (the only kind this provider listens on). */
function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** An absolute http(s) URL without a fragment, as a redirect URI must be; else why not. */
function redirectUriProblem(flag: string, value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return `${flag} \`${value}\` is not an absolute URL (e.g. https://authenticate.example.test/oauth2/callback)`;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return `${flag} \`${value}\` is not an http or https URL`;
  if (url.hash !== '' || value.includes('#')) return `${flag} \`${value}\` has a fragment (#…), which a redirect URI may not have`;
  return undefined;
}

/** Parses the command line (node:util parseArgs, strict): never throws, never exits. */
export function parseDevIdpArgs(argv: readonly string[]): DevIdpCommand {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        'client-id': { type: 'string' },
        'client-secret': { type: 'string' },
        'redirect-uri': { type: 'string', multiple: true },
        'post-logout-redirect-uri': { type: 'string', multiple: true },
        port: { type: 'string' },
        host: { type: 'string' },
        'token-ttl': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (e) {
    // parseArgs's own messages name the option (`Unknown option '--nope'`); its advice on `--` does not apply.
    return { kind: 'error', message: (e as Error).message.split('. To specify')[0]!.replace(/\.$/, '') };
  }
  if (values.help === true) return { kind: 'help' };
  const clientId = values['client-id'];
  const clientSecret = values['client-secret'];
  const redirectUris = values['redirect-uri'] ?? [];
  if (clientId === undefined || clientId.trim() === '') return { kind: 'error', message: 'give the client svc signs in as: --client-id ID (svc\'s idp_client_id)' };
  if (clientSecret === undefined || clientSecret === '') return { kind: 'error', message: 'give the client\'s secret: --client-secret SECRET (svc\'s idp_client_secret)' };
  if (redirectUris.length === 0) return { kind: 'error', message: 'give at least one --redirect-uri URI (svc\'s authenticate_service_url + /oauth2/callback)' };
  const postLogoutRedirectUris = values['post-logout-redirect-uri'] ?? [];
  for (const [flag, uris] of [['--redirect-uri', redirectUris], ['--post-logout-redirect-uri', postLogoutRedirectUris]] as const) {
    for (const uri of uris) {
      const problem = redirectUriProblem(flag, uri);
      if (problem !== undefined) return { kind: 'error', message: problem };
    }
  }
  const portText = values.port ?? '9000';
  const port = /^\d{1,5}$/.test(portText) ? Number(portText) : Number.NaN;
  if (!(port >= 0 && port <= 65535)) return { kind: 'error', message: `--port \`${portText}\` is not a port number (0-65535; 0: any free port)` };
  const host = values.host ?? '127.0.0.1';
  if (!isLoopback(host)) return { kind: 'error', message: `--host \`${host}\` is not a loopback address: this provider is for local use only (127.0.0.1, ::1 or localhost)` };
  const ttlText = values['token-ttl'] ?? '3600';
  const ttl = /^\d{1,7}$/.test(ttlText) ? Number(ttlText) : Number.NaN;
  if (!(ttl >= 1)) return { kind: 'error', message: `--token-ttl \`${ttlText}\` is not a number of seconds (1 or more)` };
  return {
    kind: 'run',
    options: {
      host,
      port,
      accessTokenTtlSeconds: ttl,
      clients: [{ clientId, clientSecret, redirectUris, postLogoutRedirectUris }],
    },
  };
}

/** What the command prints once the provider listens: where it is, and what to give svc. */
export function devIdpBanner(idp: Pick<DevIdp, 'issuer'>, client: DevClient): string {
  return [
    `svc dev identity provider (local use only) at ${idp.issuer}`,
    `  discovery:     ${idp.issuer}/.well-known/openid-configuration`,
    `  client:        ${client.clientId}`,
    ...client.redirectUris.map((uri) => `  redirect URI:  ${uri}`),
    ...client.postLogoutRedirectUris.map((uri) => `  after logout:  ${uri}`),
    `  users:         ${DEMO_USERS.map((u) => `${u.email} (${u.groups.join(', ')})`).join(', ')}; password ${DEV_PASSWORD}`,
    `  svc config:    idp_provider: oidc, idp_provider_url: ${idp.issuer}, idp_client_id: ${client.clientId}, idp_client_secret: <the secret>`,
    '  Press Ctrl+C to stop.',
    '',
  ].join('\n');
}

async function main(argv: readonly string[]): Promise<void> {
  // `--help | head`: a reader that goes away is not an error.
  process.stdout.on('error', (e: NodeJS.ErrnoException) => process.exit(e.code === 'EPIPE' ? 0 : 1));
  const command = parseDevIdpArgs(argv);
  if (command.kind === 'help') {
    process.stdout.write(DEV_IDP_USAGE);
    return;
  }
  if (command.kind === 'error') {
    process.stderr.write(`error: ${command.message}\n(npx tsx demo/dev-idp.ts --help for the options)\n`);
    process.exit(2);
  }
  const { options } = command;
  let idp: DevIdp;
  try {
    idp = await startDevIdp({
      ...options,
      // oidc-provider's notice about the runtime it prefers: svc runs on the Node its package pins.
      log: (line) => {
        if (!/unsupported runtime/i.test(line)) process.stderr.write(`dev-idp: ${line}\n`);
      },
    });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL') {
      const why = code === 'EADDRINUSE' ? 'is already in use' : `cannot be used (${code})`;
      process.stderr.write(`error: port ${options.port} on ${options.host} ${why}: stop the program using it (\`lsof -i :${options.port}\` or \`ss -ltnp 'sport = :${options.port}'\` names it) or choose another with --port\n`);
      process.exit(2);
    }
    throw e;
  }
  process.stdout.write(devIdpBanner(idp, options.clients[0]!));
  const stop = () => {
    // Whatever happens, do not hang on the way out.
    setTimeout(() => process.exit(1), 5_000).unref();
    void idp.close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

if (isMainModule(import.meta.url)) await main(process.argv.slice(2));
