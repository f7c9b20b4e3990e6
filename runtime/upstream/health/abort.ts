/** Helpers shared by the probes for turning an abort into a `HealthCheckError`. */
import { HealthCheckError } from '../errors.ts';

/** The error a probe rejects with when the monitor aborts it (timeout or stop). */
export function abortError(signal: AbortSignal): HealthCheckError {
  const reason: unknown = signal.reason;
  if (reason instanceof HealthCheckError) return reason;
  return new HealthCheckError('SVC_ERR_HEALTH_CHECK_TIMEOUT', 'health check aborted', { cause: reason });
}

/**
 * Maps a socket-level error to a check failure: `connect` before the connection was up, `reset`
 * after it.
 */
export function transportError(err: unknown, connected: boolean): HealthCheckError {
  if (err instanceof HealthCheckError) return err;
  const code = typeof err === 'object' && err !== null && 'code' in err ? String((err as { code: unknown }).code) : 'unknown';
  return connected
    ? new HealthCheckError('SVC_ERR_HEALTH_CHECK_RESET', `connection broke during the health check (${code})`, { cause: err })
    : new HealthCheckError('SVC_ERR_HEALTH_CHECK_CONNECT', `health check could not connect (${code})`, { cause: err });
}
