/**
 * The client address (runtime/request/client-address.ts): the TCP peer with no trusted hops, read
 * once per peer in a row; any order of peers gives each one's own answer.
 */
import { isIP } from 'node:net';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { clientAddress } from '../../../runtime/request/client-address.ts';

/** What the peer's address is, read afresh (the rule the file comment states). */
function expected(peer: string): string | undefined {
  if (isIP(peer) === 0 || peer.includes('%')) return undefined;
  const mapped = /^::ffff:(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})$/i.exec(peer);
  return mapped ? mapped[1] : peer;
}

describe('clientAddress with no trusted hops', () => {
  const peers = ['127.0.0.1', '::1', '::ffff:192.0.2.7', '::FFFF:192.0.2.8', 'fe80::1%eth0', '', 'not-an-ip', '2001:db8::1', '192.0.2.300'];

  it('answers each peer as read afresh, in any order and repeated (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...peers), { minLength: 1, maxLength: 30 }), (seq) => {
        for (const peer of seq) expect(clientAddress(peer, {}, 0), peer).toBe(expected(peer));
      }),
      { numRuns: 300 },
    );
  });

  it('gives a mapped IPv4 address as IPv4, and no address for a zone, a name or nothing', () => {
    expect(clientAddress('::ffff:192.0.2.7', {}, 0)).toBe('192.0.2.7');
    expect(clientAddress('::ffff:192.0.2.7', {}, 0)).toBe('192.0.2.7');
    expect(clientAddress('fe80::1%eth0', {}, 0)).toBeUndefined();
    expect(clientAddress('not-an-ip', {}, 0)).toBeUndefined();
    expect(clientAddress('', {}, 0)).toBeUndefined();
    expect(clientAddress('127.0.0.1', { 'x-forwarded-for': ['203.0.113.9'] }, 0)).toBe('127.0.0.1');
  });
});
