/**
 * The gRPC metrics of spec §6 (`grpc_client_*`, `grpc_server_*`). svc run serves and calls no gRPC
 * yet (every service runs in one process: runtime/plan/capabilities.ts), so they are registered
 * with their labels and stay at zero until gRPC lands; dashboards and alerts can refer to them now.
 */
import { Counter, Histogram, type Registry } from 'prom-client';
import { DURATION_MS_BUCKETS, SIZE_BYTES_BUCKETS } from './buckets.ts';

const LABELS = ['grpc_service', 'grpc_method', 'grpc_code'] as const;

/** Registers `svc_grpc_{client,server}_*` in `registry`. */
export function registerGrpc(registry: Registry): void {
  const registers = [registry];
  for (const side of ['client', 'server'] as const) {
    const what = side === 'server' ? 'gRPC requests svc answered' : 'gRPC requests svc sent';
    new Counter({ name: `svc_grpc_${side}_requests_total`, help: `${what}, by gRPC service, method and code`, labelNames: LABELS, registers });
    new Histogram({ name: `svc_grpc_${side}_request_duration_ms`, help: `duration of ${what}, in milliseconds`, labelNames: LABELS, buckets: [...DURATION_MS_BUCKETS], registers });
    new Histogram({ name: `svc_grpc_${side}_request_size_bytes`, help: `size of ${what}, in bytes`, labelNames: LABELS, buckets: [...SIZE_BYTES_BUCKETS], registers });
    new Histogram({ name: `svc_grpc_${side}_response_size_bytes`, help: `size of the responses to ${what}, in bytes`, labelNames: LABELS, buckets: [...SIZE_BYTES_BUCKETS], registers });
  }
}
