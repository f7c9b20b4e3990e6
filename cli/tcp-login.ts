/**
 * Programmatic login for a `tcp+https` route (docs/tcp.md): `svc tcp` listens on a
 * loopback port for the callback, asks svc's listener for a sign-in URL with the route's
 * `host:port` as `Host`, shows the URL (or opens a browser), and takes the token from the one
 * callback that carries the nonce it generated.
 *
 * What is checked (docs/security.md S32: never hand a token to a host it was not issued for, and check
 * the origin that served the login response):
 * - the login response comes from the proxy origin the token will be presented to;
 * - the sign-in URL it gives is `/.svc/sign_in` on an origin the user named: the proxy's own origin,
 *   `https://<route host>`, or `--auth-origin`. A URL elsewhere is refused: a proxy that answers
 *   with the real svc's sign-in URL (to collect a token the user signed in for) is caught here;
 * - the sign-in URL sends the token back to this callback, and nowhere else (`svc_programmatic_uri`);
 * - the callback is accepted once, on its path, with the nonce; any other request gets 400.
 * The token itself is encrypted by svc and names its route (`aud: tcp+https://host:port`); svc
 * refuses it on any other route, and the token store keeps it for this route and proxy only.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { spawn } from 'node:child_process';
import { request as httpRequest, createServer, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { SvcError } from '../runtime/core/errors.ts';

/** Stable codes of {@link TcpLoginError}. */
export type TcpLoginErrorCode = 'SVC_ERR_LOGIN_REQUEST' | 'SVC_ERR_LOGIN_URL_UNTRUSTED' | 'SVC_ERR_LOGIN_TIMEOUT';

/** A login failure with a stable code. */
export class TcpLoginError extends SvcError<TcpLoginErrorCode> {
  constructor(code: TcpLoginErrorCode, message: string, options?: ErrorOptions) {
    super(code, message, options);
    this.name = 'TcpLoginError';
  }
}

export interface LoginOptions {
  /** The route's CONNECT authority, canonical `host:port`. */
  readonly authority: string;
  /** The proxy origin (`https://host[:port]`, or `http://…` behind TLS-terminating ingress). */
  readonly proxy: URL;
  /** Further origins the sign-in page may be on (`--auth-origin`). */
  readonly authOrigins: readonly string[];
  /** Shows the sign-in URL to the user. */
  readonly present: (signInUrl: string) => void;
  /** Also opens it in the user's browser (`--browser`). */
  readonly openBrowser?: boolean;
  /** How long to wait for the sign-in (default 5 minutes). */
  readonly timeoutMs?: number;
}

/** A token for the route and when svc says it expires. */
export interface LoginResult {
  readonly token: string;
  readonly expiresAtMs: number;
}

const CALLBACK_PATH = '/svc-callback';
const DEFAULT_TIMEOUT_MS = 5 * 60_000;

/** Signs the user in for one tcp route. Throws {@link TcpLoginError}. */
export async function programmaticLogin(o: LoginOptions): Promise<LoginResult> {
  const nonce = randomBytes(32).toString('base64url');
  let settle: { resolve: (r: LoginResult) => void; reject: (e: Error) => void } | undefined;
  const result = new Promise<LoginResult>((resolve, reject) => (settle = { resolve, reject }));
  let done = false;
  const server = createServer((req, res) => {
    // One time: once a callback was taken, even the right nonce is refused.
    const answer = done ? ({ ok: false, message: 'this sign-in is already complete' } as const) : callbackAnswer(req, nonce);
    res.writeHead(answer.ok ? 200 : 400, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
    res.end(answer.ok ? 'Signed in: svc tcp has its token. You can close this tab.\n' : `svc tcp: ${answer.message}\n`);
    if (!answer.ok) return;
    done = true;
    settle!.resolve(answer.value);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const callback = `http://127.0.0.1:${(server.address() as { port: number }).port}${CALLBACK_PATH}?svc_state=${nonce}`;
  const timer = setTimeout(() => settle!.reject(new TcpLoginError('SVC_ERR_LOGIN_TIMEOUT', 'no sign-in within the time allowed')), o.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  try {
    const signIn = await loginUrl(o, callback);
    o.present(signIn);
    if (o.openBrowser) openInBrowser(signIn);
    return await result;
  } finally {
    clearTimeout(timer);
    server.closeAllConnections();
    server.close();
  }
}

/** Asks svc for the sign-in URL and checks it (see the module comment). */
async function loginUrl(o: LoginOptions, callback: string): Promise<string> {
  const body = await getText(o.proxy, `/.svc/api/v1/login?svc_redirect_uri=${encodeURIComponent(callback)}`, o.authority);
  const text = body.trim();
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    throw new TcpLoginError('SVC_ERR_LOGIN_REQUEST', `svc at ${o.proxy.origin} answered the login request with something that is not a URL`);
  }
  const host = o.authority.replace(/:\d+$/, '');
  const trusted = new Set([o.proxy.origin, `https://${host}`, ...o.authOrigins.map((a) => new URL(a).origin)]);
  const schemeOk = u.protocol === 'https:' || (u.protocol === 'http:' && o.proxy.protocol === 'http:');
  if (!schemeOk || u.username !== '' || u.password !== '' || u.pathname !== '/.svc/sign_in' || !trusted.has(u.origin)) {
    throw new TcpLoginError('SVC_ERR_LOGIN_URL_UNTRUSTED', `svc at ${o.proxy.origin} sends sign-in to \`${u.origin}${u.pathname}\`, which is not svc's sign-in page on ${[...trusted].join(', ')}; if you trust it, give --auth-origin ${u.origin}`);
  }
  if (u.searchParams.get('svc_programmatic_uri') !== callback) {
    throw new TcpLoginError('SVC_ERR_LOGIN_URL_UNTRUSTED', `the sign-in URL from ${o.proxy.origin} would not send the token back to this svc tcp`);
  }
  return u.href;
}

/** GET `path` from the proxy with `Host: authority`; the body of a 200, else a coded error. */
function getText(proxy: URL, path: string, authority: string): Promise<string> {
  const tls = proxy.protocol === 'https:';
  const port = Number(proxy.port || (tls ? 443 : 80));
  const host = authority.replace(/:\d+$/, '').replace(/^\[(.*)\]$/, '$1');
  return new Promise((resolve, reject) => {
    const fail = (message: string, cause?: unknown) => reject(new TcpLoginError('SVC_ERR_LOGIN_REQUEST', message, { cause }));
    const options = { host: proxy.hostname.replace(/^\[(.*)\]$/, '$1'), port, path, method: 'GET', headers: { host: authority, accept: 'text/plain' }, ...(tls ? { servername: host } : {}) };
    const req = (tls ? httpsRequest : httpRequest)(options, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > 16 * 1024) req.destroy(new Error('login answer too large'));
        else chunks.push(c);
      });
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode === 200) resolve(text);
        else fail(`svc at ${proxy.origin} refused the login request for ${authority}: ${res.statusCode} ${text.trim().slice(0, 200)}`);
      });
      res.on('error', (e) => fail(`login request to ${proxy.origin} failed: ${e.message}`, e));
    });
    req.on('error', (e) => fail(`cannot reach svc at ${proxy.origin}: ${e.message}`, e));
    req.end();
  });
}

/** What the callback brought: the token and its expiry, or why the request is not the callback. */
function callbackAnswer(req: IncomingMessage, nonce: string): { ok: true; value: LoginResult } | { ok: false; message: string } {
  const u = new URL(req.url ?? '/', 'http://127.0.0.1');
  if (req.method !== 'GET' || u.pathname !== CALLBACK_PATH) return { ok: false, message: 'not the sign-in callback' };
  const state = Buffer.from(u.searchParams.get('svc_state') ?? '');
  const expected = Buffer.from(nonce);
  if (state.length !== expected.length || !timingSafeEqual(state, expected)) return { ok: false, message: 'the sign-in callback does not belong to this login' };
  const token = u.searchParams.get('svc_jwt') ?? '';
  const expiry = Number(u.searchParams.get('svc_jwt_expiry'));
  if (!token.startsWith('svc1.') || !Number.isSafeInteger(expiry) || expiry <= 0) return { ok: false, message: 'the sign-in callback carries no token and expiry' };
  return { ok: true, value: { token, expiresAtMs: expiry * 1000 } };
}

/** Opens `url` with the platform's opener; a failure leaves the printed URL to the user. */
function openInBrowser(url: string): void {
  const [cmd, args] = process.platform === 'darwin' ? ['open', [url]] : process.platform === 'win32' ? ['cmd', ['/c', 'start', '""', url]] : ['xdg-open', [url]];
  try {
    const child = spawn(cmd, args as string[], { stdio: 'ignore', detached: true });
    child.on('error', () => undefined);
    child.unref();
  } catch {
    // The URL was printed; the user opens it.
  }
}
