/** A real data broker gRPC server on loopback (port 0) over a given store, and its clients. */
import { databrokerGrpcService } from '../../../runtime/databroker/grpc-service.ts';
import { GrpcStore, type GrpcStoreOptions } from '../../../runtime/databroker/grpc-store.ts';
import type { SessionDirectory, SessionStore } from '../../../runtime/core/session-store.ts';
import { serviceCredentialKey } from '../../../runtime/grpc/credential.ts';
import { startGrpcServer, type GrpcServerOptions } from '../../../runtime/grpc/server.ts';

/** Test secret only: the decoded shared_secret both ends use. */
export const GRPC_TEST_SECRET = Buffer.alloc(32, 9);

export interface Broker {
  readonly port: number;
  readonly url: string;
  stop(): Promise<void>;
}

/** Serves `store` on 127.0.0.1 (a free port, or `port`). */
export async function startBroker(store: SessionStore & SessionDirectory, over: Partial<GrpcServerOptions> = {}): Promise<Broker> {
  const service = databrokerGrpcService(store);
  const server = await startGrpcServer({ address: '127.0.0.1:0', credentialKey: serviceCredentialKey(GRPC_TEST_SECRET), tls: null, ...over }, [service]);
  return {
    port: server.port,
    url: `http://127.0.0.1:${server.port}`,
    async stop() {
      service.close();
      await server.close(200);
    },
  };
}

/** A client of the brokers at `urls`, its Watch stream established (unless `wait` is false). */
export async function grpcStore(urls: readonly string[], over: Partial<GrpcStoreOptions> = {}, wait = true): Promise<GrpcStore> {
  const s = new GrpcStore({ urls, credentialKey: serviceCredentialKey(GRPC_TEST_SECRET), tls: null, timeoutMs: 3_000, dnsRoundRobin: true, ...over });
  if (wait && !(await s.ready())) throw new Error('the data broker watch stream did not open');
  return s;
}
