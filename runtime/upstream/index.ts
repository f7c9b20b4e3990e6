/**
 * The upstream set of a forward route: load balancing (ROUND_ROBIN, LEAST_REQUEST, RANDOM,
 * RING_HASH, MAGLEV), active health checks (HTTP/1.1, HTTP/2, TCP, gRPC) and outlier ejection.
 * See set.ts for the contract, startup grace and fail-closed choice.
 */
export { createUpstreamSet } from './set.ts';
export type { PickRequest, UpstreamPick, UpstreamSet, UpstreamSetOptions } from './set.ts';
export type { Clock, EjectionReason, HealthStatus, Random, RequestOutcome, TimerHandle, Timers, UpstreamEvent, UpstreamSnapshot } from './types.ts';
export type { ProbeTls, Prober } from './health/types.ts';
export { HealthCheckError, UpstreamConfigError } from './errors.ts';
export type { HealthCheckErrorCode, UpstreamConfigErrorCode } from './errors.ts';
export { upstreamAddress } from './address.ts';
