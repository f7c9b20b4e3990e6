/**
 * The per-request access line of `svc run`, written straight into pino's destination in pino's own
 * format: exactly the bytes `pino({ base: { service: 'svc' } }).info(entry)` writes for the same
 * entry and time (property-tested against pino in test/cli/access-line.test.ts). pino's generic
 * serializer was about a quarter of what svc adds per request on top of a bare Node proxy.
 */

/** The entry the request handler logs once per request (runtime/server/handler.ts). */
export interface RequestEntry {
  readonly msg: 'request';
  readonly requestId: string;
  readonly method: string | undefined;
  readonly status: number;
  readonly ms: number;
  readonly plan: number;
}

/** Whether `entry` is exactly a {@link RequestEntry} this module formats (else pino formats it). */
export function isRequestEntry(entry: Record<string, unknown>): entry is Record<string, unknown> & RequestEntry {
  return (
    entry['msg'] === 'request' &&
    typeof entry['requestId'] === 'string' &&
    (entry['method'] === undefined || typeof entry['method'] === 'string') &&
    Number.isInteger(entry['status']) &&
    Number.isInteger(entry['ms']) &&
    Number.isInteger(entry['plan']) &&
    ownKeyCount(entry) === 6
  );
}

function ownKeyCount(o: object): number {
  let n = 0;
  for (const k in o) if (Object.hasOwn(o, k)) n++;
  return n;
}

/** The line (with its newline) pino would write for `entry` at `timeMs`, service `svc`, level info. */
export function requestLine(entry: RequestEntry, timeMs: number): string {
  const method = entry.method === undefined ? '' : `,"method":${JSON.stringify(entry.method)}`;
  return `{"level":30,"time":${timeMs},"service":"svc","msg":"request","requestId":${JSON.stringify(entry.requestId)}${method},"status":${entry.status},"ms":${entry.ms},"plan":${entry.plan}}\n`;
}
