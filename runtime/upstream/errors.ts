/**
 * Errors of the upstream set. Each is a class with a stable `code` from the runtime error registry
 * (runtime/core/errors.ts, docs/diagnostics.md); tests and logs key on the code, never on the message.
 */
import { SvcError } from '../core/errors.ts';

/** Codes of {@link UpstreamConfigError}: the route cannot be served as given. */
export type UpstreamConfigErrorCode =
  /** The route is a redirect route: it has no upstreams. */
  | 'SVC_ERR_UPSTREAM_NOT_FORWARD'
  /** A value of `lb`, `health_checks` or `outlier_detection` is outside what the runtime accepts. */
  | 'SVC_ERR_UPSTREAM_CONFIG';

/**
 * Thrown by `createUpstreamSet` when the route's upstream settings cannot be used (the compiler
 * should have refused them; this is the runtime's own guard, so it is a bug or a hand-edited plan).
 */
export class UpstreamConfigError extends SvcError<UpstreamConfigErrorCode> {
  constructor(code: UpstreamConfigErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = 'UpstreamConfigError';
  }
}

/** Codes of {@link HealthCheckError}: why one active health check failed. */
export type HealthCheckErrorCode =
  /** The connection could not be opened (refused, unreachable, TLS handshake failed). */
  | 'SVC_ERR_HEALTH_CHECK_CONNECT'
  /** No verdict within the check's `timeoutMs`. */
  | 'SVC_ERR_HEALTH_CHECK_TIMEOUT'
  /** HTTP: the status is outside `expected_statuses`. */
  | 'SVC_ERR_HEALTH_CHECK_STATUS'
  /** TCP: the connection closed before every `receive` payload was seen. */
  | 'SVC_ERR_HEALTH_CHECK_RESPONSE'
  /** gRPC: the service answered, but not `SERVING` (or the call failed with a gRPC status). */
  | 'SVC_ERR_HEALTH_CHECK_NOT_SERVING'
  /** The connection broke while waiting for the answer. */
  | 'SVC_ERR_HEALTH_CHECK_RESET';

/**
 * One failed active health check. Probes reject with it; the health monitor counts it toward
 * `unhealthy_threshold` and keeps its `code` for the snapshot.
 */
export class HealthCheckError extends SvcError<HealthCheckErrorCode> {
  constructor(code: HealthCheckErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = 'HealthCheckError';
  }
}
