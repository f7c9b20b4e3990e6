/**
 * The request handler of `svc run`: one snapshot of the plan per request, the gate (gate.ts: the
 * same checks as upgrades and CONNECT), and the answer: svc's own pages, a redirect, or the upstream's response streamed through with the
 * route's response header edits. Bodies stream both ways (never buffered whole); a client that goes
 * away aborts the upstream request; an upstream that refuses or times out gives 502/504 with the
 * request id, never a hang.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import type { TLSSocket } from 'node:tls';
import type { Dispatcher } from 'undici';
import type { Route } from '../../compiler/plan/types.ts';
import { forwardAuth } from '../authn/forward-auth.ts';
import type { Decision, OutgoingHeaders, RequestHeaders } from '../core/types.ts';
import type { CompiledRoute } from '../plan/index.ts';
import type { ServedGeneration, ServedStore } from '../generation/generation.ts';
import { denialAnswer } from '../authn/denied.ts';
import { sendError, wantsJson } from '../authn/error-page.ts';
import { admit, SESSION_STORE_UNAVAILABLE, type Admission, type GateOptions } from './gate.ts';
import { storeUnavailable } from '../authn/service.ts';
import type { PoolOptions } from '../upstream/pools.ts';
import { cutResponse, Http2UpstreamExchange, http2Closed, http2Cut, UpstreamExchange } from './upstream-exchange.ts';
import { pathOf, type AccessEntry } from '../observe/log/access-line.ts';
import { identityAttributes, preflightOf } from '../observe/log/replay-attributes.ts';
import { dropTraceHeaders, isTraced, type RequestTrace, type TraceSetup } from '../observe/trace/request-trace.ts';
import { clientAddress } from '../request/client-address.ts';
import type { GateResult } from './gate.ts';
import type { InFlight } from './in-flight.ts';
import { answerProbe, isProbe, type Probes } from './probes.ts';
import { writeHead } from '../authn/write-head.ts';
import type { UpstreamOutcome } from '../core/types.ts';
import { identityFailure } from './identity-failure.ts';
import type { ShadowDifference } from '../request/shadow.ts';

export interface HandlerOptions extends GateOptions {
  /** Test mode: every response names the plan checksum that produced it (`x-svc-plan-checksum`). */
  readonly exposeChecksum?: boolean;
  /** With `exposeChecksum`: also name the worker process that answered (`x-svc-worker`). */
  readonly workerId?: number;
  /** svc's own lines (errors); structured (pino: runtime/observe/log/run-log.ts). */
  readonly log?: (entry: Record<string, unknown>) => void;
  /** The access line of each request (runtime/observe/log/access-line.ts). */
  readonly access?: (entry: AccessEntry) => void;
  /** The tracer of the plan served; `current` null when tracing is off (nothing is allocated then). */
  readonly tracing?: { readonly current: TraceSetup | null };
  /** Requests in flight, for the graceful stop. */
  readonly inFlight?: InFlight;
  /** What `/.svc/ready` reads (probes.ts): false from the first stop signal on. */
  readonly probes?: Probes;
}

type Req = IncomingMessage | Http2ServerRequest;
type Res = ServerResponse | Http2ServerResponse;

/** Creates the `request` listener of a listener serving `store`. */
export function createHandler(store: ServedStore, options: HandlerOptions): (req: Req, res: Res) => void {
  return (req, res) => {
    const requestId = randomUUID();
    const started = performance.now();
    const gen = store.acquire();
    const inFlight = options.inFlight;
    if (inFlight) {
      inFlight.begin();
      if (inFlight.draining && 'shouldKeepAlive' in res) res.shouldKeepAlive = false;
    }
    const socket = req.httpVersionMajor === 1 ? req.socket : undefined;
    const counted = socket ? countedBytes(socket) : undefined;
    const headers = requestHeaders(req);
    const setup = options.tracing?.current;
    // Sampled before any argument of the trace is read: an unsampled request builds nothing.
    const trace = setup && isTraced(setup, headers) ? setup.begin(requestId, req.method ?? 'GET', headers['host']?.[0] ?? '', pathOf(req.url ?? '/'), headers) : undefined;
    let result: GateResult | undefined;
    let certificate: AccessEntry['clientCert'];
    // The shadow plan's decision of a forward-auth check (forward-auth.ts), for the access line.
    let checkShadow: ShadowDifference | undefined;
    let released = false;
    // Metrics: the HTTP/1.1 connection's byte counts at the start.
    const read0 = socket?.bytesRead ?? 0;
    const written0 = socket?.bytesWritten ?? 0;
    const release = () => {
      if (released) return;
      released = true;
      store.release(gen);
      inFlight?.end();
      // HTTP/2: a stream the client reset reads as finished (upstream-exchange.ts `http2Cut`).
      const cut = socket ? !res.writableFinished : http2Cut(res as Http2ServerResponse);
      const status = cut ? 499 : res.statusCode;
      const route = routeOf(gen, result);
      trace?.end(status, cut, route);
      if (options.access) options.access(accessEntry(gen, req, headers, result, requestId, trace?.traceId, status, Math.round(performance.now() - started), route, socket, counted, cut ? (inFlight?.cutting ? 'shutdown' : '') : undefined, certificate, checkShadow));
      if (options.observe) {
        const matched = result?.admitted && 'route' in result.decision ? gen.index.body.routes[result.decision.route.index] : undefined;
        options.observe.request(matched, req.method, cut ? undefined : res.statusCode, performance.now() - started, socket ? socket.bytesRead - read0 : undefined, socket ? socket.bytesWritten - written0 : undefined);
      }
    };
    res.on('close', release);
    if (options.exposeChecksum) {
      res.setHeader('x-svc-plan-checksum', gen.plan.checksum);
      if (options.workerId !== undefined) res.setHeader('x-svc-worker', String(options.workerId));
    }
    // Gone while the gate ran (HTTP/2: `destroyed` is not set on a reset stream's response): then
    // the gate picks no upstream (pick.ts).
    const gone = () => (socket ? res.destroyed : http2Closed(res as Http2ServerResponse));
    admit(gen, { kind: 'request', method: req.method ?? 'GET', target: req.url ?? '/', headers, httpVersion: req.httpVersion, socket: req.socket, rawFields: req.rawHeaders.length >> 1, trace, canForward: () => !gone() }, options, (r) => {
      result = r;
      // Read while the connection is there (an HTTP/2 stream's socket is gone once it closes).
      if (gen.tls && r.admitted) certificate = clientCertificateOf(gen, r.decision, req.socket);
      if (gone()) return;
      if (!r.admitted) sendError(res, r.status, requestId, r.problem, acceptOf(headers), true);
      else {
        // `Expect: 100-continue` (Node's `checkContinue`, serve.ts): svc answers the expectation
        // itself, and only once the gate has admitted a request whose body is read (forwarded, or
        // svc's own endpoint); a refused request gets its final answer without soliciting the body.
        if (expectsContinue(headers) && (r.decision.outcome === 'allow' || r.decision.outcome === 'internal')) res.writeContinue();
        respond(gen, r, req, res, requestId, options, headers, trace, gen.shadow !== null && r.decision.outcome === 'internal' ? (d) => (checkShadow = d) : undefined);
      }
    });
  };
}

/** Per HTTP/1.1 connection: the byte counts at the end of its previous request. */
const COUNTED = Symbol('svc.counted');
type CountedSocket = import('node:net').Socket & { [COUNTED]?: { read: number; written: number } };

/** The connection's byte counts when this request began (the previous request's end). */
function countedBytes(socket: import('node:net').Socket): { read: number; written: number } {
  const s = socket as CountedSocket;
  return s[COUNTED] ?? { read: 0, written: 0 };
}

/** The route the access line names: its `name`, else its index; undefined when none matched. */
function routeOf(gen: ServedGeneration, r: GateResult | undefined): string | number | undefined {
  if (!r || !r.admitted || !('route' in r.decision)) return undefined;
  const i = r.decision.route.index;
  return gen.index.body.routes[i]?.name ?? i;
}

/**
 * The access line's entry. Bytes in and out (HTTP/1.1) are what the connection read and wrote
 * between the end of its previous request and the end of this one: head and body, as on the wire
 * (TLS records included); HTTP/2 streams share one connection, so there they are not given.
 */
function accessEntry(
  gen: ServedGeneration,
  req: Req,
  headers: RequestHeaders,
  r: GateResult | undefined,
  requestId: string,
  traceId: string | undefined,
  status: number,
  ms: number,
  route: string | number | undefined,
  socket: import('node:net').Socket | undefined,
  counted: { read: number; written: number } | undefined,
  cutBy: string | undefined,
  certificate: AccessEntry['clientCert'],
  checkShadow: ShadowDifference | undefined,
): AccessEntry {
  let bytesIn: number | undefined;
  let bytesOut: number | undefined;
  if (socket && counted) {
    const now = { read: socket.bytesRead, written: socket.bytesWritten };
    bytesIn = now.read - counted.read;
    bytesOut = now.written - counted.written;
    (socket as CountedSocket)[COUNTED] = now;
  }
  const admitted = r !== undefined && r.admitted ? r : undefined;
  const identity = admitted?.session?.identity;
  const d = admitted?.decision;
  const replay = identity ? identityAttributes(identity, gen.plan.body) : undefined;
  return {
    msg: 'request',
    requestId,
    traceId,
    method: req.method,
    host: headers['host']?.[0] ?? '',
    path: pathOf(req.url ?? '/'),
    route,
    status,
    ms,
    bytesIn,
    bytesOut,
    upstream: d?.outcome === 'allow' ? upstreamAddress(d.upstream.url) : undefined,
    client: clientAddress(req.socket?.remoteAddress ?? '', headers, gen.plan.body.settings.server.xffNumTrustedHops),
    // Made safe (no userinfo, query or fragment) by the access line itself (access-line.ts refererOf).
    userAgent: headers['user-agent']?.[0],
    referer: headers['referer']?.[0],
    user: identity?.user,
    email: identity?.email,
    groups: replay?.groups,
    claims: replay?.claims,
    device: replay?.device,
    clientCert: certificate,
    preflight: preflightOf(req.method, headers),
    identityCut: replay?.identityCut,
    decision: r === undefined ? 'none' : r.admitted ? r.decision.outcome : r.problem,
    reasons: d !== undefined && d.reasons.length > 0 ? d.reasons : undefined,
    plan: gen.number,
    cut: cutBy !== undefined ? true : undefined,
    cutBy: cutBy !== undefined && cutBy !== '' ? cutBy : undefined,
    shadow: admitted?.shadow ?? checkShadow,
  };
}

/**
 * The client certificate the decision's route saw (its fingerprint, and whether the route's CA vouched
 * for it), for the access line; undefined without TLS, a route, or a certificate. Per connection the
 * verification is cached (runtime/tls/client-certificates.ts), so this costs a lookup.
 */
export function clientCertificateOf(gen: ServedGeneration, d: Decision | undefined, socket: import('node:net').Socket | undefined): AccessEntry['clientCert'] {
  const route = gen.tls && socket && d !== undefined && 'route' in d ? gen.index.body.routes[d.route.index] : undefined;
  if (!route || typeof (socket as TLSSocket).getPeerX509Certificate !== 'function') return undefined;
  try {
    const c = gen.tls!.clientCertificate(route, socket as TLSSocket);
    return c === undefined ? undefined : { sha256: c.fingerprint, valid: c.valid };
  } catch {
    // A connection torn down under the read: the line goes without it, never the process.
    return undefined;
  }
}

/** `host:port` of an upstream URL (never its path or query). */
export function upstreamAddress(url: string): string {
  const start = url.indexOf('://') + 3;
  const end = url.indexOf('/', start);
  return url.slice(start, end < 0 ? url.length : end);
}

/**
 * Whether the client waits for `100 Continue` before sending its body: the shape for which Node
 * emits `checkContinue` instead of answering it itself (serve.ts registers that listener).
 */
function expectsContinue(headers: RequestHeaders): boolean {
  const expect = headers['expect'];
  return expect !== undefined && expect.some((v) => /(?:^|\W)100-continue(?:$|\W)/i.test(v));
}

/** Node's distinct headers, with HTTP/2's `:authority` as the Host a request was sent to. */
function requestHeaders(req: Req): RequestHeaders {
  if ('headersDistinct' in req) return req.headersDistinct as Record<string, string[] | undefined>;
  const h: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) h[k] = Array.isArray(v) ? v : [v];
  if (h['host'] === undefined && h[':authority'] !== undefined) h['host'] = h[':authority'];
  return h;
}

/**
 * The `Accept` header as node:http joins it. Read from the distinct headers: touching `req.headers`
 * would make node build a second copy of every request's headers.
 */
function acceptOf(headers: RequestHeaders): string | undefined {
  const v = headers['accept'];
  return v === undefined ? undefined : v.length === 1 ? v[0] : v.join(', ');
}

function respond(gen: ServedGeneration, a: Admission, req: Req, res: Res, requestId: string, options: HandlerOptions, incoming: RequestHeaders, trace: RequestTrace | undefined, shadowTold: ((d: ShadowDifference) => void) | undefined): void {
  const d = a.decision;
  const session = a.session;
  const state = a.auth;
  const accept = acceptOf(incoming);
  const authn = options.authn;
  // Every answer names the request id. A forwarded response carries it in its one writeHead: a
  // setHeader before writeHead would send every upstream header through setHeader's slow path.
  if (d.outcome !== 'allow') res.setHeader('x-request-id', requestId);
  switch (d.outcome) {
    case 'bad_request':
      sendError(res, 400, requestId, d.problem, accept, true);
      return;
    case 'internal': {
      // Before the session checks: a probe needs neither a session nor the store (probes.ts).
      if (isProbe(d.endpoint.path)) return answerProbe(d.endpoint.path, req.method ?? 'GET', res, options.probes);
      if (!authn || !state) {
        sendError(res, 404, requestId, 'endpoint-not-available', accept, false);
        return;
      }
      // Without the session store, svc's session endpoints cannot tell who is signed in: 503, never
      // a sign-out that clears the cookie or a sign-in over a live session. The JWKS needs no session.
      if (a.storeUnavailable && d.endpoint.path !== '/.well-known/svc/jwks.json') {
        sendError(res, 503, requestId, SESSION_STORE_UNAVAILABLE, accept, false);
        return;
      }
      const q = (req.url ?? '').indexOf('?');
      const span = trace?.child(d.endpoint.path === '/oauth2/callback' ? 'sign-in callback' : 'svc endpoint');
      span?.setAttribute('url.path', d.endpoint.path);
      const done =
        d.endpoint.service === 'forward_auth'
          ? forwardAuth(authn, state, gen.index, d.endpoint.path, q < 0 ? '' : (req.url ?? '').slice(q + 1), req, res, requestId, req.socket?.remoteAddress ?? '', options.authorizer ? { authorizer: options.authorizer, plan: gen.plan } : undefined, gen.shadow !== null && shadowTold ? { plan: gen.shadow, told: shadowTold } : undefined)
          : authn.endpoint(state, d.endpoint, a.canonical!, session, req, res, requestId);
      if (span) void done.finally(() => span.end()).catch(() => undefined);
      done.catch((e: unknown) => {
        options.log?.({ msg: 'endpoint error', requestId, path: d.endpoint.path, error: (e as Error).message });
        if (res.headersSent) cutResponse(res);
        else if (storeUnavailable(e)) sendError(res, 503, requestId, SESSION_STORE_UNAVAILABLE, accept, false);
        else sendError(res, 500, requestId, 'internal-error', accept, false);
      });
      return;
    }
    case 'not_found':
      sendError(res, 404, requestId, 'no-route', accept, false);
      return;
    case 'deny': {
      // The page says who is signed in and why in words, with sign-out and switch user (denied.ts).
      const socket = req.socket as TLSSocket | undefined;
      const certificate = gen.tls && socket ? gen.tls.clientCertificate(gen.index.body.routes[d.route.index]!, socket) : undefined;
      const request = { method: req.method ?? 'GET', target: req.url ?? '/', scheme: options.scheme, headers: requestHeaders(req), peer: req.socket?.remoteAddress ?? '', nowMs: Date.now(), ...(certificate ? { clientCertificate: certificate } : {}) };
      const a = denialAnswer(gen.index, d, request, session, state, requestId, wantsJson(accept));
      writeHead(res, a.status, a.headers);
      res.end(a.body);
      return;
    }
    case 'unavailable':
      // One reason: no healthy upstream, the session store or the authorize service unreachable (gate.ts).
      sendError(res, 503, requestId, d.reasons[0] ?? 'no-healthy-upstream', accept, false);
      return;
    case 'unauthenticated':
      if (d.location !== null) {
        // The runtime signs the sign-in link's parameters (S05) and binds the sign-in to this browser
        // (a cookie on this host, checked at the hand-off); the decision core stays pure.
        // The device page is svc's own on this host: no sign-in link to sign (decide.ts).
        const signIn = authn && state && d.device !== true ? authn.signInRedirect(state, d.location) : null;
        writeHead(res, 302, { location: signIn?.location ?? d.location, 'cache-control': 'no-store', ...(signIn && signIn.setCookie.length > 0 ? { 'set-cookie': [...signIn.setCookie] } : {}) });
        res.end();
      } else sendError(res, 401, requestId, d.device === true ? 'device-authentication-required' : 'sign-in-required', accept, false);
      return;
    case 'redirect':
      writeHead(res, d.status, { location: d.location });
      res.end();
      return;
    case 'allow': {
      // The gate's identity step failed: nothing was picked (gate.ts). Without the serverless
      // cloud's ID token the upstream would refuse the request: 502, never forwarded without it.
      if (a.identityError !== undefined) {
        const failure = identityFailure(a.identityError);
        options.log?.({ msg: failure.log, requestId, error: a.identityError.message });
        sendError(res, failure.status, requestId, failure.reason, accept, false);
        return;
      }
      const route = gen.index.body.routes[d.route.index]!;
      const upstream = a.upstream!;
      // A route without a pool: the gate picked nothing (pick.ts).
      if (!upstream.pool) {
        sendError(res, 502, requestId, 'no-upstream-pool', accept, false);
        return;
      }
      // The decision's headers are this request's own copy, identity headers applied (gate.ts):
      // completed in place, not copied again.
      const headers = d.upstream.headers as OutgoingHeaders;
      headers['x-request-id'] = requestId;
      forward(upstream.pool, route, d.upstream.url, headers, incoming, req, res, requestId, upstream.done, options, trace);
    }
  }
}

function forward(
  pool: Dispatcher,
  route: Route,
  url: string,
  headers: OutgoingHeaders,
  incoming: RequestHeaders,
  req: Req,
  res: Res,
  requestId: string,
  done: ((o: UpstreamOutcome) => void) | undefined,
  options: HandlerOptions,
  trace: RequestTrace | undefined,
): void {
  // The upstream exchange's span is the parent the upstream's own spans join (traceparent).
  const span = trace?.child('upstream exchange', 'client');
  if (trace && span) {
    span.setAttribute('server.address', upstreamAddress(url));
    trace.inject(headers, span);
  } else if (options.tracing?.current?.trustIncoming === false) dropTraceHeaders(headers);
  const pathStart = url.indexOf('/', url.indexOf('://') + 3);
  const length = incoming['content-length'];
  const hasBody = length !== undefined ? length[0] !== '0' : incoming['transfer-encoding'] !== undefined || req.httpVersionMajor === 2;
  const method = (req.method ?? 'GET') as Dispatcher.HttpMethod;
  pool.dispatch(
    {
      path: pathStart < 0 ? '/' : url.slice(pathStart),
      method,
      headers,
      body: hasBody && method !== 'GET' && method !== 'HEAD' ? (req as IncomingMessage) : null,
      // Both timeouts are the exchange's own (upstream-exchange.ts): undici keeps a timer over 1 s
      // in an array it sweeps every half second, so each request's timer object outlived a young
      // collection and was promoted, filling the old generation until a mark-compact stalled every
      // request in flight (the p99 under load).
      headersTimeout: 0,
      bodyTimeout: 0,
    },
    req.httpVersionMajor === 1 ? new UpstreamExchange(route, req, res, requestId, done, options.log, span) : new Http2UpstreamExchange(route, req, res as Http2ServerResponse, requestId, done, options.log, span),
  );
}
