/**
 * The gRPC metrics (docs/grpc.md "Metrics") (`grpc_client_*`, `grpc_server_*`), per gRPC service, method and
 * status code. runtime/grpc/ reports every call it makes and answers through {@link GrpcObserver}.
 */
import { Counter, Histogram, type Registry } from 'prom-client';
import { DURATION_MS_BUCKETS, SIZE_BYTES_BUCKETS } from './buckets.ts';

const LABELS = ['grpc_service', 'grpc_method', 'grpc_code'] as const;

/** Which end of a call: svc answered it (`server`) or sent it (`client`). */
export type GrpcSide = 'client' | 'server';

/** Told every finished gRPC call. Never throws. */
export interface GrpcObserver {
  /**
   * `service`: the fully qualified gRPC service; `method`: its method; `code`: the status name
   * (`OK`, `UNAVAILABLE`, …); sizes: serialized message bytes (a stream's: the sum).
   */
  call(side: GrpcSide, service: string, method: string, code: string, durationMs: number, requestBytes: number, responseBytes: number): void;
}

/** Registers `svc_grpc_{client,server}_*` in `registry`; returns the observer that feeds them. */
export function registerGrpc(registry: Registry): GrpcObserver {
  const registers = [registry];
  const sides = {} as Record<GrpcSide, { count: Counter; duration: Histogram; requestSize: Histogram; responseSize: Histogram }>;
  for (const side of ['client', 'server'] as const) {
    const what = side === 'server' ? 'gRPC requests svc answered' : 'gRPC requests svc sent';
    sides[side] = {
      count: new Counter({ name: `svc_grpc_${side}_requests_total`, help: `${what}, by gRPC service, method and code`, labelNames: LABELS, registers }),
      duration: new Histogram({ name: `svc_grpc_${side}_request_duration_ms`, help: `duration of ${what}, in milliseconds`, labelNames: LABELS, buckets: [...DURATION_MS_BUCKETS], registers }),
      requestSize: new Histogram({ name: `svc_grpc_${side}_request_size_bytes`, help: `size of ${what}, in bytes`, labelNames: LABELS, buckets: [...SIZE_BYTES_BUCKETS], registers }),
      responseSize: new Histogram({ name: `svc_grpc_${side}_response_size_bytes`, help: `size of the responses to ${what}, in bytes`, labelNames: LABELS, buckets: [...SIZE_BYTES_BUCKETS], registers }),
    };
  }
  return {
    call(side, service, method, code, durationMs, requestBytes, responseBytes) {
      const m = sides[side];
      const labels = { grpc_service: service, grpc_method: method, grpc_code: code };
      m.count.inc(labels);
      m.duration.observe(labels, durationMs);
      m.requestSize.observe(labels, requestBytes);
      m.responseSize.observe(labels, responseBytes);
    },
  };
}
