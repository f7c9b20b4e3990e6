/** The contract between the health monitor and the per-kind probes. */

/**
 * One active health check of one upstream, runnable many times. `probe` resolves when the check
 * passes and rejects with a `HealthCheckError` when it fails; it stops work and rejects when
 * `signal` aborts (the monitor aborts at the check's `timeoutMs` and at `stop()`). `close` frees
 * whatever the probe keeps between runs (a gRPC channel); after it, `probe` is not called again.
 */
export interface Prober {
  probe(signal: AbortSignal): Promise<void>;
  close(): void;
}

/**
 * TLS settings for health checks of `https` upstreams, resolved by the caller from the route's
 * `tls_*` fields (PEM text, not file names or secret references).
 */
export interface ProbeTls {
  /** Trust store replacing the default one (`tls_custom_ca`). */
  readonly ca?: string;
  /** Client certificate and key for mTLS (`tls_client_cert`, `tls_client_key`). */
  readonly cert?: string;
  readonly key?: string;
  /** Name to verify the certificate against (`tls_server_name`); default: the upstream host. */
  readonly servername?: string;
  /** False only for `tls_skip_verify`. */
  readonly rejectUnauthorized?: boolean;
}
