/**
 * The prober for a health check's kind. The gRPC prober (grpc-js and the health proto) is loaded
 * only for a plan with a gRPC health check (docs/architecture.md §5 "Lazy feature loading"):
 * whoever builds upstream sets from a plan awaits {@link loadGrpcProber} first when
 * {@link usesGrpcHealthChecks} says so (runtime/generation/forward-provisioner.ts).
 */
import type { HealthCheck, Route, Upstream } from '../../../compiler/plan/types.ts';
import { createHttpProber } from './http.ts';
import { createTcpProber } from './tcp.ts';
import type { ProbeTls, Prober } from './types.ts';

export type { ProbeTls, Prober } from './types.ts';

let grpcProbers: typeof import('./grpc.ts') | undefined;

/** Whether any route of a plan has a gRPC health check. */
export function usesGrpcHealthChecks(routes: readonly Route[]): boolean {
  return routes.some((r) => r.healthChecks.some((h) => h.check.kind === 'grpc'));
}

/** Loads the gRPC prober (once); rejects when grpc-js or the health proto cannot be loaded. */
export async function loadGrpcProber(): Promise<void> {
  grpcProbers ??= await import('./grpc.ts');
}

/**
 * A prober running `check` against `upstream`. Throws `UpstreamConfigError` for a check it
 * cannot run (a TCP payload that is not hex).
 */
export function createProber(upstream: Upstream, check: HealthCheck['check'], tls: ProbeTls): Prober {
  switch (check.kind) {
    case 'http':
      return createHttpProber(upstream, check, tls);
    case 'tcp':
      return createTcpProber(upstream, check);
    case 'grpc':
      if (!grpcProbers) throw new Error('bug: a gRPC health check was made before loadGrpcProber()');
      return grpcProbers.createGrpcProber(upstream, check, tls);
  }
}
