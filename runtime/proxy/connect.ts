/**
 * `CONNECT host:port` for `tcp+https` routes, over HTTP/1.1 and HTTP/2 (RFC 9113 §8.5): the one
 * gate (gate.ts: 421, session from the programmatic bearer token, policy, client certificate,
 * upstream choice through the route's upstream set) decides, then a TCP tunnel to the route's
 * `tcp://` upstream. svc's 200 is sent only once the upstream connection is open, and nothing from
 * the client is relayed before it, so a client never writes into a tunnel that does not exist.
 * The route timeout bounds the tunnel, its idle timeout the silence.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import { connect } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Route } from '../../compiler/plan/types.ts';
import type { ServedStore } from '../generation/generation.ts';
import { endSocketWithError, sendError } from '../authn/error-page.ts';
import { admitForStream, type Admission, type GateOptions, type GateResult } from './gate.ts';
import { joinTunnel } from './tunnel.ts';
import { tunnelOpened, tunnelRefused, type TunnelObserver } from './tunnel-access-lines.ts';
import { observeStream } from './stream-metrics.ts';

/** What a CONNECT the gate did not allow is answered with. */
function refusal(r: GateResult): { readonly status: number; readonly reason: string } {
  if (!r.admitted) return { status: r.status, reason: r.problem };
  const d = r.decision;
  const reason = d.outcome === 'bad_request' ? d.problem : d.outcome === 'not_found' ? 'no-route' : d.outcome === 'unauthenticated' ? 'sign-in-required' : d.reasons.join(',') || d.outcome;
  // `internal` (svc's own endpoints) answers 200 to a request, but there is no endpoint to tunnel to.
  return { status: d.status === 200 ? 404 : d.status, reason };
}

/**
 * Creates the `connect` listener of a server. Node calls it with `(req, socket, head)` for an
 * HTTP/1.1 CONNECT and with `(req, res)` for an HTTP/2 one.
 */
export function createConnectHandler(store: ServedStore, options: GateOptions, observer?: TunnelObserver): (req: IncomingMessage | Http2ServerRequest, second: Duplex | Http2ServerResponse, head?: Buffer) => void {
  return (req, second, head) => {
    const requestId = randomUUID();
    const started = performance.now();
    const h2 = req.httpVersionMajor === 2;
    // HTTP/2: the tunnel is the request's stream; HTTP/1.1: the connection itself.
    const client: Duplex = h2 ? (req as Http2ServerRequest).stream : (second as Duplex);
    const accept = typeof req.headers['accept'] === 'string' ? req.headers['accept'] : undefined;
    const authority = h2 ? String(req.headers[':authority'] ?? '') : (req.url ?? '');
    const headers = (req as IncomingMessage).headersDistinct ?? distinct(req.headers);
    const entry = { kind: 'connect', method: 'CONNECT', target: authority, headers, httpVersion: req.httpVersion, socket: req.socket, rawFields: req.rawHeaders.length >> 1 } as const;
    admitForStream(store, client, entry, options, (gen, result) => {
      const allowed = result.admitted && result.decision.outcome === 'allow';
      const r = options.observe ? observeStream(options.observe, gen, result, client, 'CONNECT', allowed ? undefined : refusal(result).status, 200) : result;
      if (!r.admitted || r.decision.outcome !== 'allow') {
        const { status, reason } = refusal(r);
        tunnelRefused(observer, gen, r, { kind: 'tunnel', requestId, method: 'CONNECT', host: authority, target: authority, headers, peer: req.socket?.remoteAddress ?? '', status, socket: req.socket }, started);
        if (h2) sendError(second as Http2ServerResponse, status, requestId, reason, accept, false);
        else endSocketWithError(client, status, requestId, reason, accept);
        return;
      }
      const opened = () => tunnelOpened(observer, gen, r, client, { kind: 'tunnel', requestId, method: 'CONNECT', host: authority, target: authority, headers, peer: req.socket?.remoteAddress ?? '', status: 200, socket: req.socket });
      open(gen.index.body.routes[r.decision.route.index]!, r, client, head ?? Buffer.alloc(0), opened, (status) => {
        if (h2) {
          const res = second as Http2ServerResponse;
          if (status === 200) res.stream.respond({ ':status': 200, 'x-request-id': requestId });
          else sendError(res, status, requestId, 'upstream-unreachable', accept, false);
        } else if (status === 200) client.write(`HTTP/1.1 200 Connection Established\r\nx-request-id: ${requestId}\r\n\r\n`);
        else endSocketWithError(client, status, requestId, 'upstream-unreachable', accept);
      });
    });
  };
}

/** Opens the upstream of an admitted CONNECT; `answer` tells the client 200 (then the tunnel) or 502. */
function open(route: Route, a: Admission, client: Duplex, head: Buffer, opened: () => (bytesIn: number, bytesOut: number) => void, answer: (status: 200 | 502) => void): void {
  const d = a.decision;
  if (d.outcome !== 'allow') return;
  const chosen = a.upstream!;
  const [host = '', port = '0'] = d.upstream.host.split(/:(?=\d+$)/);
  const upstream = connect({ host: host.replace(/^\[(.*)\]$/, '$1'), port: Number(port), ...(chosen.tls.family ? { family: chosen.tls.family } : {}) });
  const onClientClose = () => upstream.destroy();
  client.once('close', onClientClose);
  upstream.once('error', () => {
    chosen.done({ error: 'connect' });
    if (client.writable) answer(502);
    else client.destroy();
  });
  upstream.once('connect', () => {
    client.off('close', onClientClose);
    upstream.removeAllListeners('error');
    answer(200);
    const closed = opened();
    joinTunnel(client, upstream, head, route, (bytesIn, bytesOut) => {
      chosen.done({});
      closed(bytesIn, bytesOut);
    });
  });
}

function distinct(h: Http2ServerRequest['headers']): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined) out[k] = Array.isArray(v) ? v : [v];
  return out;
}
