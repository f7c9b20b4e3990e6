/**
 * The listeners of `svc run`: HTTPS (certificates chosen by SNI; HTTP/2 by ALPN when `codec_type`
 * allows it), or plain HTTP with `insecure_server`; the PROXY protocol in front when configured;
 * the http→https redirect server on `http_redirect_addr`. Parsing is strict (no lenient flags:
 * docs/security.md S21) and the global timeouts apply, so a slow client cannot hold a connection forever.
 *
 * The listener shape (address, TLS or not, codec, PROXY protocol, redirect address) is fixed when
 * svc starts; a reload that changes it is refused with "restart required" (`listenerChange`).
 */
import { createServer, type Server } from 'node:http';
import { createSecureServer, type Http2SecureServer, type ServerHttp2Session, type ServerHttp2Stream } from 'node:http2';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { Server as NetServer, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import type { PlanSettings } from '../../compiler/plan/types.ts';
import { createConnectHandler } from './connect.ts';
import { createHandler, type HandlerOptions } from './handler.ts';
import type { GateOptions } from './gate.ts';
import { MAX_HEADER_FIELDS } from './door.ts';
import { createUpgradeHandler } from './upgrade.ts';
import { secureContextOptions } from '../tls/material.ts';
import { createProxyProtocolServer } from './proxy-protocol.ts';
import type { ChallengeResponder } from '../tls/acme/challenges.ts';
import { answerHttp01 } from '../tls/acme/http-01.ts';
import { httpsRedirectLocation } from '../request/redirect.ts';
import { isAcmeTlsAlpn, withTlsAlpnChallenges } from '../tls/acme/tls-alpn.ts';
import type { OcspStapler } from '../tls/ocsp/stapler.ts';
import { Authn } from '../authn/service.ts';
import type { GraceObserver } from '../sessions/outage-grace.ts';
import { bind } from '../tls/bind.ts';
import type { SessionStore } from '../core/session-store.ts';
import type { SessionRefresher } from '../sessions/session-refresher.ts';
import type { ServedStore } from '../generation/generation.ts';
import { InFlight } from './in-flight.ts';
import { guardSessions, MAX_CONCURRENT_STREAMS, resetStream } from './http2-sessions.ts';

export interface ServeOptions extends Omit<HandlerOptions, 'scheme' | 'authn' | 'inFlight'> {
  /** Overrides `settings.server.address` (tests listen on port 0). */
  readonly listen?: { readonly host: string; readonly port: number };
  /**
   * Where sessions live: the store the process opened (memory, or Redis: `databroker_storage_type`),
   * or a cluster worker's view of the primary's. The caller owns it: the listeners never close it.
   */
  readonly sessionStore: SessionStore;
  /** Refreshes sessions; `svc run` shares it with the identity manager (runtime/sessions/). */
  readonly sessionRefresher?: SessionRefresher;
  /** `svc run --store-outage-grace` in ms (runtime/sessions/outage-grace.ts; default 30 s, 0: off). */
  readonly storeOutageGraceMs?: number;
  /** Counts the requests served from that grace (`svc_sessions_served_stale_total`). */
  readonly graceObserver?: GraceObserver;
  /** Pending ACME challenges to answer (`autocert`): TLS-ALPN-01 here, HTTP-01 on the redirect listener. */
  readonly acmeChallenges?: ChallengeResponder;
  /** OCSP stapling (`autocert`): answers the TLS listener's status requests (runtime/tls/ocsp/). */
  readonly ocsp?: OcspStapler;
  /**
   * The main listener's connections are accepted by another process (the cluster primary,
   * runtime/process/cluster.ts) and handed over with `Listening.accept`; this is the address it listens
   * on. The main listener then binds nothing here (the redirect listener still does).
   */
  readonly handed?: { readonly host: string; readonly port: number };
}

export interface Listening {
  readonly server: Server | HttpsServer | Http2SecureServer;
  readonly address: { readonly host: string; readonly port: number };
  /** The redirect server's address, when `http_redirect_addr` is set. */
  readonly redirectAddress: { readonly host: string; readonly port: number } | null;
  /**
   * Serves a connection another process accepted (`ServeOptions.handed`), as if this listener had
   * accepted it: also while draining (it gets `Connection: close` like every other); once the
   * listeners are closed it is destroyed.
   */
  accept(socket: Socket): void;
  /** Stops at once: every connection closed, whatever it was doing. */
  close(): Promise<void>;
  /**
   * Stops gracefully (SIGTERM): stop accepting, let the requests in flight finish for up to
   * `timeoutMs`, then cut what still runs (its access line says `cutBy: shutdown`), close the
   * tunnels and upgrades, and close every connection.
   */
  drain(timeoutMs: number): Promise<void>;
}

/** The longest wait for a PROXY protocol header (`use_proxy_protocol`); `timeout_read` when shorter. */
const PROXY_HEADER_TIMEOUT_MS = 5_000;

/**
 * The Node HTTP/1.1 server options that carry the plan's global timeouts and parser strictness. The
 * same values are set on every HTTP/1.1 connection, whatever the codec: an `auto` listener's
 * HTTP/1.1 fallback takes them as its HTTP/2 server's `http1Options` (`serve`).
 */
export function serverOptions(settings: PlanSettings) {
  const s = settings.server;
  return {
    insecureHTTPParser: false,
    requireHostHeader: true,
    maxHeaderSize: 16 * 1024,
    // A request without Content-Length or Transfer-Encoding has no body (RFC 9112 §6.3): Node hands
    // it an already-ended body stream instead of running the stream's life cycle, so it emits no
    // 'data', 'end' or 'close' (svc reads none for such a request: handler.ts forwards no body,
    // svc's own endpoints read an empty one). Node reads it only when a server is created.
    optimizeEmptyRequests: true,
    // timeout_read: the whole request head and body must arrive within it (0: none).
    requestTimeout: s.timeoutReadMs,
    headersTimeout: s.timeoutReadMs === 0 ? 60_000 : Math.min(s.timeoutReadMs, 60_000),
    keepAliveTimeout: s.timeoutIdleMs === 0 ? 5_000 : s.timeoutIdleMs,
    connectionsCheckingInterval: Math.min(1_000, s.timeoutReadMs || 1_000),
  };
}

/**
 * The TLS handshake's limit: a connection that has not finished its handshake (or never sent a
 * ClientHello) has sent no request and done nothing, so both `timeout_read` and `timeout_idle` bound
 * it: the smaller one that is set; Node's default (120 s) when neither is.
 */
export function handshakeTimeoutMs(settings: PlanSettings): number {
  const set = [settings.server.timeoutReadMs, settings.server.timeoutIdleMs].filter((ms) => ms > 0);
  return set.length === 0 ? 120_000 : Math.min(...set);
}

/**
 * The global timeouts on an HTTP/2 listener (`codec_type` `auto` or `http2`), as HTTP/1.1 has them:
 * - its HTTP/1.1 fallback (`auto`) has `serverOptions`, given when the server is created (`serve`):
 *   without them it would cut slow heads only after 60 s, and never an idle connection;
 * - `timeout_idle`: a session without traffic for that long is closed gracefully (GOAWAY: open
 *   streams finish), and destroyed when it is still open after a second period;
 * - `timeout_read`: the session's preface and first request must arrive within it
 *   (http2-sessions.ts), and each stream's request (head and body) too, else the stream is answered
 *   408 (or reset once its response has started);
 * - `timeout_write`: a stream without traffic for that long is reset, and an HTTP/1.1 fallback
 *   connection closed (not through `server.setTimeout`, which Node would also apply to sessions).
 * Must run before the server listens (Node reads the connection-checking interval then).
 */
function applyHttp2Timeouts(server: Http2SecureServer, settings: PlanSettings): void {
  const s = settings.server;
  if (s.codecType === 'auto') {
    if (s.timeoutWriteMs > 0) {
      server.on('secureConnection', (socket: TLSSocket) => {
        if (socket.alpnProtocol !== 'h2') socket.setTimeout(s.timeoutWriteMs, () => socket.destroy());
      });
    }
  }
  server.on('session', (session: ServerHttp2Session) => {
    if (s.timeoutIdleMs > 0) session.setTimeout(s.timeoutIdleMs, () => (session.closed ? session.destroy() : session.close()));
  });
  server.on('stream', (stream: ServerHttp2Stream) => {
    if (s.timeoutWriteMs > 0) stream.setTimeout(s.timeoutWriteMs, () => resetStream(stream));
    // The request is whole once the client has ended its side of the stream (END_STREAM), whether
    // or not the body was read: a response may stream on for as long as it needs after that.
    if (s.timeoutReadMs <= 0 || stream.endAfterHeaders) return;
    const timer = setTimeout(() => {
      if (stream.destroyed || stream.state.remoteClose) return;
      if (!stream.headersSent) stream.respond({ ':status': 408 }, { endStream: true });
      resetStream(stream);
    }, s.timeoutReadMs);
    timer.unref();
    const clear = () => clearTimeout(timer);
    stream.once('end', clear);
    stream.once('close', clear);
  });
}

/**
 * Starts the listeners of a store's generations. Resolves once they listen. The TLS material is the
 * generation's (`gen.tls`): the SNI choice reads the current generation's at each handshake, and a
 * request's checks read the generation it acquired.
 */
export async function serve(store: ServedStore, options: ServeOptions): Promise<Listening> {
  const settings = store.current.plan.body.settings;
  const insecure = settings.server.insecure;
  const sessions = options.sessionStore;
  const authn = new Authn(sessions, { scheme: insecure ? 'http' : 'https', ...(options.log ? { log: options.log } : {}), ...(options.sessionRefresher ? { refresher: options.sessionRefresher } : {}), ...(options.storeOutageGraceMs !== undefined ? { storeOutageGraceMs: options.storeOutageGraceMs } : {}), ...(options.graceObserver ? { graceObserver: options.graceObserver } : {}) });

  let server: Server | HttpsServer | Http2SecureServer;
  const inFlight = new InFlight();
  const handler = createHandler(store, { ...options, scheme: insecure ? 'http' : 'https', authn, inFlight });
  if (insecure) {
    server = createServer(serverOptions(settings), handler);
  } else {
    // The listener's plan is fixed (listenerChange), so a TLS listener's generations all have TLS material.
    const plain = secureContextOptions(settings, { current: () => store.current.tls!.material });
    const secure = options.acmeChallenges ? withTlsAlpnChallenges(plain, options.acmeChallenges) : plain;
    const handshakeTimeout = handshakeTimeoutMs(settings);
    if (settings.server.codecType === 'http1') server = createHttpsServer({ ...serverOptions(settings), ...secure, handshakeTimeout }, handler);
    else {
      // Room for the gate to answer 431 past MAX_HEADER_FIELDS (Node's default resets a stream with
      // more than 128 fields); beyond twice that, nghttp2 resets the stream itself.
      // A finite stream limit and the rapid-reset guard (CVE-2023-44487): http2-sessions.ts.
      // `auto`: the HTTP/1.1 fallback's options, read once, here (applyHttp2Timeouts).
      const http1 = settings.server.codecType === 'auto' ? { allowHTTP1: true, http1Options: serverOptions(settings) } : {};
      const h2 = createSecureServer({ ...secure, handshakeTimeout, ...http1, maxSessionMemory: 10, maxHeaderListPairs: 2 * MAX_HEADER_FIELDS, settings: { maxConcurrentStreams: MAX_CONCURRENT_STREAMS } }, handler);
      applyHttp2Timeouts(h2, settings);
      guardSessions(h2, { timeoutReadMs: settings.server.timeoutReadMs, ...(options.log ? { log: options.log } : {}) });
      server = h2;
    }
  }
  // A TLS-ALPN-01 validation handshake carries no HTTP (RFC 8737 §3): close it once done.
  // Status requests (RFC 6066 §8) of clients asking for a stapled OCSP response.
  if (options.ocsp && !insecure) server.on('OCSPRequest', options.ocsp.handle);
  if (options.acmeChallenges) server.on('secureConnection', (socket: TLSSocket) => void (isAcmeTlsAlpn(socket) && socket.end()));
  // Node truncates a request past 1,000 header fields without a word; the gate refuses it (431).
  untruncated(server);
  // `Expect: 100-continue`: the handler answers it after the gate (handler.ts), never Node before it.
  server.on('checkContinue', handler);
  // timeout_write: an HTTP/1.1 connection without traffic for that long is closed (an HTTP/2
  // listener applies it itself: applyHttp2Timeouts).
  if (settings.server.timeoutWriteMs > 0 && (insecure || settings.server.codecType === 'http1')) server.setTimeout(settings.server.timeoutWriteMs);
  const scheme = insecure ? 'http' : 'https';
  // Upgrades only where the route enables them, after authorization; never h2c (S20).
  // Every way in passes the same gate, with the same listener checks (gate.ts).
  const gate: GateOptions = { scheme, authn, ...(options.observe ? { observe: options.observe } : {}), ...(options.authorizer ? { authorizer: options.authorizer } : {}) };
  const observer = { inFlight, ...(options.access ? { access: options.access } : {}) };
  server.on('upgrade', createUpgradeHandler(store, { ...gate, ...(options.tracing ? { tracing: options.tracing } : {}) }, observer));
  // CONNECT host:port (HTTP/1.1 and HTTP/2): tunnels of `tcp+https` routes, after authorization.
  server.on('connect', createConnectHandler(store, gate, observer));
  // HTTP/2 sessions, told to go away (GOAWAY: their open streams finish) when svc stops.
  const sessions2 = new Set<ServerHttp2Session>();
  server.on('session', (session: ServerHttp2Session) => {
    sessions2.add(session);
    session.once('close', () => sessions2.delete(session));
  });
  // A TLS listener's connections, from their first byte: the stop closes them all, whatever phase
  // they are in (handshake, HTTP/1.1 fallback of an HTTP/2 listener, which Node's HTTP/2 server
  // cannot close itself, or an HTTP/2 session). Per connection, never per request; a plain HTTP
  // listener's are all closed by Node's `closeAllConnections`.
  const sockets = new Set<Duplex>();
  const track = (socket: Duplex) => {
    if (sockets.has(socket)) return;
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  };
  if (!insecure) server.on('connection', track);
  // A request the parser refuses (smuggling shapes, bad bytes, oversized head, too slow): answered
  // and the connection closed, never passed on. A TLS failure (handshake timeout, bad ClientHello)
  // has no HTTP to answer in: a write would wait for a handshake that never ends, so it is closed.
  server.on('clientError', (err: NodeJS.ErrnoException, socket: import('node:stream').Duplex) => {
    if (err.code !== undefined && /^ERR_(TLS|SSL)_/.test(err.code)) {
      socket.destroy();
      return;
    }
    const status = err.code === 'HPE_HEADER_OVERFLOW' ? '431 Request Header Fields Too Large' : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? '408 Request Timeout' : '400 Bad Request';
    if (socket.writable) socket.end(`HTTP/1.1 ${status}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
    else socket.destroy();
  });

  // With use_proxy_protocol the public socket reads the PROXY header first; without a valid one
  // the connection is closed. The HTTP server itself then never listens. The header comes before
  // the first request, so `timeout_read` bounds it too (a load balancer sends it at once: 5 s at most).
  const proxyHeaderMs = Math.min(PROXY_HEADER_TIMEOUT_MS, settings.server.timeoutReadMs || PROXY_HEADER_TIMEOUT_MS);
  const front: NetServer = settings.server.useProxyProtocol ? createProxyProtocolServer(server as NetServer, { timeoutMs: proxyHeaderMs, onError: (e) => options.log?.({ msg: 'proxy protocol refused', error: e.message }) }) : (server as NetServer);
  // Connections still reading their PROXY header are closed by the stop too.
  if (front !== server) front.on('connection', track);
  const want = options.listen ?? settings.server.address;
  let address: { host: string; port: number };
  if (options.handed) {
    address = { ...options.handed };
    // What listening starts on a server that listens itself (Node's HTTP servers track their
    // connections from it: request timeouts, closing idle connections on a drain).
    front.emit('listening');
  } else address = await bind(front, want);

  let redirect: Server | undefined;
  let redirectAddress: { host: string; port: number } | null = null;
  const r = settings.server.httpRedirectAddress;
  if (r && !insecure) {
    const challenges = options.acmeChallenges;
    redirect = createServer(serverOptions(settings), (req, res) => {
      if (challenges && answerHttp01(challenges, req, res)) return;
      // http → https on the same host, path and query, from the canonical target (redirect.ts).
      const location = httpsRedirectLocation(req.url ?? '/', req.headers.host, address.port);
      if (location === null) {
        res.writeHead(400, { connection: 'close' }).end();
        return;
      }
      res.writeHead(308, { location }).end();
    });
    redirectAddress = await bind(redirect, r);
  }

  const servers = [front, ...(front !== server ? [server] : []), ...(redirect ? [redirect] : [])];
  let closing = false;
  // Closes the listeners and then every connection, whatever it is doing; resolves once all are closed.
  const closeAll = async () => {
    closing = true;
    const closed = servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve())));
    for (const s of servers) if ('closeAllConnections' in s) (s as Server).closeAllConnections();
    // GOAWAY, then every stream is destroyed: its response closes and aborts its upstream request.
    for (const session of sessions2) session.destroy();
    for (const t of inFlight.tunnels) t.destroy();
    for (const socket of sockets) socket.destroy();
    await Promise.all(closed);
    authn.close();
  };
  return {
    server,
    address,
    redirectAddress,
    accept: (socket) => {
      if (closing) socket.destroy();
      else front.emit('connection', socket);
    },
    close: closeAll,
    drain: async (timeoutMs) => {
      inFlight.draining = true;
      // Stop accepting; idle keep-alive connections close now, busy ones after their answer
      // (handler.ts answers with `Connection: close` while draining).
      for (const s of servers) {
        s.close();
        if ('closeIdleConnections' in s) (s as Server).closeIdleConnections();
      }
      for (const session of sessions2) session.close();
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
      const finished = await Promise.race([inFlight.idle().then(() => true), deadline]);
      clearTimeout(timer);
      if (!finished) {
        inFlight.cutting = true;
        options.log?.({ msg: 'drain deadline reached; cutting what is still running', requests: inFlight.requests, tunnels: inFlight.tunnels.size, timeoutMs });
      }
      await closeAll();
    },
  };
}

/**
 * Turns off Node's header-count limit on a server's HTTP/1.1 connections (`maxHeadersCount`, a
 * property, not an option; an `auto` HTTP/2 server's fallback reads it too): past it, Node drops the
 * extra fields silently. The head stays bounded by `maxHeaderSize`, and the gate refuses more than
 * MAX_HEADER_FIELDS fields.
 */
function untruncated(server: Server | HttpsServer | Http2SecureServer): void {
  Object.assign(server, { maxHeadersCount: 0 });
}

