/**
 * runtime/grpc/keepalive.ts: svc's clients and servers are built with the keepalive options; a
 * server with svc's options accepts a svc client's pings (no GOAWAY `too_many_pings`, no new
 * connection) and pings back; a client notices a peer that stops answering without closing the
 * connection. Between client and server runs a TCP relay that counts HTTP/2 frames, and can go
 * silent (forward nothing, close nothing: a machine that vanished). Intervals are shortened through
 * the option builders; nothing asserts a duration.
 */
import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../../runtime/databroker/memory-store.ts';
import { clientChannelOptions, GrpcClient } from '../../../runtime/grpc/client.ts';
import { serviceCredentialKey } from '../../../runtime/grpc/credential.ts';
import { clientKeepaliveOptions, KEEPALIVE, serverKeepaliveOptions, type KeepaliveTiming } from '../../../runtime/grpc/keepalive.ts';
import { DATABROKER_SERVICE, databrokerService } from '../../../runtime/grpc/proto.ts';
import { serverOptions } from '../../../runtime/grpc/server.ts';
import { GRPC_TEST_SECRET, startBroker } from '../databroker/grpc-support.ts';

const cleanup: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

const PING = 0x6;
const GOAWAY = 0x7;
const ACK = 0x1;
const PREFACE_BYTES = 24; // "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

/** Counts the HTTP/2 frames of one direction of a plaintext connection, by type and ACK flag. */
function frameCounter(skip: number): { feed(chunk: Buffer): void; count(type: number, ack: boolean): number } {
  let buffered = Buffer.alloc(0);
  let toSkip = skip;
  const counts = new Map<string, number>();
  return {
    feed(chunk) {
      buffered = Buffer.concat([buffered, chunk]);
      const skipped = Math.min(toSkip, buffered.length);
      buffered = buffered.subarray(skipped);
      toSkip -= skipped;
      while (buffered.length >= 9) {
        const length = buffered.readUIntBE(0, 3);
        if (buffered.length < 9 + length) break;
        const key = `${buffered[3]}/${(buffered[4]! & ACK) === ACK}`;
        counts.set(key, (counts.get(key) ?? 0) + 1);
        buffered = buffered.subarray(9 + length);
      }
    },
    count: (type, ack) => counts.get(`${type}/${ack}`) ?? 0,
  };
}

interface Relay {
  readonly port: number;
  /** Connections accepted so far. */
  connections(): number;
  /** Frames from the client and from the server (of every connection). */
  readonly fromClient: ReturnType<typeof frameCounter>[];
  readonly fromServer: ReturnType<typeof frameCounter>[];
  /** From now on nothing is forwarded either way, and no connection is closed. */
  goSilent(): void;
}

/** A TCP relay on loopback to `target`. */
async function startRelay(target: number): Promise<Relay> {
  const sockets = new Set<Socket>();
  const fromClient: ReturnType<typeof frameCounter>[] = [];
  const fromServer: ReturnType<typeof frameCounter>[] = [];
  let silent = false;
  let accepted = 0;
  const server: Server = createServer((client) => {
    accepted++;
    const upstream = connect(target, '127.0.0.1');
    const up = frameCounter(PREFACE_BYTES);
    const down = frameCounter(0);
    fromClient.push(up);
    fromServer.push(down);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => sockets.delete(s));
    }
    client.on('data', (c: Buffer) => {
      if (silent) return;
      up.feed(c);
      upstream.write(c);
    });
    upstream.on('data', (c: Buffer) => {
      if (silent) return;
      down.feed(c);
      client.write(c);
    });
    client.on('end', () => !silent && upstream.end());
    upstream.on('end', () => !silent && client.end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup.push(
    () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  );
  return {
    port: (server.address() as AddressInfo).port,
    connections: () => accepted,
    fromClient,
    fromServer,
    goSilent: () => {
      silent = true;
    },
  };
}

async function until(what: () => boolean): Promise<void> {
  while (!what()) await new Promise((r) => setTimeout(r, 10));
}

function client(url: string, keepalive: KeepaliveTiming): GrpcClient {
  const c = new GrpcClient(DATABROKER_SERVICE, databrokerService(), { urls: [url], credentialKey: serviceCredentialKey(GRPC_TEST_SECRET), tls: null, timeoutMs: 5_000, dnsRoundRobin: true, keepalive });
  cleanup.push(() => c.close());
  return c;
}

async function broker(keepalive?: KeepaliveTiming) {
  const store = new MemoryStore();
  const b = await startBroker(store, keepalive ? { keepalive } : {});
  cleanup.push(() => store.close(), () => b.stop());
  return b;
}

const isRevoked = (c: GrpcClient) => c.unary<{ id: string }, { value: boolean }>('IsRevoked', { id: 'x' });

describe('gRPC keepalive', () => {
  it("svc's clients and servers are built with the keepalive options (30 s, answered within 10 s)", () => {
    expect(KEEPALIVE).toEqual({ timeMs: 30_000, timeoutMs: 10_000 });
    expect(clientKeepaliveOptions()).toEqual({ 'grpc.keepalive_time_ms': 30_000, 'grpc.keepalive_timeout_ms': 10_000, 'grpc.keepalive_permit_without_calls': 1 });
    expect(serverKeepaliveOptions()).toEqual({ 'grpc.keepalive_time_ms': 30_000, 'grpc.keepalive_timeout_ms': 10_000 });
    expect(clientChannelOptions({ tls: null, dnsRoundRobin: true })).toMatchObject(clientKeepaliveOptions());
    expect(clientChannelOptions({ tls: null, dnsRoundRobin: false })).toMatchObject(clientKeepaliveOptions());
    expect(serverOptions({})).toMatchObject(serverKeepaliveOptions());
    // The builders shorten both together (what the tests below use).
    expect(clientKeepaliveOptions({ timeMs: 50, timeoutMs: 20 })).toMatchObject({ 'grpc.keepalive_time_ms': 50, 'grpc.keepalive_timeout_ms': 20 });
    expect(serverKeepaliveOptions({ timeMs: 50, timeoutMs: 20 })).toMatchObject({ 'grpc.keepalive_time_ms': 50, 'grpc.keepalive_timeout_ms': 20 });
  });

  it("a server with svc's options accepts a svc client's pings, idle or not, on one connection, and pings back", async () => {
    const fast = { timeMs: 20, timeoutMs: 5_000 };
    const b = await broker(fast);
    const relay = await startRelay(b.port);
    const c = client(`http://127.0.0.1:${relay.port}`, fast);
    await isRevoked(c);
    // The channel idles (no call open): the client keeps pinging, the server keeps answering.
    await until(() => (relay.fromServer[0]?.count(PING, true) ?? 0) >= 20 && (relay.fromClient[0]?.count(PING, true) ?? 0) >= 5);
    await isRevoked(c);
    expect(relay.fromClient[0]!.count(PING, false)).toBeGreaterThanOrEqual(20);
    expect(relay.fromServer[0]!.count(PING, false)).toBeGreaterThanOrEqual(5); // the server's own pings, answered above
    expect(relay.fromServer[0]!.count(GOAWAY, false)).toBe(0);
    expect(relay.connections()).toBe(1);
  });

  it('a client notices a peer that went silent without closing: its Watch stream ends UNAVAILABLE', async () => {
    const b = await broker();
    const relay = await startRelay(b.port);
    const c = client(`http://127.0.0.1:${relay.port}`, { timeMs: 100, timeoutMs: 1_000 });
    const stream = await c.serverStream<{ origin: string }, { ready?: object }>('Watch', { origin: 'keepalive-test' });
    const ended = new Promise<grpc.StatusObject>((resolve) => stream.on('status', resolve));
    stream.on('error', () => undefined);
    await new Promise<void>((resolve) => stream.once('data', () => resolve()));
    // Pings were answered while the peer was there.
    await until(() => (relay.fromServer[0]?.count(PING, true) ?? 0) >= 2);
    relay.goSilent();
    // No deadline on Watch: without keepalive this would wait for ever.
    expect((await ended).code).toBe(grpc.status.UNAVAILABLE);
  });
});
