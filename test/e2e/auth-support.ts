/**
 * The end-to-end setup for authentication tests: a real OpenID provider (demo/dev-idp.ts, built on
 * oidc-provider) with the demo users, a real upstream that echoes what it received, and `svc run`
 * on plain HTTP on loopback with host names under `localhost` (which browsers resolve to loopback).
 * svc's port is chosen first, because the configuration names it (authenticate URL, routes).
 */
import { generateKeyPairSync } from 'node:crypto';
import { startDevIdp, type DevIdp, type DevUser } from '../../demo/dev-idp.ts';
import { run, type IdentityManagerTuning, type RunOptions, type Running } from '../../runtime/process/run.ts';
import type { SessionStore } from '../../runtime/core/session-store.ts';
import { HttpBrowser } from '../support/http-browser.ts';
import { configDir, echo, startUpstream, type Upstream } from './support.ts';
import { freePort } from '../support/ports.ts';

/** Ports for svc's listeners, which its config names up front (test/support/ports.ts: safe beside parallel files). */
export { freePort };

/** A P-256 signing key as the config takes it (base64 of the PEM). TEST KEY ONLY. */
export function testSigningKey(): string {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return Buffer.from(privateKey.export({ type: 'pkcs8', format: 'pem' }) as string).toString('base64');
}

export interface AuthWorld {
  readonly idp: DevIdp;
  readonly upstream: Upstream;
  readonly svc: Running;
  /** svc's port; every `*.localhost` host name reaches it. */
  readonly port: number;
  /** svc's config file (a second svc instance may serve the same). */
  readonly configPath: string;
  /** `http://<name>.localhost:<port>` */
  origin(name: string): string;
  /** A fresh cookie-keeping client: `*.localhost` → svc, the IdP's own address → the IdP. */
  browser(): HttpBrowser;
  close(): Promise<void>;
}

export interface AuthWorldOptions {
  /** Extra settings (override the defaults below). */
  readonly settings?: Record<string, unknown>;
  /** Routes; `UPSTREAM` in a `to` is replaced by the echo upstream's URL, `PORT` in `from` by svc's port. */
  readonly routes: readonly Record<string, unknown>[];
  readonly accessTokenTtlSeconds?: number;
  /** The provider's users (default: demo/dev-idp.ts DEMO_USERS). */
  readonly users?: readonly DevUser[];
  /** The port to serve on (default: a free one). */
  readonly port?: number;
  /**
   * Deployed as behind TLS: `cookie_secure: true` and `https://` origins (svc still listens on plain
   * HTTP, and the test browser sends `https://` URLs there as plain HTTP and keeps `Secure` cookies).
   */
  readonly secure?: boolean;
  /** The identity manager's timings (shortened by its tests). */
  readonly identityManager?: IdentityManagerTuning;
  /** A session store to use instead of svc's own (two svc instances sharing one). */
  readonly sessionStore?: SessionStore;
  /** Receives svc's log lines. */
  readonly log?: (entry: Record<string, unknown>) => void;
  /** The authenticate service's name under `localhost` (default `authenticate`). */
  readonly authenticateName?: string;
  /** What svc run is told besides the config: its logs, tracer, warnings (default: none). */
  readonly run?: Pick<RunOptions, 'log' | 'access' | 'tracing' | 'onWarnings' | 'logSettings'>;
}

/**
 * Starts the IdP, the echo upstream and svc. Defaults: authenticate service on
 * `authenticate.localhost`, forward-auth on `fwd.localhost`, cookies not `Secure` (plain HTTP) unless
 * `secure`.
 */
export async function startAuthWorld(options: AuthWorldOptions): Promise<AuthWorld> {
  const port = options.port ?? (await freePort());
  const scheme = options.secure === true ? 'https' : 'http';
  const origin = (name: string) => `${scheme}://${name}.localhost:${port}`;
  const authenticate = options.authenticateName ?? 'authenticate';
  const idp = await startDevIdp({
    clients: [{ clientId: 'svc-test', clientSecret: 'svc-test-secret', redirectUris: [`${origin(authenticate)}/oauth2/callback`], postLogoutRedirectUris: [`${origin('app')}/`, `${origin('public')}/signed-out`] }],
    ...(options.accessTokenTtlSeconds !== undefined ? { accessTokenTtlSeconds: options.accessTokenTtlSeconds } : {}),
    ...(options.users !== undefined ? { users: options.users } : {}),
  });
  const upstream = await startUpstream(echo);
  const cfg = configDir();
  const fill = (v: unknown): unknown => (typeof v === 'string' ? v.replaceAll('UPSTREAM', upstream.url).replaceAll('PORT', String(port)) : v);
  cfg.write(
    {
      address: `127.0.0.1:${port}`,
      cookie_secure: options.secure === true,
      authenticate_service_url: origin(authenticate),
      forward_auth_url: origin('fwd'),
      signout_redirect_url: `${origin('public')}/signed-out`,
      idp_provider: 'oidc',
      idp_provider_url: idp.issuer,
      idp_client_id: 'svc-test',
      idp_client_secret: 'svc-test-secret',
      ...options.settings,
    },
    options.routes.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, fill(v)]))),
  );
  const svc = await run({
    configPath: cfg.path,
    watch: false,
    grpcListen: { host: '127.0.0.1', port: 0 },
    ...(options.identityManager ? { identityManager: options.identityManager } : {}),
    ...(options.sessionStore ? { sessionStore: options.sessionStore } : {}),
    ...(options.log ? { log: options.log } : {}),
    ...options.run,
  });
  const idpPort = idp.port;
  return {
    idp,
    upstream,
    svc,
    port,
    configPath: cfg.path,
    origin,
    browser: () =>
      new HttpBrowser((url) => {
        if (url.hostname === 'localhost' || url.hostname.endsWith('.localhost')) return Number(url.port) === port ? { port } : undefined;
        if (url.hostname === '127.0.0.1' && Number(url.port) === idpPort) return { port: idpPort };
        return undefined;
      }),
    close: async () => {
      await svc.close();
      await upstream.close();
      await idp.close();
      cfg.remove();
    },
  };
}

/**
 * A development identity provider with one client (`c`/`s`) for a svc whose origins are
 * `http://<name>.localhost:<port>` (sign-in on `authenticate`, signed out back to `app`);
 * `accessTokenTtlSeconds`: the lifetime of its access tokens (default an hour).
 */
export function startLocalhostIdp(port: number, authenticatePort = port, options: { readonly accessTokenTtlSeconds?: number } = {}): Promise<DevIdp> {
  const origin = localhostOrigins(port, authenticatePort);
  return startDevIdp({ clients: [{ clientId: 'c', clientSecret: 's', redirectUris: [`${origin('authenticate')}/oauth2/callback`], postLogoutRedirectUris: [`${origin('app')}/`] }], ...options });
}

/** `http://<name>.localhost:<port>`, the authenticate host on its own port when it has one (split deployments). */
function localhostOrigins(port: number, authenticatePort: number): (name: string) => string {
  return (name) => `http://${name}.localhost:${name === 'authenticate' ? authenticatePort : port}`;
}

/** The sign-in settings of a plain-HTTP svc on `*.localhost:<port>` using `idp` from {@link startLocalhostIdp}. */
export function localhostSignInSettings(port: number, idp: DevIdp, authenticatePort = port): Record<string, unknown> {
  const origin = localhostOrigins(port, authenticatePort);
  return {
    cookie_secure: false,
    authenticate_service_url: origin('authenticate'),
    signout_redirect_url: `${origin('app')}/`,
    idp_provider_url: idp.issuer,
    idp_client_id: 'c',
    idp_client_secret: 's',
  };
}
