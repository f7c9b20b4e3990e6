/**
 * `writeHead` on a response of either protocol. @types/node 24 gives `ServerResponse` and
 * `Http2ServerResponse` overload sets a union of the two cannot call, while at run time both take
 * `(status, headers)` with the same meaning (HTTP/2 drops the status message svc never sends).
 */
import { STATUS_CODES, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import type { Http2ServerResponse } from 'node:http2';

export function writeHead(res: ServerResponse | Http2ServerResponse, status: number, headers: OutgoingHttpHeaders): void {
  // 450 is svc's "device not authorized" (docs/decisions.md §4), unknown to Node: HTTP/1.1 says so.
  if (status === 450 && !('stream' in res)) (res as ServerResponse).writeHead(status, DEVICE_NOT_AUTHORIZED, headers);
  else (res as ServerResponse).writeHead(status, headers);
}

/** The status text of 450. */
export const DEVICE_NOT_AUTHORIZED = 'Device Not Authorized';

/** The status text svc gives `status` (Node's, or svc's own for 450). */
export function statusText(status: number): string {
  return status === 450 ? DEVICE_NOT_AUTHORIZED : (STATUS_CODES[status] ?? 'Error');
}
