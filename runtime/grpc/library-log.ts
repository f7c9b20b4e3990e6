/**
 * grpc-js writes its own diagnostics to standard error as text (`E No address added out of total 1
 * resolved …` when the gRPC port is taken), where every line `svc run` writes is one JSON object
 * (docs/security.md S46). This routes them through svc's log: grpc-js's errors as warn (svc reports
 * what they lead to itself, in its own words), its info and debug lines as debug. grpc-js keeps one
 * logger per process, so the process's run log is the one to give.
 */
import * as grpc from '@grpc/grpc-js';
import { format } from 'node:util';

export function logGrpcLibraryThrough(log: (entry: Record<string, unknown>) => void): void {
  const at = (level: 'warn' | 'debug') => (message?: unknown, ...rest: unknown[]) => log({ level, msg: 'grpc-js', detail: format(message, ...rest) });
  grpc.setLogger({ error: at('warn'), info: at('debug'), debug: at('debug') });
}
