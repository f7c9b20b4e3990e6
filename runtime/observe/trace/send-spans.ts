/**
 * The one HTTP call the hand-written exporters make (jaeger-exporter.ts, apm-exporter.ts): send a
 * body to a collector and say whether it took it (2xx). Bounded by a timeout; never throws.
 *
 * Sent through undici's dispatcher, the client svc forwards requests with (runtime/upstream/pools.ts),
 * rather than node:http's client: an export then runs the code the request path already runs, and
 * does not feed node's stream and socket functions, hot on that path, objects of other shapes
 * (some forty deoptimizations of them in the first exports of a fresh process: docs/tracing.md).
 * The collector connection is kept alive between exports (one a second at most); undici unrefs an
 * idle one, so it does not hold svc open when it stops.
 */
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import { Agent, type Dispatcher } from 'undici';

/** How long a collector may take to answer one export. */
const EXPORT_TIMEOUT_MS = 10_000;

let agent: Agent | undefined;

export function sendSpans(url: URL, method: 'POST' | 'PUT', headers: Record<string, string>, body: Buffer | string, done: (result: ExportResult) => void): void {
  let answered = false;
  const answer = (error?: Error) => {
    if (answered) return;
    answered = true;
    done(error ? { code: ExportResultCode.FAILED, error } : { code: ExportResultCode.SUCCESS });
  };
  let status = 0;
  const handler: Dispatcher.DispatchHandler = {
    onRequestStart: () => undefined,
    onResponseStart: (_controller, statusCode) => {
      status = statusCode;
    },
    // The collector's answer body is not read, but undici 8 refuses a handler without this method.
    onResponseData: () => undefined,
    onResponseEnd: () => answer(status >= 200 && status < 300 ? undefined : new Error(`the collector answered ${status}`)),
    onResponseError: (_controller, e) => answer(e),
  };
  try {
    agent ??= new Agent();
    agent.dispatch(
      { origin: url.origin, path: `${url.pathname}${url.search}`, method, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) }, body, headersTimeout: EXPORT_TIMEOUT_MS, bodyTimeout: EXPORT_TIMEOUT_MS },
      handler,
    );
  } catch (e) {
    answer(e as Error);
  }
}
