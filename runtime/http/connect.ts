/**
 * `CONNECT host:port` for `tcp+https` routes: decided by `decideConnect` (route, policy), then a TCP
 * tunnel to the route's `tcp://` upstream. svc's 200 is sent only once the upstream connection is
 * open, so a client never writes into a tunnel that does not exist. The route timeout bounds the
 * tunnel, its idle timeout the silence.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import type { Duplex } from 'node:stream';
import { decideConnect } from '../decide/decide.ts';
import type { PlanStore } from '../plan/store.ts';
import type { Parts } from '../run/generation.ts';
import { endSocketWithError } from './error-page.ts';
import type { UpstreamOutcome } from './handler.ts';
import { tunnel } from './tunnel.ts';

/** Creates the `connect` listener of an HTTP/1.1 server. */
export function createConnectHandler(store: PlanStore<Parts>): (req: IncomingMessage, socket: Duplex, head: Buffer) => void {
  return (req, socket, head) => {
    const requestId = randomUUID();
    const gen = store.acquire();
    let released = false;
    socket.on('close', () => {
      if (!released) {
        released = true;
        store.release(gen);
      }
    });
    socket.on('error', () => socket.destroy());
    let picked: { readonly index: number; readonly done: (outcome: UpstreamOutcome) => void } | undefined;
    const pick = gen.forward.pick;
    const d = decideConnect(
      gen.index,
      { method: 'CONNECT', target: req.url ?? '', scheme: 'http', headers: req.headersDistinct, peer: req.socket.remoteAddress ?? '', nowMs: Date.now(), upstreamSample: Math.random() },
      null,
      pick ? { pickUpstream: (r) => (picked = pick(r, req.socket.remoteAddress))?.index } : {},
    );
    if (d.outcome !== 'allow') {
      const reason = d.outcome === 'bad_request' ? d.problem : d.outcome === 'not_found' ? 'no-route' : d.outcome === 'unauthenticated' ? 'sign-in-required' : d.reasons.join(',');
      endSocketWithError(socket, d.status === 200 ? 404 : d.status, requestId, reason, req.headers['accept']);
      return;
    }
    const route = gen.index.body.routes[d.route.index]!;
    const [host = '', port = '0'] = d.upstream.host.split(/:(?=\d+$)/);
    const upstream = connect({ host: host.replace(/^\[(.*)\]$/, '$1'), port: Number(port) });
    tunnel(socket, upstream, head, {
      route,
      requestId,
      accept: req.headers['accept'],
      openEvent: 'connect',
      onOpen: () => socket.write(`HTTP/1.1 200 Connection Established\r\nx-request-id: ${requestId}\r\n\r\n`),
      onClose: (opened) => picked?.done(opened ? {} : { error: 'connect' }),
    });
  };
}
