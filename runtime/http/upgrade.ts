/**
 * Protocol upgrades (websockets, SPDY) on an HTTP/1.1 listener. An upgrade is decided like any
 * request (route, policy) and then allowed only when the route enables that protocol
 * (`allow_websockets`, `allow_spdy`) — after authorization, never before (SECURITY.md S20). `h2c`
 * and any other protocol are refused. The upstream handshake is written from the decision's
 * upstream request (the same path, Host and headers a plain request would get) plus the upgrade
 * headers; then bytes flow both ways. The route's timeout bounds the tunnel's life and its idle
 * timeout its silence; the global timeouts do not apply (spec 2.7 `allow_websockets`).
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { connect as netConnect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { connect as tlsConnect } from 'node:tls';
import type { AuthState } from '../authn/auth-state.ts';
import { routeHost } from '../authn/forward-auth.ts';
import type { ResolvedSession } from '../authn/session-cache.ts';
import type { Authn } from '../authn/service.ts';
import { decide } from '../decide/decide.ts';
import type { Decision, OutgoingHeaders } from '../decide/types.ts';
import type { Generation, PlanStore } from '../plan/store.ts';
import type { Parts } from '../run/generation.ts';
import { endSocketWithError } from './error-page.ts';
import { tunnel } from './tunnel.ts';

/** Creates the `upgrade` listener of an HTTP/1.1 server. */
export function createUpgradeHandler(store: PlanStore<Parts>, scheme: 'http' | 'https', authn?: Authn): (req: IncomingMessage, socket: Duplex, head: Buffer) => void {
  return (req, socket, head) => {
    const requestId = randomUUID();
    const gen = store.acquire();
    let released = false;
    const release = () => {
      if (!released) {
        released = true;
        store.release(gen);
      }
    };
    socket.on('close', release);
    socket.on('error', () => socket.destroy());
    const state = authn ? gen.auth : undefined;
    const lookup = authn && state ? authn.resolve(state, req.headersDistinct, req.url ?? '/') : null;
    if (lookup instanceof Promise) void lookup.then((session) => upgrade(gen, req, socket, head, requestId, scheme, session, state, authn));
    else upgrade(gen, req, socket, head, requestId, scheme, lookup, state, authn);
  };
}

/** Decides an upgrade with its session, then tunnels it to the upstream or refuses it. */
function upgrade(gen: Generation<Parts>, req: IncomingMessage, socket: Duplex, headBytes: Buffer, requestId: string, scheme: 'http' | 'https', session: ResolvedSession | null, state: AuthState | undefined, authn: Authn | undefined): void {
  if (socket.destroyed) return;
  const protocol = String(req.headers['upgrade'] ?? '').trim().toLowerCase();
  const d = decide(gen.index, { method: req.method ?? 'GET', target: req.url ?? '/', scheme, headers: req.headersDistinct, peer: req.socket.remoteAddress ?? '', nowMs: Date.now(), upstreamSample: Math.random() }, session?.identity ?? null, { reasons: false });
  if (d.outcome !== 'allow') return refuse(socket, d, requestId, req.headers['accept'], authn && state ? (l) => authn.signInLocation(state, l) : undefined);
  const route = gen.index.body.routes[d.route.index]!;
  const enabled = (protocol === 'websocket' && route.allowWebsockets) || (protocol.startsWith('spdy/') && route.allowSpdy);
  if (!enabled) return endSocketWithError(socket, 400, requestId, `upgrade-not-enabled:${protocol || 'none'}`, req.headers['accept']);

  const u = new URL(d.upstream.url);
  const port = Number(u.port || (u.protocol === 'https:' ? 443 : 80));
  const host = u.hostname.replace(/^\[(.*)\]$/, '$1');
  const upstream: Socket =
    u.protocol === 'https:'
      ? tlsConnect({ host, port, servername: route.tls.serverName ?? host, rejectUnauthorized: !route.tls.skipVerify, ALPNProtocols: ['http/1.1'] })
      : netConnect({ host, port });
  const headers: OutgoingHeaders = { ...d.upstream.headers };
  const identity = authn && state ? authn.upstreamIdentity(state, session, d.route.index, d.upstream.assertion, routeHost(gen.index, d.route.index), headers) : undefined;
  const lines = [`${req.method ?? 'GET'} ${u.pathname}${u.search} HTTP/1.1`];
  const head = () => {
    // A header set to undefined (svc's own credentials, taken out) is not sent.
    for (const [k, v] of Object.entries(headers)) if (v !== undefined) for (const one of Array.isArray(v) ? v : [v]) lines.push(`${k}: ${one}`);
    lines.push(`x-request-id: ${requestId}`, 'connection: Upgrade', `upgrade: ${req.headers['upgrade']}`);
    return `${lines.join('\r\n')}\r\n\r\n`;
  };
  tunnel(socket, upstream, headBytes, {
    route,
    requestId,
    accept: req.headers['accept'],
    openEvent: u.protocol === 'https:' ? 'secureConnect' : 'connect',
    // The assertion is signed (when not cached) while the upstream connection opens.
    onOpen: () => {
      if (identity === undefined) upstream.write(head());
      else identity.then(() => upstream.write(head()), () => upstream.destroy());
    },
  });
}

function refuse(socket: Duplex, d: Decision, requestId: string, accept: string | undefined, sign?: (location: string) => string | null): void {
  if (d.outcome === 'unauthenticated' && d.location !== null) {
    socket.end(`HTTP/1.1 302 Found\r\nlocation: ${sign?.(d.location) ?? d.location}\r\ncache-control: no-store\r\nx-request-id: ${requestId}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
    return;
  }
  const reason = d.outcome === 'bad_request' ? d.problem : d.outcome === 'not_found' ? 'no-route' : d.outcome === 'unauthenticated' ? 'sign-in-required' : d.outcome === 'redirect' ? 'redirect-route' : d.reasons.join(',') || d.outcome;
  const status = d.outcome === 'redirect' ? 400 : d.status === 200 ? 404 : d.status;
  endSocketWithError(socket, status, requestId, reason, accept);
}
