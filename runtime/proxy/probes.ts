/**
 * `/.svc/ping` and `/.svc/ready` on the main listener (docs/observability.md, "Health endpoints"), as
 * oauth2-proxy's `/ping` and `/ready`, for a load balancer or an orchestrator that reaches svc only
 * there (no `metrics_address`):
 * - `/.svc/ping`: 200 `OK` while the process serves, draining or not (liveness);
 * - `/.svc/ready`: 200 `OK` while it serves a plan and is not draining; 503 `draining` from the first
 *   SIGTERM/SIGINT on, through the shutdown delay (`--shutdown-delay`) during which svc still
 *   accepts connections, so that a load balancer takes it out before connections are refused.
 * Never routed upstream, on every host: they are svc's own endpoints (runtime/request/route.ts
 * `internalEndpoint` takes every `/.svc/` path before any route), answered by the handler once the
 * gate (runtime/proxy/gate.ts) has admitted the request, so they pass the same checks as every
 * request (HTTP/1.0, header count, canonical request, the certificate covering the host) on HTTP/1.1
 * and HTTP/2. They need no session and no data broker: like the metrics listener's `/readyz`, a
 * dependency every replica shares never makes them fail.
 */
import type { ServerResponse } from 'node:http';
import type { Http2ServerResponse } from 'node:http2';
import { writeHead } from '../authn/write-head.ts';

/** What the probes read of the process serving them. */
export interface Probes {
  /** True while svc serves its plan and is not draining. */
  ready(): boolean;
}

export const PING_PATH = '/.svc/ping';
export const READY_PATH = '/.svc/ready';

/** Whether `path` (canonical) is one of the probes. */
export function isProbe(path: string): boolean {
  return path === PING_PATH || path === READY_PATH;
}

/**
 * Answers a probe: GET or HEAD (anything else 405). `probes` absent: ready while serving (a listener
 * without a stop to announce).
 */
export function answerProbe(path: string, method: string, res: ServerResponse | Http2ServerResponse, probes: Probes | undefined): void {
  const send = (status: number, body: string, headers: Record<string, string> = {}) => {
    writeHead(res, status, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store', ...headers });
    if (method === 'HEAD') res.end();
    else res.end(body);
  };
  if (method !== 'GET' && method !== 'HEAD') return send(405, 'method not allowed\n', { allow: 'GET, HEAD' });
  if (path === PING_PATH) return send(200, 'OK');
  if (probes === undefined || probes.ready()) return send(200, 'OK');
  send(503, 'draining');
}
