/**
 * Errors of the TLS floor, each with a stable `code` from the runtime error registry
 * (runtime/core/errors.ts, docs/diagnostics.md).
 */
import { SvcError } from '../core/errors.ts';

/**
 * TLS material (certificate, key, client CA, CRL) that cannot be read or used. At load this is a
 * startup error; on a reload of changed files the previous material stays in service.
 */
export class TlsMaterialError extends SvcError<'SVC_ERR_TLS_MATERIAL'> {
  constructor(
    /** What the material is, as the user configured it (`certificates[0].key`, `client_crl`). */
    readonly what: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super('SVC_ERR_TLS_MATERIAL', `${what}: ${message}`, options);
    this.name = 'TlsMaterialError';
  }
}

/** Why a PROXY protocol header was refused. */
export type ProxyProtocolFailure = 'timeout' | 'invalid' | 'too-large' | 'closed';

/** A connection whose PROXY protocol header is missing, invalid, too large or late; it is closed. */
export class ProxyProtocolError extends SvcError<'SVC_ERR_PROXY_PROTOCOL'> {
  constructor(
    readonly reason: ProxyProtocolFailure,
    message: string,
    options?: { cause?: unknown },
  ) {
    super('SVC_ERR_PROXY_PROTOCOL', message, options);
    this.name = 'ProxyProtocolError';
  }
}

/** An OCSP response that may not be stapled, or none to be had (the responder's answer, an issuer missing from the chain). */
export class OcspResponseError extends SvcError<'SVC_ERR_OCSP_RESPONSE'> {
  constructor(
    message: string,
    /** True when the responder said the certificate is revoked. */
    readonly revoked = false,
  ) {
    super('SVC_ERR_OCSP_RESPONSE', message);
    this.name = 'OcspResponseError';
  }
}
