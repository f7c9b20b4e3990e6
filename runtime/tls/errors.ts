/**
 * Errors of the listener layer (runtime errors are classes with a stable `code`, docs/architecture.md §7).
 */

/**
 * TLS material (certificate, key, client CA, CRL) that cannot be read or used. At load this is a
 * startup error; on a reload of changed files the previous material stays in service.
 */
export class TlsMaterialError extends Error {
  readonly code = 'SVC_ERR_TLS_MATERIAL';
  constructor(
    /** What the material is, as the user configured it (`certificates[0].key`, `client_crl`). */
    readonly what: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`${what}: ${message}`, options);
    this.name = 'TlsMaterialError';
  }
}

/** Why a PROXY protocol header was refused. */
export type ProxyProtocolFailure = 'timeout' | 'invalid' | 'too-large' | 'closed';

/** A connection whose PROXY protocol header is missing, invalid, too large or late; it is closed. */
export class ProxyProtocolError extends Error {
  readonly code = 'SVC_ERR_PROXY_PROTOCOL';
  constructor(
    readonly reason: ProxyProtocolFailure,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ProxyProtocolError';
  }
}
