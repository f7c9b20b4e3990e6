/**
 * svc's own answers (400, 403, 404, 421, 495, 502, 503, 504, …): a plain branded HTML page, or JSON
 * for a client that asks for `application/json`, always with the request id so an operator can find
 * the log line. Nothing from the request is echoed into the page except the request id svc made.
 */
import type { ServerResponse } from 'node:http';
import type { Http2ServerResponse } from 'node:http2';
import { statusText, writeHead } from './write-head.ts';

export interface ErrorAnswer {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

const EXPLAIN: Readonly<Record<number, string>> = {
  400: 'The request could not be read safely, so it was refused.',
  401: 'Sign in first: this resource needs a signed-in user.',
  403: 'You are signed in, but the policy of this route does not allow you here.',
  450: 'You are signed in, but the device you authenticated with does not meet the policy of this route.',
  404: 'No route serves this address.',
  421: 'This connection cannot serve this host. Retry on a new connection.',
  431: 'The request carries too many header fields, so it was refused.',
  495: 'A valid client certificate is required.',
  502: 'The upstream service could not be reached or gave an invalid answer.',
  503: 'No healthy upstream service is available right now.',
  504: 'The upstream service did not answer in time.',
  505: 'HTTP/1.0 is not supported; use HTTP/1.1 or later.',
};

/** Explanations of reasons that say more than their status's general one. */
const EXPLAIN_REASON: Readonly<Record<string, string>> = {
  'device-authentication-required': 'This route needs a registered device: open it in a browser to register or use one.',
  'session-store-unavailable': 'Sessions cannot be read right now (the session store is unreachable), so svc cannot tell who you are. You were not signed out: try again in a moment.',
  'authorize-unavailable': 'The authorize service cannot be reached right now, so svc cannot decide whether you may open this page. Try again in a moment.',
  'authorize-route-mismatch': 'This proxy and the authorize service run different configurations for this route (a change being rolled out?), so svc cannot decide. Try again in a moment.',
};

/**
 * Reasons that pass by themselves (a dependency every replica shares is unreachable): their answer
 * says when to try again (`Retry-After`, in seconds), so a client or a load balancer backs off
 * instead of hammering, and does not take the 503 for svc being down.
 */
const RETRY_AFTER_SECONDS: Readonly<Record<string, string>> = {
  'session-store-unavailable': '5',
  'authorize-unavailable': '5',
  'authorize-route-mismatch': '5',
};

/** Tells whether an `Accept` header prefers JSON (an API client). */
export function wantsJson(accept: string | undefined): boolean {
  return accept !== undefined && /\bapplication\/(?:[\w.+-]*\+)?json\b/i.test(accept) && !/\btext\/html\b/i.test(accept);
}

/** Builds an error answer. `reason` is a stable code (`no-route`, `domain-unauthorized`, …). */
export function errorAnswer(status: number, requestId: string, reason: string, json: boolean): ErrorAnswer {
  const title = `${status} ${statusText(status)}`;
  const explanation = EXPLAIN_REASON[reason] ?? EXPLAIN[status] ?? 'The request could not be served.';
  const retryAfter = RETRY_AFTER_SECONDS[reason];
  const common = { 'cache-control': 'no-store', 'x-request-id': requestId, 'x-content-type-options': 'nosniff', ...(retryAfter !== undefined ? { 'retry-after': retryAfter } : {}) };
  if (json) {
    return { status, headers: { ...common, 'content-type': 'application/json' }, body: `${JSON.stringify({ status, error: statusText(status), reason, message: explanation, request_id: requestId })}\n` };
  }
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${title}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f5f6f8;color:#1d2330}main{max-width:34rem;margin:12vh auto;padding:2rem;background:#fff;border-radius:8px;box-shadow:0 1px 3px #0002}h1{font-size:1.4rem;margin:0 0 .5rem}footer{margin-top:1.5rem;font-size:.8rem;color:#667}code{font-size:.85rem}</style>
</head><body><main><h1>${title}</h1><p>${explanation}</p><p>Reason: <code>${escapeHtml(reason)}</code></p>
<footer>svc · request id <code>${escapeHtml(requestId)}</code></footer></main></body></html>
`;
  return { status, headers: { ...common, 'content-type': 'text/html; charset=utf-8', 'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'" }, body: html };
}

/** Text made safe for HTML element content and quoted attribute values. */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * Writes an error answer on a raw socket (upgrade and CONNECT requests have no response object)
 * and closes it.
 */
export function endSocketWithError(socket: { end(data: string): unknown }, status: number, requestId: string, reason: string, accept: string | undefined): void {
  const a = errorAnswer(status, requestId, reason, wantsJson(accept));
  const head = [`HTTP/1.1 ${status} ${statusText(status)}`, ...Object.entries(a.headers).map(([k, v]) => `${k}: ${v}`), 'connection: close', `content-length: ${Buffer.byteLength(a.body)}`];
  socket.end(`${head.join('\r\n')}\r\n\r\n${a.body}`);
}

/**
 * Answers with the error page on a response, with `extra` headers beside the page's own (a
 * `Set-Cookie`, `Retry-After`, a route's `x-svc-route-host`); `close` ends the connection after it
 * (HTTP/1.1). Every error svc answers on a response object goes through here or {@link sendAnswer}.
 */
export function sendError(res: ServerResponse | Http2ServerResponse, status: number, requestId: string, reason: string, accept: string | undefined, close: boolean, extra?: Readonly<Record<string, string | string[]>>): void {
  const a = errorAnswer(status, requestId, reason, wantsJson(accept));
  if (close && 'shouldKeepAlive' in res) res.shouldKeepAlive = false;
  sendAnswer(res, a, extra);
}

/** Writes a built answer (an error page, a sign-in failure, a denial: pages.ts) with `extra` headers. */
export function sendAnswer(res: ServerResponse | Http2ServerResponse, a: ErrorAnswer, extra?: Readonly<Record<string, string | string[]>>): void {
  writeHead(res, a.status, extra === undefined ? a.headers : { ...a.headers, ...extra });
  res.end(a.body);
}

/** The `Accept` header of a request, as the error pages read it. */
export function acceptOf(req: { readonly headers: { readonly accept?: string | string[] | undefined } }): string | undefined {
  const accept = req.headers.accept;
  return accept === undefined ? undefined : String(accept);
}
