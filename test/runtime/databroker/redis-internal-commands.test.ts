/**
 * ioredis sends some commands of its own without a handler (SELECT and SUBSCRIBE again when a
 * reconnection is ready); a connection closed at that moment rejects them. svc's client classes
 * (redis-waits.ts meteredClients) mark every command's rejection handled, so svc stopping as Redis
 * returns does not end the process with an unhandled rejection; a caller still gets its own rejection.
 */
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ConnectionWaits, meteredClients } from '../../../runtime/databroker/redis-waits.ts';
import { eventually } from './store-contract.ts';

describe('svc’s Redis client classes', () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  afterEach(() => {
    process.off('unhandledRejection', onUnhandled);
    unhandled.length = 0;
  });

  it('a command nobody awaits, rejected by a connection that closes, is no unhandled rejection; an awaited one still rejects', { timeout: 20_000 }, async () => {
    // A server that answers +OK to the client's handshake, then nothing, and closes when told to.
    const sockets: Socket[] = [];
    let answering = true;
    const server = createServer((socket) => {
      sockets.push(socket);
      socket.on('data', (d: Buffer) => {
        if (answering) for (const _ of d.toString().matchAll(/^\*\d+\r\n/gm)) socket.write('+OK\r\n');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    process.on('unhandledRejection', onUnhandled);
    const { Redis } = meteredClients(new ConnectionWaits());
    // No ready check: the client is ready once connected, as after a reconnection's handshake.
    const client = new Redis({ host: '127.0.0.1', port: (server.address() as AddressInfo).port, enableReadyCheck: false, retryStrategy: () => null, maxRetriesPerRequest: 0 });
    client.on('error', () => undefined);
    try {
      await eventually(() => client.status === 'ready', 10_000);
      answering = false;
      // As ioredis's own SELECT again on ready: sent on a ready connection, never awaited.
      void client.select(1);
      const awaited = client.get('k');
      sockets[0]!.destroy();
      await expect(awaited).rejects.toThrow(/Connection is closed/);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(unhandled).toEqual([]);
    } finally {
      client.disconnect();
      server.close();
    }
  });
});
