/**
 * The request handler of `svc run`: one snapshot of the plan per request, the decision core, and
 * the answer: svc's own pages, a redirect, or the upstream's response streamed through with the
 * route's response header edits. Bodies stream both ways (never buffered whole); a client that goes
 * away aborts the upstream request; an upstream that refuses or times out gives 502/504 with the
 * request id, never a hang.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import type { Dispatcher } from 'undici';
import type { TLSSocket } from 'node:tls';
import type { Route } from '../../compiler/plan/types.ts';
import type { AuthState } from '../authn/auth-state.ts';
import { forwardAuth, routeHost } from '../authn/forward-auth.ts';
import type { ResolvedSession } from '../authn/session-cache.ts';
import type { Authn } from '../authn/service.ts';
import { decide } from '../decide/decide.ts';
import type { Decision, OutgoingHeaders, RequestHeaders } from '../decide/types.ts';
import type { CompiledRoute } from '../plan/index.ts';
import type { Generation, PlanStore } from '../plan/store.ts';
import type { Parts } from '../run/generation.ts';
import { sendError } from './error-page.ts';
import { UpstreamExchange } from './upstream-exchange.ts';

/** What a plan generation holds for forwarding (built by runtime/run/state.ts). */
export interface ForwardState {
  /** Per route index, per upstream index: the pool to send through. */
  readonly pools: readonly (readonly Dispatcher[])[];
  /**
   * The load balancer of a forward route: the upstream for this request (`hashKey` for the hash
   * policies: the client address), or undefined when none is healthy (503).
   */
  readonly pick?: (route: CompiledRoute, hashKey: string | undefined) => { readonly index: number; readonly done: (outcome: UpstreamOutcome) => void } | undefined;
}

/** How an upstream request ended, for the load balancer and outlier detection. */
export interface UpstreamOutcome {
  readonly status?: number;
  readonly error?: 'connect' | 'timeout' | 'reset';
}

export interface HandlerOptions {
  /** `https` on a TLS listener, `http` with `insecure_server`. */
  readonly scheme: 'http' | 'https';
  /** Test mode: every response names the plan checksum that produced it (`x-svc-plan-checksum`). */
  readonly exposeChecksum?: boolean;
  /** With `exposeChecksum`: also name the worker process that answered (`x-svc-worker`). */
  readonly workerId?: number;
  /** One line per request and per error; structured (pino in run.ts). */
  readonly log?: (entry: Record<string, unknown>) => void;
  /** Sessions, svc's own endpoints and upstream identity; without it every request is anonymous. */
  readonly authn?: Authn;
}

type Req = IncomingMessage | Http2ServerRequest;
type Res = ServerResponse | Http2ServerResponse;

/** Creates the `request` listener of a listener serving `store`. */
export function createHandler(store: PlanStore<Parts>, options: HandlerOptions): (req: Req, res: Res) => void {
  return (req, res) => {
    const requestId = randomUUID();
    const started = performance.now();
    const gen = store.acquire();
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      store.release(gen);
      options.log?.({ msg: 'request', requestId, method: req.method, status: res.statusCode, ms: Math.round(performance.now() - started), plan: gen.number });
    };
    res.on('close', release);
    if (options.exposeChecksum) {
      res.setHeader('x-svc-plan-checksum', gen.plan.checksum);
      if (options.workerId !== undefined) res.setHeader('x-svc-worker', String(options.workerId));
    }

    if (req.httpVersionMajor === 1 && req.httpVersionMinor === 0) {
      // Spec §4 rule 2: HTTP/1.0 is not supported; say so instead of guessing its framing.
      sendError(res, 505, requestId, 'http-1.0-unsupported', req.headers['accept'], true);
      return;
    }

    const tls = gen.tls;
    const socket = req.socket as TLSSocket | undefined;
    if (tls && socket) {
      const host = String(req.headers['host'] ?? req.headers[':authority'] ?? '');
      if (host !== '' && !tls.servesHost(socket, host)) {
        // Spec §7: a request for a host this connection's certificate does not cover (HTTP/2
        // connection coalescing) is misdirected; the client retries on a new connection.
        sendError(res, 421, requestId, 'misdirected-request', req.headers['accept'], true);
        return;
      }
    }
    const headers = requestHeaders(req);
    const authn = options.authn;
    // Built and checked before the plan was swapped in (serve/run): a cached lookup here.
    const state = authn ? gen.auth : undefined;
    const lookup = authn && state ? authn.resolve(state, headers, req.url ?? '/') : null;
    if (lookup instanceof Promise) void lookup.then((session) => decideAndRespond(gen, req, res, requestId, headers, session, state, options));
    else decideAndRespond(gen, req, res, requestId, headers, lookup, state, options);
  };
}

/** Decides a request with its session and answers it. */
function decideAndRespond(gen: Generation<Parts>, req: Req, res: Res, requestId: string, headers: RequestHeaders, session: ResolvedSession | null, state: AuthState | undefined, options: HandlerOptions): void {
  if (res.destroyed) return;
  const tls = gen.tls;
  const socket = req.socket as TLSSocket | undefined;
  let picked: { readonly index: number; readonly done: (outcome: UpstreamOutcome) => void } | undefined;
  const decision = decide(
    gen.index,
    {
      method: req.method ?? 'GET',
      target: req.url ?? '/',
      scheme: options.scheme,
      headers,
      peer: req.socket?.remoteAddress ?? '',
      nowMs: Date.now(),
      upstreamSample: Math.random(),
    },
    session?.identity ?? null,
    {
      reasons: false,
      ...(tls && socket ? { clientCertificate: (route: Route) => tls.clientCertificate(route, socket) } : {}),
      ...(gen.forward.pick
        ? {
            pickUpstream: (r: CompiledRoute) => {
              picked = gen.forward.pick!(r, req.socket?.remoteAddress);
              return picked?.index;
            },
          }
        : {}),
    },
  );
  const route = tls && socket ? clientCertificateScope(gen, decision) : undefined;
  if (tls && socket && route !== undefined) {
    if (tls.required(route) && !tls.clientCertificate(route, socket)?.valid) {
      picked?.done({});
      sendError(res, 495, requestId, 'client-certificate-required', req.headers['accept'], true);
      return;
    }
  }
  respond(gen, decision, req, res, requestId, picked, options, session, state);
}

/**
 * Whose client CA a decision answers under: its route's (`tls_downstream_client_ca`, else the global
 * `client_ca`); `null` for the forward-auth check, which requires the global `client_ca` (its callers
 * are the proxies, authenticated by their certificates: SECURITY S13); `undefined` when none applies.
 * The sign-in endpoints stay open to browsers, which sign in there (docs/forward-auth.md).
 */
function clientCertificateScope(gen: Generation<Parts>, d: Decision): Route | null | undefined {
  if (d.outcome === 'internal') return d.endpoint.service === 'forward_auth' ? null : undefined;
  if ('route' in d && d.outcome !== 'unavailable') return gen.index.body.routes[d.route.index];
  return undefined;
}

/** Node's distinct headers, with HTTP/2's `:authority` as the Host a request was sent to. */
function requestHeaders(req: Req): RequestHeaders {
  if ('headersDistinct' in req) return req.headersDistinct as Record<string, string[] | undefined>;
  const h: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) h[k] = Array.isArray(v) ? v : [v];
  if (h['host'] === undefined && h[':authority'] !== undefined) h['host'] = h[':authority'];
  return h;
}

function respond(
  gen: Generation<Parts>,
  d: Decision,
  req: Req,
  res: Res,
  requestId: string,
  picked: { readonly index: number; readonly done: (o: UpstreamOutcome) => void } | undefined,
  options: HandlerOptions,
  session: ResolvedSession | null,
  state: AuthState | undefined,
): void {
  const accept = req.headers['accept'];
  const authn = options.authn;
  // Every answer names the request id. A forwarded response carries it in its one writeHead: a
  // setHeader before writeHead would send every upstream header through setHeader's slow path.
  if (d.outcome !== 'allow') res.setHeader('x-request-id', requestId);
  switch (d.outcome) {
    case 'bad_request':
      sendError(res, 400, requestId, d.problem, accept, true);
      return;
    case 'internal': {
      if (!authn || !state) {
        sendError(res, 404, requestId, 'endpoint-not-available', accept, false);
        return;
      }
      const q = (req.url ?? '').indexOf('?');
      const done =
        d.endpoint.service === 'forward_auth'
          ? forwardAuth(authn, state, gen.index, d.endpoint.path, q < 0 ? '' : (req.url ?? '').slice(q + 1), req, res, requestId, req.socket?.remoteAddress ?? '')
          : authn.endpoint(state, d.endpoint, session, req, res, requestId);
      done.catch((e: unknown) => {
        options.log?.({ msg: 'endpoint error', requestId, path: d.endpoint.path, error: (e as Error).message });
        if (res.headersSent) res.destroy();
        else sendError(res, 500, requestId, 'internal-error', accept, false);
      });
      return;
    }
    case 'not_found':
      sendError(res, 404, requestId, 'no-route', accept, false);
      return;
    case 'deny':
      sendError(res, 403, requestId, d.reasons.join(',') || 'denied', accept, false);
      return;
    case 'unavailable':
      sendError(res, 503, requestId, 'no-healthy-upstream', accept, false);
      return;
    case 'unauthenticated':
      if (d.location !== null) {
        // The runtime signs the sign-in link's parameters (S05); the decision core stays pure.
        const location = authn && state ? (authn.signInLocation(state, d.location) ?? d.location) : d.location;
        res.writeHead(302, { location, 'cache-control': 'no-store' });
        res.end();
      } else sendError(res, 401, requestId, 'sign-in-required', accept, false);
      return;
    case 'redirect':
      res.writeHead(d.status, { location: d.location });
      res.end();
      return;
    case 'allow': {
      const route = gen.index.body.routes[d.route.index]!;
      const index = picked?.index ?? upstreamIndexOf(route, d.upstream.url);
      const pool = gen.forward.pools[d.route.index]?.[index];
      if (!pool) {
        sendError(res, 502, requestId, 'no-upstream-pool', accept, false);
        return;
      }
      // The decision's headers are this request's own copy: completed in place, not copied again.
      const headers = d.upstream.headers as OutgoingHeaders;
      headers['x-request-id'] = requestId;
      const identity = authn && state ? authn.upstreamIdentity(state, session, d.route.index, d.upstream.assertion, routeHost(gen.index, d.route.index), headers) : undefined;
      if (identity === undefined) forward(pool, route, d.upstream.url, headers, req, res, requestId, picked?.done, options);
      else
        identity.then(
          () => forward(pool, route, d.upstream.url, headers, req, res, requestId, picked?.done, options),
          (e: unknown) => {
            picked?.done({});
            options.log?.({ msg: 'identity assertion failed', requestId, error: (e as Error).message });
            sendError(res, 500, requestId, 'identity-assertion-failed', accept, false);
          },
        );
    }
  }
}

/** Without a load balancer, the upstream the core chose is found back by its URL's origin. */
function upstreamIndexOf(route: Route, url: string): number {
  if (route.action.kind !== 'forward') return 0;
  const i = route.action.upstreams.findIndex((u) => url.startsWith(`${u.scheme}://${u.host}`));
  return i < 0 ? 0 : i;
}


function forward(
  pool: Dispatcher,
  route: Route,
  url: string,
  headers: OutgoingHeaders,
  req: Req,
  res: Res,
  requestId: string,
  done: ((o: UpstreamOutcome) => void) | undefined,
  options: HandlerOptions,
): void {
  const pathStart = url.indexOf('/', url.indexOf('://') + 3);
  const hasBody = req.headers['content-length'] !== undefined ? req.headers['content-length'] !== '0' : req.headers['transfer-encoding'] !== undefined || req.httpVersionMajor === 2;
  const method = (req.method ?? 'GET') as Dispatcher.HttpMethod;
  pool.dispatch(
    {
      path: pathStart < 0 ? '/' : url.slice(pathStart),
      method,
      headers,
      body: hasBody && method !== 'GET' && method !== 'HEAD' ? (req as IncomingMessage) : null,
      headersTimeout: route.timeoutMs,
      bodyTimeout: route.idleTimeoutMs,
    },
    new UpstreamExchange(route, req, res, requestId, done, options.log),
  );
}
