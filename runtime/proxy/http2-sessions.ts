/**
 * What svc does for each HTTP/2 session of a listener (`codec_type` `auto` or `http2`) beyond
 * Node's defaults (docs/security.md S35–S37):
 *
 * - a finite `SETTINGS_MAX_CONCURRENT_STREAMS` (MAX_CONCURRENT_STREAMS, as Envoy and nginx ship;
 *   Node's default is unlimited);
 * - rapid reset (CVE-2023-44487): a client that opens streams and resets them at once keeps under
 *   the stream limit while svc starts work for each one. A reset stream aborts its upstream request
 *   at once (upstream-exchange.ts), and a session whose client resets more than RESET_ALLOWANCE
 *   streams beyond those it completed gets GOAWAY (ENHANCE_YOUR_CALM) and is closed;
 * - the read timeout before the first request: a session must send its preface and its first
 *   request within `timeout_read`, as an HTTP/1.1 connection must send its first request head
 *   (Node's `headersTimeout`); afterwards `timeout_idle` bounds an idle session.
 *
 * Only HTTP/2 sessions and streams pay for this: nothing is added to an HTTP/1.1 connection.
 */
import { constants, type Http2SecureServer, type ServerHttp2Session, type ServerHttp2Stream } from 'node:http2';

/** The `SETTINGS_MAX_CONCURRENT_STREAMS` svc advertises (Envoy's and nginx's default: 100). */
export const MAX_CONCURRENT_STREAMS = 100;

/**
 * How many more streams a client may reset than it completed before its session is closed. A
 * browser cancels at most the streams it has open at once (MAX_CONCURRENT_STREAMS) when it leaves a
 * page; a completed stream gives one reset back, down to none banked: a long session of completed
 * requests earns no credit for a burst of resets.
 */
export const RESET_ALLOWANCE = MAX_CONCURRENT_STREAMS;

/** Marks a stream svc itself closes (a timeout), so that its reset is not counted as the client's. */
const CLOSED_BY_SVC = Symbol('svc.closedBySvc');
type MarkedStream = ServerHttp2Stream & { [CLOSED_BY_SVC]?: true };

/** Resets a stream from svc's side (RST_STREAM `code`); not counted against the client. */
export function resetStream(stream: ServerHttp2Stream, code: number = constants.NGHTTP2_CANCEL): void {
  (stream as MarkedStream)[CLOSED_BY_SVC] = true;
  stream.close(code);
}

export interface SessionGuardOptions {
  /** `timeout_read` in ms (0: none): the preface and the first request must arrive within it. */
  readonly timeoutReadMs: number;
  /** svc's own lines: a session closed for resetting too many streams. */
  readonly log?: (entry: Record<string, unknown>) => void;
}

/** Puts the rules above on every session of `server`. */
export function guardSessions(server: Http2SecureServer, options: SessionGuardOptions): void {
  server.on('session', (session: ServerHttp2Session) => {
    // Net client resets: +1 per stream the client reset, -1 per stream completed, never below 0.
    let resets = 0;
    let firstRequest: NodeJS.Timeout | undefined;
    if (options.timeoutReadMs > 0) {
      firstRequest = setTimeout(() => {
        if (!session.destroyed) session.destroy();
      }, options.timeoutReadMs);
      firstRequest.unref();
      session.once('close', () => clearTimeout(firstRequest));
    }
    session.on('stream', (stream: ServerHttp2Stream) => {
      if (firstRequest !== undefined) {
        clearTimeout(firstRequest);
        firstRequest = undefined;
      }
      // 'aborted': the stream closed before svc ended its side. Not yet destroyed then only when the
      // peer reset it (RST_STREAM) or svc closed it (marked); svc's destroy() sets `destroyed` first.
      stream.once('aborted', () => {
        if (stream.destroyed || (stream as MarkedStream)[CLOSED_BY_SVC]) return;
        if (++resets === RESET_ALLOWANCE + 1) {
          options.log?.({ msg: 'http2 session closed: too many streams reset by the client', resets, remoteAddress: session.socket?.remoteAddress });
          // Out of nghttp2's frame handling ('aborted' is emitted from it), where closing the session
          // would neither send the GOAWAY nor close the connection.
          setImmediate(calm, session);
        }
      });
      stream.once('close', () => {
        if (!stream.aborted && resets > 0) resets--;
      });
    });
  });
}

/** GOAWAY (ENHANCE_YOUR_CALM: RFC 9113 §5.4.1), then the session, its streams and its connection are closed. */
function calm(session: ServerHttp2Session): void {
  if (session.destroyed) return;
  // One GOAWAY, with the code: destroy() sends it (the error goes to the server's 'sessionError').
  session.destroy(new Error('too many streams reset by the client'), constants.NGHTTP2_ENHANCE_YOUR_CALM);
}
