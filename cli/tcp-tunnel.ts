/**
 * The client side of `tcp+https` routes: `svc tcp` opens a local port and carries every connection
 * to it through svc with `CONNECT host:port`, so ordinary TCP clients (redis-cli, psql, ssh) reach
 * the route's upstream. Bytes pass only after svc has answered 200 (authorized and connected).
 */
import { createServer, connect as netConnect, type Server, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';

export interface TunnelOptions {
  /** The route: `tcp+https://host:port` (its host and port name the CONNECT target). */
  readonly route: string;
  /** Where svc listens: `https://host:port` (default: the route's host on 443) or `http://…` behind TLS-terminating ingress. */
  readonly proxy?: string;
  /** Local address to listen on. */
  readonly listen: { readonly host: string; readonly port: number };
  /** Extra request headers for CONNECT (e.g. `Authorization: Bearer …` once programmatic login lands). */
  readonly headers?: Readonly<Record<string, string>>;
  readonly onError?: (message: string) => void;
}

/** Parses `tcp+https://host:port`. */
export function parseTcpRoute(route: string): { host: string; port: number } | undefined {
  const m = /^tcp\+https:\/\/([^/:]+|\[[^\]]+\]):(\d{1,5})\/?$/i.exec(route);
  return m ? { host: m[1]!.toLowerCase(), port: Number(m[2]) } : undefined;
}

/** Starts the local listener. Resolves once it listens. */
export async function startTunnel(options: TunnelOptions): Promise<Server> {
  const target = parseTcpRoute(options.route);
  if (!target) throw new Error(`route \`${options.route}\` is not tcp+https://host:port`);
  const proxy = new URL(options.proxy ?? `https://${target.host}`);
  const server = createServer((local) => {
    const port = Number(proxy.port || (proxy.protocol === 'https:' ? 443 : 80));
    const remote: Socket = proxy.protocol === 'https:' ? tlsConnect({ host: proxy.hostname, port, servername: target.host, ALPNProtocols: ['http/1.1'] }) : netConnect({ host: proxy.hostname, port });
    const authority = `${target.host}:${target.port}`;
    const extra = Object.entries(options.headers ?? {}).map(([k, v]) => `${k}: ${v}\r\n`).join('');
    remote.once(proxy.protocol === 'https:' ? 'secureConnect' : 'connect', () => remote.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n${extra}\r\n`));
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) {
        if (head.length > 16 * 1024) remote.destroy();
        return;
      }
      remote.off('data', onData);
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(head.toString('latin1'))?.[1];
      if (status !== '200') {
        options.onError?.(`svc refused the tunnel: ${head.subarray(0, end).toString('latin1').split('\r\n')[0]}`);
        local.destroy();
        remote.destroy();
        return;
      }
      const rest = head.subarray(end + 4);
      if (rest.length > 0) local.write(rest);
      local.pipe(remote);
      remote.pipe(local);
    };
    remote.on('data', onData);
    remote.on('error', (e) => {
      options.onError?.(`cannot reach svc at ${proxy.origin}: ${e.message}`);
      local.destroy();
    });
    local.on('error', () => remote.destroy());
    local.on('close', () => remote.destroy());
    remote.on('close', () => local.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.listen.port, options.listen.host, () => resolve());
  });
  return server;
}
