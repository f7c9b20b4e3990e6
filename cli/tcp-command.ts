/**
 * `svc tcp tcp+https://host:port --listen 127.0.0.1:PORT [--proxy URL] [--browser] [--auth-origin URL]
 * [--no-login]`: signs in for the route first (a stored token, else programmatic login), then
 * listens; runs until SIGINT/SIGTERM. docs/tcp.md.
 */
import { tunnelCredential } from './tcp-credential.ts';
import { parseTcpRoute, proxyUrl, startTunnel } from './tcp-tunnel.ts';
import { tokenDirectory } from './token-store.ts';

export interface TcpCommandOptions {
  readonly listen: string;
  readonly proxy?: string;
  /** False with `--no-login`: send no credential (public routes). */
  readonly login?: boolean;
  /** Open the sign-in URL in a browser as well as printing it. */
  readonly browser?: boolean;
  /** Further origins svc's sign-in page may be on. */
  readonly authOrigin?: readonly string[];
}

export async function tcpCommand(route: string, opts: TcpCommandOptions, io: { out: (s: string) => void; err: (s: string) => void }): Promise<number> {
  const m = /^(.*):(\d{1,5})$/.exec(opts.listen);
  if (!m) {
    io.err(`error: --listen \`${opts.listen}\` is not host:port\n`);
    return 2;
  }
  const target = parseTcpRoute(route);
  if (!target) {
    io.err(`error: route \`${route}\` is not tcp+https://host:port\n`);
    return 2;
  }
  try {
    const proxy = proxyUrl(target, opts.proxy);
    for (const a of opts.authOrigin ?? []) new URL(a); // a bad --auth-origin is a usage error now, not mid-login
    const credential =
      opts.login === false
        ? undefined
        : tunnelCredential({
            route: `tcp+https://${target.host}:${target.port}`,
            proxy,
            dir: tokenDirectory(),
            authOrigins: opts.authOrigin ?? [],
            openBrowser: opts.browser === true,
            present: (url) => io.err(`sign in for ${route} at:\n  ${url}\n`),
            note: (msg) => io.err(`${msg}\n`),
          });
    // Signed in before any client connects: a TCP client would not wait for a browser.
    await credential?.current();
    const server = await startTunnel({ route, ...(opts.proxy !== undefined ? { proxy: opts.proxy } : {}), ...(credential ? { credential } : {}), listen: { host: m[1]!, port: Number(m[2]) }, onError: (msg) => io.err(`${msg}\n`) });
    io.err(`listening on ${opts.listen}: connections go to ${route} through svc\n`);
    await new Promise<void>((resolve) => {
      process.once('SIGINT', () => resolve());
      process.once('SIGTERM', () => resolve());
    });
    server.close();
    return 0;
  } catch (e) {
    const code = (e as { code?: unknown }).code;
    io.err(`error: ${typeof code === 'string' ? `${code}: ` : ''}${(e as Error).message}\n`);
    return 2;
  }
}
