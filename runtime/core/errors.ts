/**
 * The runtime's error registry: every stable code an error of `svc run`, `svc tcp` and the runtime
 * roles carries, with its one-line meaning (docs/diagnostics.md, "Runtime errors", is generated from
 * it). Codes are permanent: never renamed, never reused; tests, logs and docs key on the code, never
 * on the message. Every coded error extends {@link SvcError}, whose code must be a key of
 * {@link RUNTIME_ERRORS}: a code not listed here does not compile.
 *
 * Plain errors remain only for a bug in svc, an assert no configuration, plan, request or invocation
 * can reach: a `RangeError` for an option a caller passed out of range, an `Error` whose message
 * starts with `bug:`. The tests read the sources for it: every error class of runtime/ and cli/
 * extends `SvcError`, every `throw new Error(` there says `bug:`. An error only handed to a
 * library's callback or `destroy` (a TLS or OCSP callback, a socket) may be plain where it is made.
 */

/** Code → what it means, one line each, grouped by the floor that raises it. */
export const RUNTIME_ERRORS = {
  // core/
  SVC_ERR_FEATURE_UNAVAILABLE: 'A library that a feature of the plan needs (tracing, metrics, Redis sessions, autocert, gRPC) cannot be loaded: svc is installed incompletely; reinstall it. svc loads such a library only for a plan that uses the feature, and refuses that plan at start.',
  // plan/
  SVC_ERR_PLAN_READ: 'The plan file cannot be read. Retired: an unreadable plan file is `SVC_ERR_PLAN_INVALID`; listed so the code is never reused.',
  SVC_ERR_PLAN_JSON: 'The plan file is not JSON.',
  SVC_ERR_PLAN_VERSION: 'The plan\'s format version is not one this svc reads.',
  SVC_ERR_PLAN_SCHEMA: 'The plan does not match schemas/plan.schema.json.',
  SVC_ERR_PLAN_CHECKSUM: 'The plan\'s checksum does not match its body (edited by hand, or damaged).',
  SVC_ERR_SECRET_MISSING: 'A secret the plan refers to (an environment variable or a file) is not there.',
  SVC_ERR_SECRET_CHANGED: 'A secret changed since the plan was compiled; compile again.',
  SVC_ERR_UNSUPPORTED_SETTING: 'The plan uses a setting `svc run` does not implement yet; one error per setting, with where it was set.',
  // tls/
  SVC_ERR_TLS_MATERIAL: 'TLS material (certificate, key, client CA, CRL) cannot be read or used.',
  SVC_ERR_PROXY_PROTOCOL: 'A connection\'s PROXY protocol header is missing, invalid, too large or late; the connection is closed.',
  SVC_ERR_ACME: 'An ACME (autocert) order failed: rate limit, challenge not validated, account refused, or the CA unreachable; retried with back-off.',
  SVC_ERR_OCSP_RESPONSE: 'An OCSP response cannot be stapled (unreadable, not signed by the issuer, expired, or the certificate is revoked).',
  // upstream/
  SVC_ERR_UPSTREAM_NOT_FORWARD: 'A route that redirects was given to the upstream set; it has no upstreams.',
  SVC_ERR_UPSTREAM_CONFIG: 'A value of `lb`, `health_checks` or `outlier_detection` is outside what the runtime accepts.',
  SVC_ERR_HEALTH_CHECK_CONNECT: 'A health check could not open its connection (refused, unreachable, TLS handshake failed).',
  SVC_ERR_HEALTH_CHECK_TIMEOUT: 'A health check had no verdict within its timeout.',
  SVC_ERR_HEALTH_CHECK_STATUS: 'An HTTP health check answered a status outside `expected_statuses`.',
  SVC_ERR_HEALTH_CHECK_RESPONSE: 'A TCP health check closed before every expected payload was seen.',
  SVC_ERR_HEALTH_CHECK_NOT_SERVING: 'A gRPC health check answered, but not `SERVING`.',
  SVC_ERR_HEALTH_CHECK_RESET: 'The connection of a health check broke while waiting for the answer.',
  // observe/
  SVC_ERR_METRICS_MATERIAL: 'A metrics setting cannot be used (a secret missing or changed, a file that cannot be read, a basic-auth pair without user or password).',
  SVC_ERR_TRACING_CONFIG: 'The tracing settings name no exporter svc can send spans to.',
  // grpc/
  SVC_ERR_GRPC_CONFIG: 'gRPC between svc services cannot be set up as configured (no `shared_secret`).',
  SVC_ERR_GRPC_LISTEN: 'svc cannot listen for gRPC on `grpc_address` (in use, or not an address of this host).',
  // databroker/ and the session store contract (core/session-store.ts)
  SVC_ERR_SESSION_STORE_CLOSED: 'The session store was closed.',
  SVC_ERR_SESSION_RECORD_INVALID: 'A session record failed validation.',
  SVC_ERR_SESSION_REVOKED: 'A session id that was deleted was put again: a revoked session is never resurrected.',
  SVC_ERR_SESSION_STORE_UNAVAILABLE: 'The session store did not answer (Redis, the data broker, or a worker\'s channel to its primary); svc answers 503, never "signed out".',
  SVC_ERR_DEVICE_RECORD_INVALID: 'A registered device\'s record failed validation.',
  SVC_ERR_DEVICE_EXISTS: 'A WebAuthn credential already registered was registered again; a credential never moves to another user.',
  SVC_ERR_REDIS_CONFIG: 'The storage settings cannot be used for the Redis session store.',
  // sessions/
  SVC_ERR_IDP_UNAVAILABLE: 'The identity provider could not answer (unreachable, timeout, 5xx, 429); try again later.',
  SVC_ERR_IDP_CONFIG: 'No identity provider URL or client id is configured.',
  SVC_ERR_IDP_CALLBACK: 'The sign-in could not be completed with the identity provider.',
  SVC_ERR_IDP_REFRESH: 'The identity provider refused a session\'s refresh token, or answered for another subject: the session is over.',
  SVC_ERR_IDP_USERINFO: 'The userinfo endpoint refused the access token or answered for another subject.',
  SVC_ERR_DIRECTORY: 'A directory sync (`idp_service_account`) could not read the directory: the last good directory is kept.',
  // authorize/
  SVC_ERR_ROUTE_MISMATCH: 'The authorize service does not hold the route the proxy asked about (their plans differ); the request is refused with 503.',
  SVC_ERR_AUTHORIZE_UNAVAILABLE: 'The authorize service did not answer a policy question; the request is refused with 503.',
  // authn/
  SVC_ERR_SIGNED_PARAMS_INPUT: 'Signed parameters were signed with a bad key, a reserved name or a bad expiry (a bug in svc).',
  SVC_ERR_SESSION_COOKIE_INPUT: 'A session cookie was sealed with a bad key or payload (a bug in svc).',
  SVC_ERR_ASSERTION_OPTIONS: 'The assertion signer was built with options that cannot work (a bug in svc).',
  SVC_ERR_PROGRAMMATIC_CLIENT_REFUSED: 'A tunnel sign-in came back for a programmatic client the plan in service no longer accepts (`programmatic_redirect_domain_whitelist` changed meanwhile); no token is sent.',
  SVC_ERR_SERVERLESS_TOKEN: 'No ID token for a serverless cloud upstream: the token endpoint or metadata server failed or refused, or the service-account key cannot be used; the request is refused with 502.',
  SVC_ERR_SIGNING_KEY_INVALID: 'The configured `signing_key` is not a usable PEM private key (encrypted, or of a refused kind or size).',
  // generation/
  SVC_ERR_PLAN_REFUSED: 'A plan was refused while its generation was prepared; the provisioner\'s error is the cause, the running plan stays.',
  SVC_ERR_RESTART_REQUIRED: 'A reload changes a setting fixed at start (listeners, metrics listener, session storage, autocert, gRPC); the running plan stays, restart svc to apply it.',
  // proxy/
  SVC_ERR_UPSTREAM_TIMEOUT: 'An upstream did not complete a WebSocket upgrade within the route\'s timeout.',
  SVC_ERR_ROUTE_TIMEOUT: 'A forwarded request outlasted its route\'s timeout: svc aborted the upstream exchange and answered 504 (or cut the response already started).',
  SVC_ERR_CLIENT_GONE: 'The client went away before its upstream exchange ended: svc aborted the upstream request (nothing is learned about the upstream).',
  // process/
  SVC_ERR_CONFIG_INVALID: 'The config does not compile; the compiler\'s diagnostics follow.',
  SVC_ERR_PLAN_INVALID: 'The plan file cannot be loaded (read, JSON, version, schema or checksum).',
  SVC_ERR_WORKER_REFUSED_PLAN: 'A cluster worker refused a plan (or did not answer); the reload was aborted and no process swapped.',
  SVC_ERR_SHADOW_INVALID: 'The shadow (candidate) plan of `svc run --shadow` cannot be loaded (read, plan checks, config diagnostics, unsupported setting); the enforced plan keeps serving, with the last good shadow or none.',
  SVC_ERR_SHADOW_SETTINGS: 'The shadow plan\'s settings differ from the enforced plan\'s: a shadow may differ in its routes and policies only; it is refused (the enforced plan keeps serving).',
  SVC_ERR_SHADOW_UNSUPPORTED_ROLE: '`--shadow` was given to a role that decides no request itself (a split deployment\'s proxy, authenticate, authorize or databroker role); run it on an all-in-one svc.',
  SVC_ERR_SHADOW_DECISION: 'The shadow decision of a request failed (a bug in svc): the request was served by the enforced decision alone; counted in `svc_shadow_errors_total`, logged at most once a minute.',
  // cli/
  SVC_ERR_FLAG_WITHOUT_EFFECT: 'A command-line flag has no effect in the role given.',
  SVC_ERR_LOGIN_REQUEST: '`svc tcp` could not get a sign-in URL from svc.',
  SVC_ERR_LOGIN_URL_UNTRUSTED: '`svc tcp` was sent to a sign-in page it does not trust (give `--auth-origin` if it is yours).',
  SVC_ERR_DIFF_NOT_ENCODED: 'The exact check of `svc diff` met a policy or route matcher it cannot encode for the solver (a regex outside the plain subset, a character beyond U+2FFFF, an unknown time zone); that change is reported "not proved", never "unchanged".',
  SVC_ERR_LOGIN_TIMEOUT: '`svc tcp` saw no sign-in within the time allowed.',
  SVC_ERR_TCP_ROUTE_INVALID: '`svc tcp` was given a route that is not `tcp+https://host:port`.',
  SVC_ERR_REPLAY_READ: 'A log file given to `svc diff --replay` cannot be read (missing, unreadable, or damaged gzip data); `svc diff` exits 2 and reports no replay.',
} as const satisfies Record<`SVC_ERR_${string}`, string>;

/** A stable runtime error code. */
export type RuntimeErrorCode = keyof typeof RUNTIME_ERRORS;

/**
 * The base of every coded runtime error. `code` is one of {@link RUNTIME_ERRORS}; a subclass narrows
 * it with its type argument and sets its own `name`.
 */
export class SvcError<C extends RuntimeErrorCode = RuntimeErrorCode> extends Error {
  readonly code: C;
  constructor(code: C, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'SvcError';
    this.code = code;
  }
}
