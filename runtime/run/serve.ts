/**
 * The listener of `svc run`: plain HTTP with `insecure_server` (TLS listeners: runtime/listen/),
 * strict parsing (no lenient flags: SECURITY.md S21), the global timeouts applied so a slow client
 * cannot hold a connection forever, and upgrades/CONNECT refused until their routes are served.
 */
import { createServer, type Server } from 'node:http';
import type { PlanSettings } from '../../compiler/plan/types.ts';
import { createHandler, type ForwardState, type HandlerOptions } from '../http/handler.ts';
import { createConnectHandler } from '../http/connect.ts';
import { createUpgradeHandler } from '../http/upgrade.ts';
import type { PlanStore } from '../plan/store.ts';

export interface ServeOptions extends Omit<HandlerOptions, 'scheme'> {
  /** Overrides `settings.server.address` (tests listen on port 0). */
  readonly listen?: { readonly host: string; readonly port: number };
}

export interface Listening {
  readonly server: Server;
  readonly address: { readonly host: string; readonly port: number };
  close(): Promise<void>;
}

/** The Node server options that carry the plan's global timeouts and parser strictness. */
export function serverOptions(settings: PlanSettings) {
  const s = settings.server;
  return {
    insecureHTTPParser: false,
    // RFC 9110 allows it; we refuse to guess which of two framings the upstream will believe (S21).
    requireHostHeader: true,
    maxHeaderSize: 16 * 1024,
    // timeout_read: the whole request head and body must arrive within it (0: none).
    requestTimeout: s.timeoutReadMs,
    headersTimeout: s.timeoutReadMs === 0 ? 60_000 : Math.min(s.timeoutReadMs, 60_000),
    keepAliveTimeout: s.timeoutIdleMs === 0 ? 5_000 : s.timeoutIdleMs,
    connectionsCheckingInterval: 1_000,
  };
}

/** Starts the listener of a store's plan. Resolves once it listens. */
export async function serve(store: PlanStore<ForwardState>, options: ServeOptions = {}): Promise<Listening> {
  const settings = store.current.plan.body.settings;
  if (!settings.server.insecure) {
    throw new Error('TLS listeners are not served yet: set insecure_server (behind a TLS-terminating ingress)');
  }
  const server = createServer(serverOptions(settings), createHandler(store, { ...options, scheme: 'http' }));
  if (settings.server.timeoutWriteMs > 0) server.setTimeout(settings.server.timeoutWriteMs);
  // Upgrades only where the route enables them, after authorization; never h2c (S20).
  server.on('upgrade', createUpgradeHandler(store, 'http'));
  // CONNECT host:port: tunnels of `tcp+https` routes, after authorization.
  server.on('connect', createConnectHandler(store));
  server.on('clientError', (_err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
    else socket.destroy();
  });
  const want = options.listen ?? settings.server.address;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(want.port, want.host === '' ? undefined : want.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const a = server.address();
  const address = typeof a === 'object' && a ? { host: a.address, port: a.port } : { host: want.host, port: want.port };
  return {
    server,
    address,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
