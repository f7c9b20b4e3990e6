/**
 * A byte tunnel between a client stream and an open upstream socket, shared by upgrades (after the
 * upstream's 101) and CONNECT (after svc's 200): bytes flow both ways with back-pressure; either
 * side closing closes the other. The route's timeout bounds the tunnel's life and its idle timeout
 * its silence (0: none).
 *
 * A tunnel that fails (the upstream connection errs or is reset, a timeout ends it) is cut so that an
 * HTTP/2 client can tell: its stream is reset with CONNECT_ERROR (RFC 9113 §8.5), never with
 * NO_ERROR, which reads as the upstream closing cleanly (docs/security.md S73). An HTTP/1.1 client's
 * connection is closed.
 *
 * INVARIANT (no-bytes-before-gate): callers join only after the gate admitted the request and the
 * upstream switched (101) or the tunnel was confirmed (200); `head` is what the client sent after
 * its request head, relayed only then.
 */
import { constants as http2Constants, type Http2Stream } from 'node:http2';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Route } from '../../compiler/plan/types.ts';

/**
 * Joins `client` and an open `upstream` into one tunnel. `onClose` hears once when it ends, with the
 * bytes the client sent through it (`head` included) and the bytes it received.
 */
export function joinTunnel(client: Duplex, upstream: Duplex, head: Buffer, route: Route, onClose?: (bytesIn: number, bytesOut: number) => void): void {
  let bytesIn = head.length;
  let bytesOut = 0;
  const end = () => {
    upstream.destroy();
    client.destroy();
  };
  const fail = () => {
    upstream.destroy();
    cutTunnel(client);
  };
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    end();
    onClose?.(bytesIn, bytesOut);
  };
  client.on('error', end);
  upstream.on('error', fail);
  client.once('close', close);
  upstream.once('close', close);
  if (onClose) {
    client.on('data', (c: Buffer) => (bytesIn += c.length));
    upstream.on('data', (c: Buffer) => (bytesOut += c.length));
  }
  if (head.length > 0) upstream.write(head);
  client.pipe(upstream);
  upstream.pipe(client);
  if (route.idleTimeoutMs > 0) {
    (upstream as Partial<Socket>).setTimeout?.(route.idleTimeoutMs, fail);
    (client as Partial<Socket>).setTimeout?.(route.idleTimeoutMs, fail);
  }
  if (route.timeoutMs > 0) {
    const t = setTimeout(fail, route.timeoutMs);
    upstream.once('close', () => clearTimeout(t));
  }
}

/** Ends a failed tunnel's client side: an HTTP/2 stream (it has an `rstCode`) reset with CONNECT_ERROR, else destroyed. */
function cutTunnel(client: Duplex): void {
  if ('rstCode' in client && !(client as Http2Stream).closed) return void (client as Http2Stream).close(http2Constants.NGHTTP2_CONNECT_ERROR);
  client.destroy();
}
