/**
 * Binds a server to `host:port` (`host` '' for every address, port 0 for a free one) and resolves
 * with the address it got; rejects with the listen error (EADDRINUSE, EACCES) so a start fails
 * loudly instead of serving nothing.
 */
import type { Server } from 'node:net';

export async function bind(server: Server, want: { readonly host: string; readonly port: number }): Promise<{ host: string; port: number }> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(want.port, want.host === '' ? undefined : want.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const a = server.address();
  return typeof a === 'object' && a ? { host: a.address, port: a.port } : { host: want.host, port: want.port };
}
