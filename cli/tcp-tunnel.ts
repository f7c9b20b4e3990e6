/**
 * The client side of `tcp+https` routes: `svc tcp` opens a local port and carries every connection
 * to it through svc with `CONNECT host:port`, so ordinary TCP clients (redis-cli, psql, ssh) reach
 * the route's upstream. Bytes pass only after svc has answered 200 (authorized and connected).
 */
import { createServer, connect as netConnect, type Server, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { SvcError } from '../runtime/core/errors.ts';

/**
 * The credential `svc tcp` sends on CONNECT (`Proxy-Authorization: Bearer svc1.…`, docs/tcp.md).
 * Both methods may sign the user in (programmatic login) and so may take a while.
 */
export interface TunnelCredential {
  /** The token for the next CONNECT, or undefined to send none. */
  current(): Promise<string | undefined>;
  /** svc answered 401 to `token`: forget it and get another once; undefined gives up. */
  refused(token: string | undefined): Promise<string | undefined>;
}

export interface TunnelOptions {
  /** The route: `tcp+https://host:port` (its host and port name the CONNECT target). */
  readonly route: string;
  /** Where svc listens: `https://host:port` (default: the route's host on 443) or `http://…` behind TLS-terminating ingress. */
  readonly proxy?: string;
  /** Local address to listen on. */
  readonly listen: { readonly host: string; readonly port: number };
  /** The token each CONNECT carries; none without it (public routes). */
  readonly credential?: TunnelCredential;
  readonly onError?: (message: string) => void;
}

/** Parses `tcp+https://host:port`. */
export function parseTcpRoute(route: string): { host: string; port: number } | undefined {
  const m = /^tcp\+https:\/\/([^/:]+|\[[^\]]+\]):(\d{1,5})\/?$/i.exec(route);
  return m ? { host: m[1]!.toLowerCase(), port: Number(m[2]) } : undefined;
}

/** The proxy origin `svc tcp` uses for a route: `--proxy`, else `https://<route host>`. */
export function proxyUrl(route: { readonly host: string }, proxy: string | undefined): URL {
  return new URL(proxy ?? `https://${route.host}`);
}

/** Starts the local listener. Resolves once it listens. */
export async function startTunnel(options: TunnelOptions): Promise<Server> {
  const target = parseTcpRoute(options.route);
  if (!target) throw new SvcError('SVC_ERR_TCP_ROUTE_INVALID', `route \`${options.route}\` is not tcp+https://host:port`);
  const proxy = proxyUrl(target, options.proxy);
  const authority = `${target.host}:${target.port}`;
  const credential = options.credential;
  const server = createServer((local) => {
    local.on('error', () => undefined);
    // The local client's bytes wait in its socket (not read) until svc has answered 200.
    const attempt = (token: string | undefined, retried: boolean): void => {
      if (local.destroyed) return;
      const port = Number(proxy.port || (proxy.protocol === 'https:' ? 443 : 80));
      const remote: Socket = proxy.protocol === 'https:' ? tlsConnect({ host: proxy.hostname, port, servername: target.host, ALPNProtocols: ['http/1.1'] }) : netConnect({ host: proxy.hostname, port });
      const auth = token === undefined ? '' : `Proxy-Authorization: Bearer ${token}\r\n`;
      remote.once(proxy.protocol === 'https:' ? 'secureConnect' : 'connect', () => remote.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n${auth}\r\n`));
      let head = Buffer.alloc(0);
      let answered = false;
      const onData = (chunk: Buffer) => {
        head = Buffer.concat([head, chunk]);
        const end = head.indexOf('\r\n\r\n');
        if (end < 0) {
          if (head.length > 16 * 1024) remote.destroy();
          return;
        }
        answered = true;
        remote.off('data', onData);
        const status = /^HTTP\/1\.[01] (\d{3})/.exec(head.toString('latin1'))?.[1];
        if (status !== '200') {
          remote.destroy();
          if (status === '401' && credential && !retried) {
            credential.refused(token).then(
              (next) => (next === undefined ? local.destroy() : attempt(next, true)),
              (e: unknown) => {
                options.onError?.(`sign-in failed: ${(e as Error).message}`);
                local.destroy();
              },
            );
            return;
          }
          options.onError?.(`svc refused the tunnel: ${head.subarray(0, end).toString('latin1').split('\r\n')[0]}`);
          local.destroy();
          return;
        }
        const rest = head.subarray(end + 4);
        if (rest.length > 0) local.write(rest);
        local.pipe(remote);
        remote.pipe(local);
        local.on('close', () => remote.destroy());
        remote.on('close', () => local.destroy());
      };
      remote.on('data', onData);
      remote.on('error', (e) => {
        options.onError?.(`cannot reach svc at ${proxy.origin}: ${e.message}`);
        local.destroy();
      });
      remote.on('close', () => {
        if (!answered) local.destroy();
      });
      local.once('close', () => {
        if (!answered) remote.destroy();
      });
    };
    if (!credential) return attempt(undefined, false);
    credential.current().then(
      (token) => attempt(token, false),
      (e: unknown) => {
        options.onError?.(`sign-in failed: ${(e as Error).message}`);
        local.destroy();
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.listen.port, options.listen.host, () => resolve());
  });
  return server;
}
