/**
 * Socket addresses of upstreams. The plan keeps an IPv6 host in URL form (`[::1]`, as
 * `URL.hostname` gives it); sockets want it bare, addresses and Host headers want it bracketed.
 */
import type { Upstream } from '../../compiler/plan/types.ts';

/**
 * The upstream's `host:port`, with an IPv6 host in brackets (`[::1]:8080`). It is the host's
 * identity for consistent hashing (RING_HASH and MAGLEV hash it, as Envoy hashes a host's address),
 * and the form used in logs and metrics.
 */
export function upstreamAddress(upstream: Pick<Upstream, 'host' | 'port'>): string {
  return `${bracketHost(upstream.host)}:${upstream.port}`;
}

/** The host as a socket API takes it: an IPv6 literal without brackets. */
export function socketHost(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/** The host as a URL authority or Host header takes it: an IPv6 literal in brackets. */
export function bracketHost(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

/**
 * The default `Host`/`:authority` for requests to the upstream itself (health checks): the host,
 * plus the port unless it is the scheme's default.
 */
export function upstreamAuthority(upstream: Pick<Upstream, 'scheme' | 'host' | 'port'>): string {
  const defaultPort = upstream.scheme === 'https' ? 443 : upstream.scheme === 'http' ? 80 : -1;
  const host = bracketHost(upstream.host);
  return upstream.port === defaultPort ? host : `${host}:${upstream.port}`;
}
