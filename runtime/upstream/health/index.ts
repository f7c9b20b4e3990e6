/** The prober for a health check's kind. */
import type { HealthCheck, Upstream } from '../../../compiler/plan/types.ts';
import { createGrpcProber } from './grpc.ts';
import { createHttpProber } from './http.ts';
import { createTcpProber } from './tcp.ts';
import type { ProbeTls, Prober } from './types.ts';

export type { ProbeTls, Prober } from './types.ts';

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
      return createGrpcProber(upstream, check, tls);
  }
}
