/**
 * One forwarded exchange with an upstream, as undici's dispatch handler: the upstream's response
 * goes chunk by chunk into the client's response, with the route's header edits and the request id.
 *
 * - A slow client pauses the upstream read until its socket drains (back-pressure; never a whole
 *   body buffered).
 * - The route timeout (`timeoutMs`, 0: none) spans the whole exchange. The idle timeout
 *   (`idleTimeoutMs`, 0: none) bounds the time without data from the upstream once its head has
 *   come, and does not run while a slow client holds the upstream back. Both are this object's own
 *   Node timers, never undici's (handler.ts passes it none); the idle one exists only where it could
 *   end the exchange before the route timeout does.
 * - Failures before the response head: 502 (refused, reset) or 504 (timeout) with the request id.
 *   After it: the client's response is cut, never a short body that looks complete.
 * - A client that goes away aborts the upstream request, even one still queued in the pool; over
 *   HTTP/2 (`Http2UpstreamExchange`) a stream the client resets too, at once (rapid reset,
 *   CVE-2023-44487: docs/security.md), though Node reports such a response as finished.
 * - `done` hears once how the exchange ended, for the load balancer and outlier detection.
 *
 * One object per request, its methods on the prototype: no promise, body stream, pipe or set of
 * per-request closures, which the profiles showed as garbage-collection time.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { constants as http2Constants, type Http2ServerRequest, type Http2ServerResponse } from 'node:http2';
import type { Span } from '@opentelemetry/api';
import type { Dispatcher } from 'undici';
import type { Route } from '../../compiler/plan/types.ts';
import { sendError } from '../authn/error-page.ts';
import { SvcError } from '../core/errors.ts';
import type { UpstreamOutcome } from '../core/types.ts';
import { editResponseHeaders, responseDropSet } from '../request/response-headers.ts';
import { writeHead } from '../authn/write-head.ts';

type Req = IncomingMessage | Http2ServerRequest;
type Res = ServerResponse | Http2ServerResponse;
type Why = 'timeout' | 'client';

/** Why svc aborted an upstream exchange (the reason undici reports back to the handler). */
class UpstreamAbort extends SvcError<'SVC_ERR_ROUTE_TIMEOUT' | 'SVC_ERR_CLIENT_GONE'> {
  constructor(readonly why: Why) {
    super(why === 'timeout' ? 'SVC_ERR_ROUTE_TIMEOUT' : 'SVC_ERR_CLIENT_GONE', why === 'timeout' ? 'route timeout' : 'client went away');
    this.name = 'UpstreamAbort';
  }
}

export class UpstreamExchange implements Dispatcher.DispatchHandler {
  readonly #route: Route;
  readonly #req: Req;
  readonly #res: Res;
  readonly #requestId: string;
  readonly #done: ((o: UpstreamOutcome) => void) | undefined;
  readonly #log: ((entry: Record<string, unknown>) => void) | undefined;
  readonly #timer: NodeJS.Timeout | undefined;
  /** The idle timeout, from the response head on; refreshed by every chunk and by each resume. */
  #idle: NodeJS.Timeout | undefined;
  /** The upstream exchange's span when the request is traced. */
  readonly #span: Span | undefined;
  #controller: Dispatcher.DispatchController | undefined;
  /** Why svc ended the exchange; applied to the controller as soon as undici hands it over. */
  #aborted: Why | undefined;
  #finished = false;
  #status = 0;
  /** The upstream answered before the request body was read whole. */
  #early = false;

  constructor(route: Route, req: Req, res: Res, requestId: string, done: ((o: UpstreamOutcome) => void) | undefined, log: ((entry: Record<string, unknown>) => void) | undefined, span?: Span) {
    this.#span = span;
    this.#route = route;
    this.#req = req;
    this.#res = res;
    this.#requestId = requestId;
    this.#done = done;
    this.#log = log;
    this.#timer = route.timeoutMs > 0 ? setTimeout(onRouteTimeout, route.timeoutMs, this) : undefined;
    // One listener for both ends: 'close' follows 'finish' on a completed response.
    res.once('close', () => this.clientClosed());
  }

  /** Whether the client's response was delivered whole (HTTP/1.1: Node's own answer). */
  protected delivered(res: Res): boolean {
    return res.writableFinished;
  }

  /**
   * The idle timeout elapsed: ends the exchange as a timeout, unless the upstream is paused for a
   * slow client (then it is not idle; the resume starts the idle time again).
   */
  idled(): void {
    if (this.#controller?.paused) return;
    this.abort('timeout');
  }

  /** Ends the exchange from svc's side (route timeout, idle timeout, client gone). */
  abort(why: Why): void {
    if (this.#aborted) return;
    this.#aborted = why;
    this.#controller?.abort(new UpstreamAbort(why));
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#aborted) controller.abort(new UpstreamAbort(this.#aborted));
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    if (statusCode < 200) return; // informational (103 Early Hints): not passed on
    this.#status = statusCode;
    const edited = editResponseHeaders(this.#route, headers, responseDropSet(headers['connection']));
    edited['x-request-id'] = this.#requestId;
    // An upstream that answers before reading the whole request body: the rest of the body is
    // never read, so the connection cannot carry another request; close it after the answer.
    const req = this.#req;
    this.#early = 'complete' in req && !req.complete;
    if (this.#early && 'shouldKeepAlive' in this.#res) this.#res.shouldKeepAlive = false;
    // Started at the head, it could fire before the route timeout only when shorter than it.
    const idle = this.#route.idleTimeoutMs;
    const whole = this.#route.timeoutMs;
    if (idle > 0 && (whole === 0 || idle < whole)) this.#idle = setTimeout(onIdleTimeout, idle, this);
    writeHead(this.#res, statusCode, edited);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const res = this.#res;
    if (res.destroyed) return;
    const idle = this.#idle;
    idle?.refresh();
    if (!(res as NodeJS.WritableStream).write(chunk) && !controller.paused) {
      controller.pause();
      res.once('drain', () => {
        idle?.refresh();
        controller.resume();
      });
    }
  }

  onResponseEnd(): void {
    this.#res.end();
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    const res = this.#res;
    const aborted = this.#aborted;
    if (res.headersSent) {
      // Mid-body: the client gets a cut response, never a silently short one.
      this.#finish(aborted === 'client' ? {} : { error: aborted === 'timeout' ? 'timeout' : 'reset' });
      cutResponse(res);
      return;
    }
    const kind = aborted ?? classify(err);
    this.#finish(kind === 'client' ? {} : { error: kind === 'timeout' ? 'timeout' : 'connect' });
    if (kind === 'client') return;
    this.#log?.({ msg: 'upstream error', requestId: this.#requestId, error: err.message, code: (err as { code?: string }).code });
    sendError(res, kind === 'timeout' ? 504 : 502, this.#requestId, kind === 'timeout' ? 'upstream-timeout' : 'upstream-unreachable', this.#req.headers['accept'], false);
  }

  /**
   * The client's response closed: finished, or cut (the client left, reset its stream, svc stopped).
   * A response finished without the upstream's head is not the upstream's: an error svc answered
   * (already told through onResponseError), or the listener's own 408 to an HTTP/2 request whose body
   * never came within `timeout_read`; that upstream request is ended, never left waiting on a body
   * that will not come (it would hold its connection, and a pool closing behind it).
   */
  protected clientClosed(): void {
    if (this.#status !== 0 && this.delivered(this.#res)) {
      this.#finish({ status: this.#status });
      if (this.#early && !this.#req.complete) this.#req.destroy();
      return;
    }
    if (this.#finished) return;
    this.abort('client');
    this.#finish({}); // the client left: nothing learned about the upstream
  }

  #finish(outcome: UpstreamOutcome): void {
    if (this.#finished) return;
    this.#finished = true;
    clearTimeout(this.#timer);
    clearTimeout(this.#idle);
    this.#done?.(outcome);
    const span = this.#span;
    if (span) {
      if (outcome.status !== undefined) span.setAttribute('http.response.status_code', outcome.status);
      if (outcome.error !== undefined) span.setStatus({ code: 2, message: outcome.error });
      span.end();
    }
  }
}

function onRouteTimeout(exchange: UpstreamExchange): void {
  exchange.abort('timeout');
}

function onIdleTimeout(exchange: UpstreamExchange): void {
  exchange.idled();
}

function classify(err: unknown): 'timeout' | 'upstream' {
  const code = (err as { code?: string }).code;
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT') return 'timeout';
  return 'upstream';
}

/**
 * The exchange of an HTTP/2 stream. After the client resets a stream (RST_STREAM), Node closes its
 * writable side itself, so `writableFinished` is true on a response nobody received, and the
 * response's `destroyed` is undefined: the stream's `aborted` flag (set when it closed before svc
 * ended its side) tells a cut stream. A stream already closed when the exchange starts (reset while
 * the gate or the identity assertion ran) aborts the upstream request before it is sent.
 */
export class Http2UpstreamExchange extends UpstreamExchange {
  constructor(route: Route, req: Req, res: Http2ServerResponse, requestId: string, done: ((o: UpstreamOutcome) => void) | undefined, log: ((entry: Record<string, unknown>) => void) | undefined, span?: Span) {
    super(route, req, res, requestId, done, log, span);
    if (http2Closed(res)) this.clientClosed();
  }

  protected override delivered(res: Res): boolean {
    return res.writableFinished && !(res as Http2ServerResponse).stream.aborted;
  }
}

/**
 * Cuts a response whose head is sent, so that the client can tell it is not whole: an HTTP/1.1
 * connection is closed; an HTTP/2 stream is reset with INTERNAL_ERROR. Destroying a stream without
 * an error resets it with NO_ERROR, which a client reads as the end of the body: a short body that
 * looks complete (docs/security.md S73).
 */
export function cutResponse(res: Res): void {
  if (!('stream' in res)) return void res.destroy();
  const stream = res.stream;
  if (!stream.closed) stream.close(http2Constants.NGHTTP2_INTERNAL_ERROR);
  else stream.destroy();
}

/** Whether an HTTP/2 response can no longer be written: its stream closed (reset, timed out, or its session gone). */
export function http2Closed(res: Http2ServerResponse): boolean {
  return res.stream.closed || res.stream.destroyed;
}

/** Whether an HTTP/2 response was cut: closed before it was delivered whole (see Http2UpstreamExchange). */
export function http2Cut(res: Http2ServerResponse): boolean {
  return !res.writableFinished || res.stream.aborted;
}
