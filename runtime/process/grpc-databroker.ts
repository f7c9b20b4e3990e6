/**
 * Serves the data broker over gRPC from the store this process holds: the all-in-one process (or
 * cluster primary) on `grpc_address`, and the `services: databroker` process. Binding fails loudly:
 * the returned promise rejects, and svc does not start without the listener its plan asks for.
 *
 * The listener's settings (address, TLS, credential) are fixed while svc runs: a reload that changes
 * them is refused (`grpcChange`).
 */
import type { PlanBody, PlanSettings } from '../../compiler/plan/types.ts';
import { SvcError } from '../core/errors.ts';
import { databrokerGrpcService } from '../databroker/grpc-service.ts';
import type { SessionDirectory, SessionStore } from '../core/session-store.ts';
import { databrokerServerTls, grpcBindAddress, planCredentialKey } from '../grpc/plan-options.ts';
import { startGrpcServer } from '../grpc/server.ts';
import type { TlsMaterial } from '../tls/material.ts';
import type { GrpcObserver } from '../observe/metrics/grpc.ts';

export interface DatabrokerGrpcOptions {
  /** Overrides `grpc_address` (tests, `--grpc-listen`). */
  readonly listen?: { readonly host: string; readonly port: number };
  /** The HTTPS listener's TLS material, when there is one (its certificates are reused). */
  readonly material?: TlsMaterial | null;
  readonly observer?: GrpcObserver;
  readonly log?: (entry: Record<string, unknown>) => void;
}

export interface DatabrokerGrpc {
  readonly address: { readonly host: string; readonly port: number };
  /** Ends the watch streams and stops the listener (streams still open after `graceMs` are cut). */
  close(graceMs?: number): Promise<void>;
}

/** Starts serving `store` (never closed here) as the plan's data broker. */
export async function serveDatabrokerGrpc(body: PlanBody, store: SessionStore & SessionDirectory, options: DatabrokerGrpcOptions = {}): Promise<DatabrokerGrpc> {
  const settings = body.settings;
  const address = grpcBindAddress(settings, options.listen);
  const service = databrokerGrpcService(store);
  const tls = await databrokerServerTls(body, options.material ?? null);
  let server;
  try {
    server = await startGrpcServer({ address, credentialKey: planCredentialKey(settings), tls, ...(options.observer ? { observer: options.observer } : {}), ...(options.log ? { log: options.log } : {}) }, [service]);
  } catch (e) {
    service.close();
    throw new SvcError('SVC_ERR_GRPC_LISTEN', `grpc_address: ${(e as Error).message}`, { cause: e });
  }
  const host = address.replace(/:\d+$/, '').replace(/^\[(.*)\]$/, '$1');
  options.log?.({ msg: 'serving the data broker over gRPC', address: `${address.replace(/:\d+$/, '')}:${server.port}`, tls: tls !== null });
  return {
    address: { host, port: server.port },
    async close(graceMs = 1_000) {
      service.close();
      await server.close(graceMs);
    },
  };
}

