/**
 * gRPC health checks (`grpc_health_check`): `grpc.health.v1.Health/Check` with `service_name`
 * (empty: the server as a whole), healthy only on `SERVING`. Uses @grpc/grpc-js with the health
 * proto beside this file (loaded by @grpc/proto-loader). One channel per (upstream, check), kept
 * between checks as Envoy keeps its health-check connection, closed by `close()`. `authority`
 * overrides the `:authority` header (default: the upstream's `host:port`). `https` upstreams use TLS
 * with the route's trust settings; `tls_skip_verify` turns off chain and name verification.
 */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { fileURLToPath } from 'node:url';
import type { HealthCheck, Upstream } from '../../../compiler/plan/types.ts';
import { upstreamAddress } from '../address.ts';
import { HealthCheckError } from '../errors.ts';
import { abortError } from './abort.ts';
import type { ProbeTls, Prober } from './types.ts';

/** The `grpc` variant of a health check's `check`. */
export type GrpcCheck = Extract<HealthCheck['check'], { kind: 'grpc' }>;

/** `grpc.health.v1.HealthCheckRequest` as proto-loader maps it (keepCase). */
export interface HealthCheckRequest {
  service: string;
}

/** `grpc.health.v1.HealthCheckResponse` as proto-loader maps it (enums as names). */
export interface HealthCheckResponse {
  status: 'UNKNOWN' | 'SERVING' | 'NOT_SERVING' | 'SERVICE_UNKNOWN';
}

/** Where the health proto lives (runtime/upstream/health/health.proto). */
const HEALTH_PROTO_PATH = fileURLToPath(new URL('./health.proto', import.meta.url));

let service: grpc.ServiceDefinition | undefined;

/**
 * The `grpc.health.v1.Health` service definition (loaded once): what a client calls and what a
 * server (tests, or svc's own services) implements.
 */
export function healthServiceDefinition(): grpc.ServiceDefinition {
  if (!service) {
    const pkg = protoLoader.loadSync(HEALTH_PROTO_PATH, { keepCase: true, enums: String, defaults: true });
    service = pkg['grpc.health.v1.Health'] as unknown as grpc.ServiceDefinition;
  }
  return service;
}

function checkMethod(): grpc.MethodDefinition<HealthCheckRequest, HealthCheckResponse> {
  return healthServiceDefinition()['Check'] as grpc.MethodDefinition<HealthCheckRequest, HealthCheckResponse>;
}

function credentials(upstream: Upstream, tls: ProbeTls): grpc.ChannelCredentials {
  if (upstream.scheme !== 'https') return grpc.credentials.createInsecure();
  const verify: grpc.VerifyOptions = {};
  if (tls.rejectUnauthorized === false) {
    verify.rejectUnauthorized = false;
    verify.checkServerIdentity = () => undefined;
  }
  return grpc.credentials.createSsl(
    tls.ca !== undefined ? Buffer.from(tls.ca) : null,
    tls.key !== undefined ? Buffer.from(tls.key) : null,
    tls.cert !== undefined ? Buffer.from(tls.cert) : null,
    verify,
  );
}

/** A prober for a `grpc_health_check` of `upstream`; its channel opens at the first check. */
export function createGrpcProber(upstream: Upstream, check: GrpcCheck, tls: ProbeTls): Prober {
  let client: grpc.Client | undefined;
  const method = checkMethod();
  const options: grpc.ChannelOptions = {};
  if (check.authority !== null) options['grpc.default_authority'] = check.authority;
  if (tls.servername !== undefined) options['grpc.ssl_target_name_override'] = tls.servername;
  const request: HealthCheckRequest = { service: check.serviceName ?? '' };
  return {
    probe(signal: AbortSignal): Promise<void> {
      return new Promise<void>((resolve, reject) => {
        if (signal.aborted) return reject(abortError(signal));
        client ??= new grpc.Client(upstreamAddress(upstream), credentials(upstream, tls), options);
        let settled = false;
        let call: grpc.ClientUnaryCall | undefined;
        const onAbort = (): void => {
          settle(abortError(signal));
          call?.cancel();
        };
        const settle = (err: HealthCheckError | undefined): void => {
          if (settled) return;
          settled = true;
          signal.removeEventListener('abort', onAbort);
          if (err) reject(err);
          else resolve();
        };
        signal.addEventListener('abort', onAbort, { once: true });
        call = client.makeUnaryRequest(
          method.path,
          method.requestSerialize,
          method.responseDeserialize,
          request,
          new grpc.Metadata(),
          {},
          (err, response) => {
            if (err) {
              const code = err.code === grpc.status.UNAVAILABLE ? 'SVC_ERR_HEALTH_CHECK_CONNECT' : 'SVC_ERR_HEALTH_CHECK_NOT_SERVING';
              settle(new HealthCheckError(code, `grpc health check failed: ${grpc.status[err.code] ?? err.code} ${err.details}`, { cause: err }));
            } else if (response?.status !== 'SERVING') {
              settle(new HealthCheckError('SVC_ERR_HEALTH_CHECK_NOT_SERVING', `grpc health check answered ${response?.status ?? 'nothing'}`));
            } else settle(undefined);
          },
        );
      });
    },
    close(): void {
      client?.close();
      client = undefined;
    },
  };
}
