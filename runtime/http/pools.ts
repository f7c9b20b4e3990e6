/**
 * undici connection pools, one per upstream origin and TLS setting, with keep-alive. A plan
 * generation takes the pools it needs from the previous one when the key is the same (reload keeps
 * warm connections to unchanged upstreams) and closes the rest when it retires.
 */
import { Pool } from 'undici';
import type { Route, Upstream } from '../../compiler/plan/types.ts';

/** The key of a pool: origin plus everything that changes how its connections are made. */
export function poolKey(route: Route, upstream: Upstream): string {
  const tls = upstream.scheme === 'https' ? `|${route.tls.skipVerify}|${route.tls.serverName ?? ''}|${route.tls.customCa?.sha256 ?? ''}|${route.tls.clientCert?.sha256 ?? ''}` : '';
  return `${upstream.scheme}://${upstream.host}:${upstream.port}${tls}`;
}

export interface PoolOptions {
  /** CA bundle (PEM) replacing the trust store, when the route or `certificate_authority` sets one. */
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
}

/** Opens a pool for one upstream of a route. */
export function openPool(route: Route, upstream: Upstream, options: PoolOptions = {}): Pool {
  const origin = `${upstream.scheme === 'https' ? 'https' : 'http'}://${upstream.host.includes(':') && !upstream.host.startsWith('[') ? `[${upstream.host}]` : upstream.host}:${upstream.port}`;
  return new Pool(origin, {
    connections: 256,
    keepAliveTimeout: 60_000,
    ...(upstream.scheme === 'https'
      ? {
          connect: {
            rejectUnauthorized: !route.tls.skipVerify,
            ...(route.tls.serverName !== null ? { servername: route.tls.serverName } : {}),
            ...(options.ca !== undefined ? { ca: options.ca } : {}),
            ...(options.cert !== undefined && options.key !== undefined ? { cert: options.cert, key: options.key } : {}),
          },
        }
      : {}),
  });
}
