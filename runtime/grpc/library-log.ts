/**
 * grpc-js writes its own diagnostics to standard error as text (`E No address added out of total 1
 * resolved …` when the gRPC port is taken), where every line `svc run` writes is one JSON object
 * (docs/security.md S46). This routes them through svc's log: grpc-js's errors as warn (svc reports
 * what they lead to itself, in its own words), its info and debug lines as debug. grpc-js keeps one
 * logger per process, so the process's run log is the one to give.
 *
 * grpc-js is loaded only by a process whose plan uses gRPC (docs/architecture.md §5 "Lazy feature
 * loading"): {@link loadGrpcLibrary} loads it, and is awaited by whatever starts a gRPC listener,
 * client or health check, before it imports the module that does; the log given here is routed
 * then, or at once when grpc-js is loaded already.
 */
import { format } from 'node:util';
import { loadFeature } from '../core/load-feature.ts';

type Log = (entry: Record<string, unknown>) => void;
type Grpc = typeof import('@grpc/grpc-js');

let target: Log | undefined;
let grpc: Grpc | undefined;

function route(): void {
  if (!grpc || !target) return;
  const log = target;
  const at = (level: 'warn' | 'debug') => (message?: unknown, ...rest: unknown[]) => log({ level, msg: 'grpc-js', detail: format(message, ...rest) });
  grpc.setLogger({ error: at('warn'), info: at('debug'), debug: at('debug') });
}

/** Routes grpc-js's lines through `log`, now if grpc-js is loaded, else once it is. */
export function logGrpcLibraryThrough(log: Log): void {
  target = log;
  route();
}

/**
 * Loads grpc-js (once) and routes its lines through the process's log: awaited before a plan's
 * gRPC listener, client or health check is made. Rejects with `FeatureUnavailableError` when it
 * cannot be loaded.
 */
export async function loadGrpcLibrary(): Promise<void> {
  if (grpc) return;
  grpc = await loadFeature('gRPC', () => import('@grpc/grpc-js'));
  route();
}

/**
 * Loads a module of svc that uses gRPC (`load`: its `import()`), grpc-js first
 * ({@link loadGrpcLibrary}). Rejects with `FeatureUnavailableError`.
 */
export async function loadGrpcModule<T>(load: () => Promise<T>): Promise<T> {
  await loadGrpcLibrary();
  return loadFeature('gRPC', load);
}
