/**
 * Websocket upgrades (runtime/proxy/upgrade.ts) over the gate's identity step: an assertion that
 * cannot be signed answers 500 `identity-assertion-failed` on the raw socket and moves no balancer
 * counter (the gate picks only after the identity step); a client gone while its assertion was
 * signed is picked nothing; an upgrade the route does not take is refused (400) without a
 * signature. Real servers on loopback; the generation is test/runtime/proxy/gate-support.ts.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUpgradeHandler } from '../../../runtime/proxy/upgrade.ts';
import { gateSupport, type GateSupport, type Signing } from './gate-support.ts';

let upstream: Server;
let upstreamUrl = '';
const seen: IncomingHttpHeaders[] = [];

beforeAll(async () => {
  upstream = createServer((_req, res) => res.end('not an upgrade'));
  upstream.on('upgrade', (req, socket: Socket) => {
    seen.push(req.headers);
    socket.end('HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\n\r\n');
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
});
afterAll(async () => {
  upstream.closeAllConnections();
  await new Promise((r) => upstream.close(r));
});

async function serve(signing: Signing): Promise<{ s: GateSupport; port: number; close: () => Promise<void> }> {
  const s = gateSupport(signing, upstreamUrl);
  const server = createServer((_req, res) => res.end());
  server.on('upgrade', createUpgradeHandler(s.store, s.options));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    s,
    port: (server.address() as AddressInfo).port,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await s.close();
    },
  };
}

/** A raw upgrade to `protocol` on app.example.com; everything svc sent until it closed, or 'cut' when `abortWhen` reset it first. */
function upgrade(port: number, protocol = 'websocket', abortWhen?: () => boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let got = '';
    let cut = false;
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => (got += c));
    socket.on('close', () => resolve(cut ? 'cut' : got));
    socket.on('error', (e) => (cut ? undefined : reject(e)));
    socket.write(`GET /ws HTTP/1.1\r\nhost: app.example.com\r\nconnection: Upgrade\r\nupgrade: ${protocol}\r\nsec-websocket-version: 13\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`);
    if (abortWhen) {
      const poll = setInterval(() => {
        if (!abortWhen()) return;
        clearInterval(poll);
        cut = true;
        // A reset, not a FIN: svc's side of an upgrade is half-open (allowHalfOpen) after a FIN,
        // a client that may still read; after a reset it is destroyed.
        socket.resetAndDestroy();
      }, 5);
    }
  });
}

describe('websocket upgrades, the identity step before the pick', () => {
  it('a signed assertion reaches the upstream handshake, through the one upstream picked', async () => {
    const svc = await serve('signed');
    try {
      const before = seen.length;
      expect(await upgrade(svc.port)).toMatch(/^HTTP\/1\.1 101 /);
      expect(svc.s.picks).toEqual([0]);
      expect(seen.slice(before).map((h) => h['x-svc-jwt-assertion'])).toEqual(['assertion-for-app.example.com']);
      expect(svc.s.outcomes).toEqual([{ status: 101 }]);
    } finally {
      await svc.close();
    }
  });

  it('a failing signer: 500 identity-assertion-failed, no pick and no done', async () => {
    const svc = await serve('failed');
    try {
      const before = seen.length;
      const answer = await upgrade(svc.port);
      expect(answer).toMatch(/^HTTP\/1\.1 500 /);
      expect(answer).toContain('identity-assertion-failed');
      expect(svc.s.signed).toHaveLength(1);
      expect(svc.s.picks).toEqual([]);
      expect(svc.s.outcomes).toEqual([]);
      expect(seen.length).toBe(before);
    } finally {
      await svc.close();
    }
  });

  it('a client gone while its assertion is signed: nothing picked, no handshake upstream', async () => {
    const svc = await serve('held');
    try {
      const before = seen.length;
      expect(await upgrade(svc.port, 'websocket', () => svc.s.signed.length > 0)).toBe('cut');
      await new Promise((r) => setTimeout(r, 50));
      svc.s.release();
      await new Promise((r) => setTimeout(r, 50));
      expect(svc.s.picks).toEqual([]);
      expect(svc.s.outcomes).toEqual([]);
      expect(seen.length).toBe(before);
    } finally {
      await svc.close();
    }
  });

  it('a protocol the route does not take is refused (400) without a signature or a pick', async () => {
    const svc = await serve('failed');
    try {
      const answer = await upgrade(svc.port, 'spdy/3.1');
      expect(answer).toMatch(/^HTTP\/1\.1 400 /);
      expect(answer).toContain('upgrade-not-enabled:spdy/3.1');
      expect(svc.s.signed).toEqual([]);
      expect(svc.s.picks).toEqual([]);
    } finally {
      await svc.close();
    }
  });
});
