/**
 * undici connection pools, one per upstream origin and TLS setting, with keep-alive. A plan
 * generation takes the pools it needs from the previous one when the key is the same (reload keeps
 * warm connections to unchanged upstreams) and closes the rest when it retires.
 */
import { rootCertificates } from 'node:tls';
import { Pool } from 'undici';
import type { PlanSettings, Route, Upstream } from '../../compiler/plan/types.ts';
import { readPemSource } from '../tls/pem.ts';
import { resolvePem } from '../plan/secrets.ts';

/** The key of a pool: origin plus everything that changes how its connections are made. */
export function poolKey(route: Route, upstream: Upstream, settings: PlanSettings): string {
  const tls =
    upstream.scheme === 'https'
      ? `|${route.tls.skipVerify}|${route.tls.serverName ?? ''}|${route.tls.customCa?.sha256 ?? ''}|${route.tls.clientCert?.sha256 ?? ''}|${route.tls.clientKey?.fingerprint ?? ''}|${settings.tls.certificateAuthority?.sha256 ?? ''}`
      : '';
  return `${upstream.scheme}://${upstream.host}:${upstream.port}|${settings.server.dnsLookupFamily}${tls}`;
}

export interface PoolOptions {
  /** `dns_lookup_family`: 4, 6, or 0 (either). */
  readonly family?: 0 | 4 | 6;
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
            ...(options.family ? { family: options.family } : {}),
            rejectUnauthorized: !route.tls.skipVerify,
            ...(route.tls.serverName !== null ? { servername: route.tls.serverName } : {}),
            ...(options.ca !== undefined ? { ca: options.ca } : {}),
            ...(options.cert !== undefined && options.key !== undefined ? { cert: options.cert, key: options.key } : {}),
          },
        }
      : options.family
        ? { connect: { family: options.family } }
        : {}),
  });
}

/**
 * The TLS material of a route's upstream connections (docs/configuration.md "Route fields"): `tls_custom_ca` replaces the trust
 * store; else the global `certificate_authority` is added to the system roots; `tls_client_cert`
 * and `tls_client_key` authenticate svc to the upstream. Throws when a file cannot be read.
 */
export function upstreamTlsOptions(route: Route, settings: PlanSettings): PoolOptions {
  const family = settings.server.dnsLookupFamily === 'V4_ONLY' ? 4 : settings.server.dnsLookupFamily === 'V6_ONLY' ? 6 : 0;
  const ca = route.tls.customCa ? readPemSource(route.tls.customCa, 'tls_custom_ca') : settings.tls.certificateAuthority ? [...rootCertificates, readPemSource(settings.tls.certificateAuthority, 'certificate_authority')].join('\n') : undefined;
  const cert = route.tls.clientCert ? readPemSource(route.tls.clientCert, 'tls_client_cert') : undefined;
  const key = route.tls.clientKey ? resolvePem(route.tls.clientKey, 'tls_client_key') : undefined;
  return { family, ...(ca !== undefined ? { ca } : {}), ...(cert !== undefined ? { cert } : {}), ...(key !== undefined ? { key } : {}) };
}
