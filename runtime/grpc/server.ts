/**
 * svc's gRPC server: binds one address (TLS unless insecure), refuses every call that does not
 * carry a valid service credential (credential.ts) with UNAUTHENTICATED before any handler runs,
 * and reports every call to the metrics (`svc_grpc_server_*`). Handlers are unary or
 * server-streaming (all svc's gRPC methods are).
 *
 * Keepalive (keepalive.ts): the server pings its clients, so a stream to a client that vanished
 * without closing its connection ends; it accepts svc's clients' pings.
 *
 * A bind failure rejects `startGrpcServer` (svc's start fails loudly; it never runs without the
 * listener the plan asked for).
 */
import { performance } from 'node:perf_hooks';
import * as grpc from '@grpc/grpc-js';
import type { GrpcObserver } from '../observe/metrics/grpc.ts';
import { CredentialChecker, METADATA_KEY, type CredentialProblem } from './credential.ts';
import { serverKeepaliveOptions, type KeepaliveTiming } from './keepalive.ts';
import { RateLimitedLog } from './rate-limited-log.ts';
import { SvcError } from '../core/errors.ts';

/** A certificate chain and its key, PEM, for the server's TLS. */
export interface ServerTls {
  readonly cert: string;
  readonly key: string;
}

export interface GrpcServerOptions {
  /** `host:port`; port 0 picks a free port. */
  readonly address: string;
  /** From credential.ts `serviceCredentialKey`. */
  readonly credentialKey: Uint8Array;
  /** null: plaintext (`grpc_insecure: true`). */
  readonly tls: ServerTls | null;
  readonly observer?: GrpcObserver;
  readonly log?: (entry: Record<string, unknown>) => void;
  /** Keepalive timing; default svc's (keepalive.ts `KEEPALIVE`); tests shorten it. */
  readonly keepalive?: KeepaliveTiming;
}

/** The grpc-js server options of a server with `options`. */
export function serverOptions(options: Pick<GrpcServerOptions, 'keepalive'>): grpc.ServerOptions {
  return { 'grpc.max_receive_message_length': 4 * 1024 * 1024, ...serverKeepaliveOptions(options.keepalive) };
}

/** One service to serve: its definition (proto.ts) and the handlers, by method name. */
export interface ServedService {
  readonly name: string;
  readonly definition: grpc.ServiceDefinition;
  readonly handlers: Readonly<Record<string, grpc.handleUnaryCall<any, any> | grpc.handleServerStreamingCall<any, any>>>;
}

export interface GrpcServerHandle {
  /** The bound port (the chosen one when the address asked for 0). */
  readonly port: number;
  /** Stops accepting calls, cancels streams still open after `graceMs`, and resolves once closed. */
  close(graceMs?: number): Promise<void>;
}

/** A gRPC error with a status code and plain details (never a secret). */
export function grpcError(code: grpc.status, details: string, metadata?: grpc.Metadata): grpc.ServiceError {
  return Object.assign(new Error(details), { code, details, metadata: metadata ?? new grpc.Metadata() });
}

const REFUSED_DETAILS = 'missing, wrong or expired svc service credential (check that every service has the same shared_secret)';

/** Starts serving `services` on `options.address`. Rejects when the address cannot be bound. */
export async function startGrpcServer(options: GrpcServerOptions, services: readonly ServedService[]): Promise<GrpcServerHandle> {
  const server = new grpc.Server(serverOptions(options));
  const refusals = new RateLimitedLog(options.log);
  for (const service of services) {
    const implementation: grpc.UntypedServiceImplementation = {};
    for (const [method, attrs] of Object.entries(service.definition)) {
      const handler = service.handlers[method];
      // A caller's bug (a service definition without its handler): plain Error.
      if (handler === undefined) throw new Error(`bug: no handler for ${service.name}/${method}`);
      implementation[method] = attrs.responseStream ? guardStream(service.name, method, attrs, handler as grpc.handleServerStreamingCall<any, any>) : guardUnary(service.name, method, attrs, handler as grpc.handleUnaryCall<any, any>);
    }
    server.addService(service.definition, implementation);
  }

  const refused = (call: grpc.ServerUnaryCall<any, any> | grpc.ServerWritableStream<any, any>, method: string, problem: CredentialProblem): void => {
    refusals.log(`${call.getPeer()}|${problem}`, { msg: 'gRPC call refused: UNAUTHENTICATED (service credential ' + problem + ')', grpc_method: method, peer: call.getPeer(), problem });
  };
  const checker = new CredentialChecker(options.credentialKey);
  const credentialProblem = (metadata: grpc.Metadata) => checker.check(metadata.get(METADATA_KEY));
  const report = (service: string, method: string, code: grpc.status, started: number, requestBytes: number, responseBytes: number): void => {
    options.observer?.call('server', service, method, grpc.status[code] ?? String(code), performance.now() - started, requestBytes, responseBytes);
  };
  const size = (serialize: (value: any) => Buffer, value: unknown): number => {
    if (options.observer === undefined || value === undefined) return 0;
    try {
      return serialize(value).length;
    } catch {
      return 0;
    }
  };

  function guardUnary(service: string, method: string, attrs: grpc.MethodDefinition<any, any>, handler: grpc.handleUnaryCall<any, any>): grpc.handleUnaryCall<any, any> {
    return (call, callback) => {
      const started = performance.now();
      const requestBytes = size(attrs.requestSerialize, call.request);
      void credentialProblem(call.metadata).then((problem) => {
        if (problem !== undefined) {
          refused(call, method, problem);
          report(service, method, grpc.status.UNAUTHENTICATED, started, requestBytes, 0);
          callback(grpcError(grpc.status.UNAUTHENTICATED, REFUSED_DETAILS));
          return;
        }
        handler(call, (error, value, trailer, flags) => {
          const code = error ? ((error as Partial<grpc.StatusObject>).code ?? grpc.status.UNKNOWN) : grpc.status.OK;
          report(service, method, code, started, requestBytes, error ? 0 : size(attrs.responseSerialize, value));
          callback(error, value, trailer, flags);
        });
      });
    };
  }

  function guardStream(service: string, method: string, attrs: grpc.MethodDefinition<any, any>, handler: grpc.handleServerStreamingCall<any, any>): grpc.handleServerStreamingCall<any, any> {
    return (call) => {
      const started = performance.now();
      const requestBytes = size(attrs.requestSerialize, call.request);
      let responseBytes = 0;
      let reported = false;
      const done = (code: grpc.status): void => {
        if (reported) return;
        reported = true;
        report(service, method, code, started, requestBytes, responseBytes);
      };
      void credentialProblem(call.metadata).then((problem) => {
        if (problem !== undefined) {
          refused(call, method, problem);
          done(grpc.status.UNAUTHENTICATED);
          call.emit('error', grpcError(grpc.status.UNAUTHENTICATED, REFUSED_DETAILS));
          return;
        }
        if (options.observer) {
          const write = call.write.bind(call) as (chunk: unknown, ...rest: unknown[]) => boolean;
          (call as { write: typeof write }).write = (chunk, ...rest) => {
            responseBytes += size(attrs.responseSerialize, chunk);
            return write(chunk, ...rest);
          };
        }
        call.on('finish', () => done(grpc.status.OK));
        call.on('cancelled', () => done(grpc.status.CANCELLED));
        call.on('error', (err: Partial<grpc.StatusObject>) => done(err.code ?? grpc.status.UNKNOWN));
        handler(call);
      });
    };
  }

  const credentials = options.tls === null ? grpc.ServerCredentials.createInsecure() : grpc.ServerCredentials.createSsl(null, [{ cert_chain: Buffer.from(options.tls.cert), private_key: Buffer.from(options.tls.key) }], false);
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(options.address, credentials, (err, bound) => {
      if (err) reject(new SvcError('SVC_ERR_GRPC_LISTEN', `cannot listen for gRPC on ${options.address}: ${err.message}`, { cause: err }));
      else resolve(bound);
    });
  });
  return {
    port,
    close(graceMs = 2_000) {
      return new Promise<void>((resolve) => {
        const force = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, graceMs);
        force.unref();
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      });
    },
  };
}
