/**
 * A byte tunnel between a client socket and an upstream socket, shared by upgrades and CONNECT:
 * once the upstream is open, `onOpen` writes the protocol's preamble and the client's buffered
 * `head` follows; then bytes flow both ways. Either side closing closes the other. The route's
 * timeout bounds the tunnel's life and its idle timeout its silence (0: none). An upstream that
 * fails before sending anything gets the client a 502 page.
 */
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Route } from '../../compiler/plan/types.ts';
import { endSocketWithError } from './error-page.ts';

export interface TunnelOptions {
  readonly route: Route;
  readonly requestId: string;
  readonly accept: string | undefined;
  /** The event that says the upstream is open: `connect`, or `secureConnect` for TLS. */
  readonly openEvent: 'connect' | 'secureConnect';
  /** Writes what must precede the client's bytes (a 200 to the client, a handshake upstream). */
  readonly onOpen: () => void;
  /** Told once when the tunnel ends: whether the upstream ever opened. */
  readonly onClose?: (opened: boolean) => void;
}

/** Joins `client` and `upstream` into one tunnel. */
export function tunnel(client: Duplex, upstream: Socket, head: Buffer, o: TunnelOptions): void {
  let opened = false;
  const end = () => {
    upstream.destroy();
    client.destroy();
  };
  upstream.once(o.openEvent, () => {
    opened = true;
    o.onOpen();
    if (head.length > 0) upstream.write(head);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  upstream.on('error', () => {
    if (!upstream.readableDidRead && client.writable) endSocketWithError(client, 502, o.requestId, 'upstream-unreachable', o.accept);
    else client.destroy();
  });
  upstream.once('close', () => o.onClose?.(opened));
  client.on('close', () => upstream.destroy());
  upstream.on('close', () => client.destroy());
  if (o.route.idleTimeoutMs > 0) {
    upstream.setTimeout(o.route.idleTimeoutMs, end);
    (client as Partial<Socket>).setTimeout?.(o.route.idleTimeoutMs, end);
  }
  if (o.route.timeoutMs > 0) {
    const t = setTimeout(end, o.route.timeoutMs);
    upstream.once('close', () => clearTimeout(t));
  }
}
