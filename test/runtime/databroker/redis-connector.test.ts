/**
 * A Redis socket that fails twice must not end svc: ioredis listens for a socket's errors with
 * `once`, and the second error of a TLS socket (a failed write, then the server's alert) was an
 * uncaught exception in CI. The guarded connectors keep a listener for the socket's whole life.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GuardedStandaloneConnector } from '../../../runtime/databroker/redis-connector.ts';

describe('the guarded Redis connector', () => {
  let server: Server;
  let port = 0;
  const accepted: Socket[] = [];
  beforeAll(async () => {
    server = createServer((s) => accepted.push(s));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as { port: number }).port;
  });
  afterAll(async () => {
    for (const s of accepted) s.destroy();
    await new Promise((r) => server.close(r));
  });

  it('keeps listening after the socket’s first error, so a second one is not thrown', async () => {
    const connector = new GuardedStandaloneConnector({ host: '127.0.0.1', port });
    const stream = await connector.connect(() => undefined);
    // What ioredis does: one `once` listener of its own.
    const seen: Error[] = [];
    stream.once('error', (e: Error) => seen.push(e));
    expect(() => {
      stream.emit('error', new Error('write EPIPE'));
      stream.emit('error', new Error('tlsv1 alert decode error'));
    }).not.toThrow();
    expect(seen.map((e) => e.message)).toEqual(['write EPIPE']);
    connector.disconnect();
    stream.destroy();
  });
});
