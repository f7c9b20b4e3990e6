/**
 * Protocol upgrades (websockets, SPDY) on an HTTP/1.1 listener. An upgrade passes the one gate
 * (gate.ts: canonical request, 421, session, policy, client certificate, identity headers, upstream
 * choice through the route's upstream set and its TLS settings) like any request, and is then allowed only when
 * the route enables that protocol (`allow_websockets`, `allow_spdy`), never before authorization
 * (docs/security.md S20). `h2c` and any other protocol are refused.
 *
 * Smuggling discipline (docs/security.md S21): svc writes its own request head to the upstream first and
 * relays nothing from the client until the upstream has answered `101`. Any other answer is given to
 * the client as a plain response and the connection closes: it never becomes a tunnel, so bytes the
 * client sent behind its upgrade request are never read upstream as a request of their own.
 *
 * The route's timeout bounds the handshake and the tunnel's life, its idle timeout the silence; the
 * global timeouts do not apply (`allow_websockets`, docs/running.md "Websockets and SPDY").
 */
import { SvcError } from '../core/errors.ts';
import { identityFailure } from './identity-failure.ts';
import { randomUUID } from 'node:crypto';
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Route } from '../../compiler/plan/types.ts';
import type { OutgoingHeaders } from '../core/types.ts';
import type { ServedGeneration, ServedStore } from '../generation/generation.ts';
import { endSocketWithError } from '../authn/error-page.ts';
import { admitForStream, type Admission, type GateOptions, type GateResult } from './gate.ts';
import { joinTunnel } from './tunnel.ts';
import { tunnelOpened, type TunnelObserver } from './tunnel-access-lines.ts';
import { observeStream } from './stream-metrics.ts';
import { dropTraceHeaders, type TraceSetup } from '../observe/trace/request-trace.ts';

/** The gate's options, and the tracer of the plan served: an upgrade is not traced, but with tracing on an untrusted client's trace headers are dropped as on a plain request (docs/security.md S44). */
export interface UpgradeOptions extends GateOptions {
  readonly tracing?: { readonly current: TraceSetup | null };
}

/** Creates the `upgrade` listener of an HTTP/1.1 server. */
export function createUpgradeHandler(store: ServedStore, options: UpgradeOptions, observer?: TunnelObserver): (req: IncomingMessage, socket: Duplex, head: Buffer) => void {
  return (req, socket, head) => {
    const requestId = randomUUID();
    // A route that does not take this protocol is refused after the gate, with no upstream picked.
    const entry = { kind: 'upgrade', method: req.method ?? 'GET', target: req.url ?? '/', headers: req.headersDistinct, httpVersion: req.httpVersion, socket: req.socket, rawFields: req.rawHeaders.length >> 1, canForward: (route: Route) => upgradeEnabled(route, req) } as const;
    admitForStream(store, socket, entry, options, (gen, result) => {
      const allowed = result.admitted && result.decision.outcome === 'allow';
      const r = options.observe ? observeStream(options.observe, gen, result, socket, entry.method, allowed ? undefined : refusal(result).status) : result;
      if (r.admitted && r.decision.outcome === 'allow') upgrade(gen, r, req, socket, head, requestId, options, observer);
      else refuse(socket, r, requestId, req.headers['accept'], options);
    });
  };
}

/** Opens the upstream handshake of an admitted upgrade; switches only on the upstream's 101. */
function upgrade(gen: ServedGeneration, a: Admission, req: IncomingMessage, client: Duplex, clientHead: Buffer, requestId: string, options: UpgradeOptions, observer: TunnelObserver | undefined): void {
  const d = a.decision;
  if (d.outcome !== 'allow') return;
  const route = gen.index.body.routes[d.route.index]!;
  if (!upgradeEnabled(route, req)) return endSocketWithError(client, 400, requestId, `upgrade-not-enabled:${upgradeProtocol(req) || 'none'}`, req.headers['accept']);
  // The gate's identity step could not sign the assertion: nothing was picked (gate.ts).
  if (a.identityError !== undefined) {
    const failure = identityFailure(a.identityError);
    return endSocketWithError(client, failure.status, requestId, failure.reason, req.headers['accept']);
  }
  const upstream = a.upstream!;

  // This request's own headers, identity headers applied (gate.ts); one set to undefined (svc's own
  // credentials, taken out) is not sent.
  const headers = d.upstream.headers as OutgoingHeaders;
  if (options.tracing?.current?.trustIncoming === false) dropTraceHeaders(headers);
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined) out[k] = v;
  out['x-request-id'] = requestId;
  out['connection'] = 'Upgrade';
  out['upgrade'] = String(req.headers['upgrade']);
  const u = new URL(d.upstream.url);
  const host = u.hostname.replace(/^\[(.*)\]$/, '$1');
  const base = { method: req.method ?? 'GET', host, port: Number(u.port || (u.protocol === 'https:' ? 443 : 80)), path: `${u.pathname}${u.search}`, headers: out, setHost: false, agent: false as const, ...(upstream.tls.family ? { family: upstream.tls.family } : {}) };
  const t = upstream.tls;
  const up: ClientRequest =
    u.protocol === 'https:'
      ? httpsRequest({
          ...base,
          rejectUnauthorized: !route.tls.skipVerify,
          ...(route.tls.serverName !== null ? { servername: route.tls.serverName } : isIP(host) === 0 ? { servername: host } : {}),
          ...(t.ca !== undefined ? { ca: t.ca } : {}),
          ...(t.cert !== undefined && t.key !== undefined ? { cert: t.cert, key: t.key } : {}),
        })
      : httpRequest(base);
  handshake(up, client, clientHead, requestId, req.headers['accept'], a, route.timeoutMs, (socket, head) => {
    const closed = tunnelOpened(observer, gen, a, client, { kind: 'upgrade', requestId, method: req.method ?? 'GET', host: req.headersDistinct['host']?.[0] ?? '', target: req.url ?? '/', headers: req.headersDistinct, peer: req.socket.remoteAddress ?? '', status: 101, socket: req.socket });
    joinTunnel(client, socket, head, route, closed);
  });
}

/** The protocol an upgrade asks for, lower-case (empty when none). */
function upgradeProtocol(req: IncomingMessage): string {
  return String(req.headers['upgrade'] ?? '').trim().toLowerCase();
}

/** Whether `route` takes the protocol `req` asks to switch to (`allow_websockets`, `allow_spdy`). */
function upgradeEnabled(route: Route, req: IncomingMessage): boolean {
  const protocol = upgradeProtocol(req);
  return (protocol === 'websocket' && route.allowWebsockets) || (protocol.startsWith('spdy/') && route.allowSpdy);
}

/**
 * Sends svc's handshake and waits for the upstream's answer. On 101 the upstream's switch is passed
 * to the client and `switched` joins the tunnel, with the client's buffered bytes relayed only now.
 * Any other answer is the client's plain response, after which both connections close.
 */
function handshake(up: ClientRequest, client: Duplex, clientHead: Buffer, requestId: string, accept: string | undefined, a: Admission, timeoutMs: number, switched: (upstream: Socket, clientHead: Buffer) => void): void {
  const done = a.upstream!.done;
  let answered = false;
  const onClientClose = () => {
    if (!answered) up.destroy();
  };
  client.once('close', onClientClose);
  if (timeoutMs > 0) up.setTimeout(timeoutMs, () => up.destroy(new SvcError('SVC_ERR_UPSTREAM_TIMEOUT', 'upgrade handshake timed out')));
  up.once('upgrade', (res: IncomingMessage, socket: Socket, upstreamHead: Buffer) => {
    answered = true;
    client.off('close', onClientClose);
    socket.setTimeout(0);
    done({ status: 101 });
    client.write(`HTTP/1.1 101 Switching Protocols\r\n${rawHeaderLines(res.rawHeaders)}\r\n`);
    if (upstreamHead.length > 0) client.write(upstreamHead);
    switched(socket, clientHead);
  });
  up.once('response', (res: IncomingMessage) => {
    answered = true;
    done({ status: res.statusCode ?? 0 });
    // Not switched: a plain response, framed by the connection's end (no keep-alive, no tunnel).
    const raw: string[] = [];
    for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) {
      const name = res.rawHeaders[i]!.toLowerCase();
      if (name === 'connection' || name === 'transfer-encoding' || name === 'keep-alive' || name === 'upgrade') continue;
      raw.push(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
    }
    client.write(`HTTP/1.1 ${res.statusCode} ${res.statusMessage ?? ''}\r\n${rawHeaderLines(raw)}x-request-id: ${requestId}\r\nconnection: close\r\n\r\n`);
    res.pipe(client);
    res.once('end', () => client.end());
    res.once('error', () => client.destroy());
  });
  up.once('error', (e: NodeJS.ErrnoException) => {
    if (answered) return client.destroy();
    answered = true;
    const timeout = e.code === 'SVC_ERR_UPSTREAM_TIMEOUT';
    done({ error: timeout ? 'timeout' : 'connect' });
    if (client.writable) endSocketWithError(client, timeout ? 504 : 502, requestId, timeout ? 'upstream-timeout' : 'upstream-unreachable', accept);
  });
  up.end();
}

function rawHeaderLines(raw: readonly string[]): string {
  let s = '';
  for (let i = 0; i + 1 < raw.length; i += 2) s += `${raw[i]}: ${raw[i + 1]}\r\n`;
  return s;
}

/** Answers a refused upgrade on the raw socket: the same statuses a plain request would get. */
function refuse(socket: Duplex, r: GateResult, requestId: string, accept: string | undefined, options: GateOptions): void {
  if (!r.admitted) return endSocketWithError(socket, r.status, requestId, r.problem, accept);
  const d = r.decision;
  if (d.outcome === 'unauthenticated' && d.location !== null) {
    const authn = options.authn;
    const signIn = authn && r.auth && d.device !== true ? authn.signInRedirect(r.auth, d.location) : null;
    const cookies = (signIn?.setCookie ?? []).map((c) => `set-cookie: ${c}\r\n`).join('');
    socket.end(`HTTP/1.1 302 Found\r\nlocation: ${signIn?.location ?? d.location}\r\n${cookies}cache-control: no-store\r\nx-request-id: ${requestId}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
    return;
  }
  const { status, reason } = refusal(r);
  endSocketWithError(socket, status, requestId, reason, accept);
}

/** The status and reason a refused upgrade is answered with (a sign-in redirect: 302). */
function refusal(r: GateResult): { readonly status: number; readonly reason: string } {
  if (!r.admitted) return { status: r.status, reason: r.problem };
  const d = r.decision;
  if (d.outcome === 'unauthenticated' && d.location !== null) return { status: 302, reason: 'sign-in' };
  const reason = d.outcome === 'bad_request' ? d.problem : d.outcome === 'not_found' ? 'no-route' : d.outcome === 'unauthenticated' ? (d.device === true ? 'device-authentication-required' : 'sign-in-required') : d.outcome === 'redirect' ? 'redirect-route' : d.outcome === 'internal' ? 'no-upgrade-endpoint' : d.reasons.join(',') || d.outcome;
  return { status: d.outcome === 'redirect' ? 400 : d.outcome === 'internal' ? 404 : d.status, reason };
}
