/**
 * The client address (docs/decisions.md §5). With 0 trusted hops it is the TCP peer; with N it is
 * the N-th entry from the right of `X-Forwarded-For`. A list too short or one of the last N entries
 * that is not an IP address gives `undefined`, which the caller answers with 400: an unparsable address must never
 * mean "no address, so no restriction" (docs/security.md S15).
 */
import { isIP } from 'node:net';
import type { RequestHeaders } from '../core/types.ts';

const MAPPED_V4 = /^::ffff:(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})$/i;

/** An IP address in the form policies compare: an IPv4-mapped IPv6 address becomes IPv4. */
export function plainAddress(address: string): string {
  if (address.charCodeAt(0) !== 0x3a) return address; // only `::ffff:…` can be mapped
  const m = MAPPED_V4.exec(address);
  return m ? m[1]! : address;
}

/** The entries of every `X-Forwarded-For` header, comma-separated, trimmed, in order. */
export function forwardedFor(headers: RequestHeaders): string[] {
  const values = headers['x-forwarded-for'];
  if (!values) return [];
  const out: string[] = [];
  for (const v of values) for (const part of v.split(',')) out.push(part.trim());
  return out;
}

/** The client address, or `undefined` when it cannot be determined (→ 400). */
export function clientAddress(peer: string, headers: RequestHeaders, trustedHops: number): string | undefined {
  if (trustedHops === 0) return peerAddress(peer);
  const list = forwardedFor(headers);
  if (list.length < trustedHops) return undefined;
  // Every trusted entry is forwarded upstream, so every one must be an address, not only the client's.
  for (let i = list.length - trustedHops; i < list.length; i++) if (!isAddress(list[i]!)) return undefined;
  return plainAddress(list[list.length - trustedHops]!);
}

/**
 * The client address of a TCP peer, read once per peer in a row: a connection's requests (and the
 * decision's and the access line's reads of one request) give the same peer string, and `isIP`
 * costs a regular expression each time. A function of `peer` alone, so the last answer stands.
 */
function peerAddress(peer: string): string | undefined {
  if (peer !== lastPeer) {
    lastPeer = peer;
    lastPeerAddress = isAddress(peer) ? plainAddress(peer) : undefined;
  }
  return lastPeerAddress;
}
let lastPeer: string | undefined;
let lastPeerAddress: string | undefined;

/** An IPv4 or IPv6 address without a zone id (zones never reach policies). */
function isAddress(s: string): boolean {
  return isIP(s) !== 0 && !s.includes('%');
}
