/**
 * `writeHead` on a response of either protocol. @types/node 24 gives `ServerResponse` and
 * `Http2ServerResponse` overload sets a union of the two cannot call, while at run time both take
 * `(status, headers)` with the same meaning (HTTP/2 drops the status message svc never sends).
 */
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Http2ServerResponse } from 'node:http2';

export function writeHead(res: ServerResponse | Http2ServerResponse, status: number, headers: OutgoingHttpHeaders): void {
  (res as ServerResponse).writeHead(status, headers);
}
