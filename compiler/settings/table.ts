import type { SettingSpec } from './types.ts';

/**
 * Every global setting (docs/configuration.md "Settings"), with its kind, default and place in the plan.
 * Keys lowered by their own code (`routes`, `policy`, `certificates`, `set_response_headers`,
 * `jwt_claims_headers`, the cert-or-file pairs) are `special` here so the schema and the env layer
 * still know them. Mode-dependent defaults (all-in-one) are applied in lower/settings.ts.
 */
export const SETTINGS: readonly SettingSpec[] = [
  // 2.3 shared settings
  { key: 'address', kind: 'hostport', default: ':443', plan: 'server.address', meaning: 'address serving HTTP' },
  { key: 'autocert', kind: 'bool', default: false, plan: 'autocert.enabled', meaning: 'obtain and renew public certificates from an ACME CA' },
  { key: 'autocert_ca', kind: 'url', plan: 'autocert.caUrl', meaning: 'directory URL of the ACME CA; overrides autocert_use_staging' },
  { key: 'autocert_email', kind: 'string', plan: 'autocert.email', meaning: 'contact e-mail for the ACME account' },
  { key: 'autocert_must_staple', kind: 'bool', default: false, plan: 'autocert.mustStaple', meaning: 'request must-staple certificates (RFC 7633)' },
  { key: 'autocert_dir', kind: 'string', plan: 'autocert.dir', meaning: 'where certificate data is stored' },
  { key: 'autocert_use_staging', kind: 'bool', default: false, plan: 'autocert.useStaging', meaning: "use the CA's staging environment" },
  { key: 'autocert_eab_key_id', kind: 'string', plan: 'autocert.eabKeyId', meaning: 'External Account Binding key id' },
  { key: 'autocert_eab_mac_key', kind: 'secret', plan: 'autocert.eabMacKey', meaning: 'External Account Binding MAC key (base64url)' },
  { key: 'autocert_trusted_ca', kind: 'certB64', plan: 'autocert.trustedCa', meaning: 'CA bundle for connections to the ACME CA' },
  { key: 'autocert_trusted_ca_file', kind: 'path', plan: 'autocert.trustedCa', meaning: 'CA bundle file for connections to the ACME CA' },
  { key: 'certificates', kind: 'special', fileOnly: true, plan: 'tls.certificates', meaning: 'list of `{cert, key}` file pairs' },
  { key: 'certificate', kind: 'certB64', plan: 'tls.certificates', meaning: 'base64 PEM certificate for HTTP and gRPC TLS' },
  { key: 'certificate_key', kind: 'keyB64', plan: 'tls.certificates', meaning: 'base64 PEM private key of `certificate`' },
  { key: 'certificate_file', kind: 'path', plan: 'tls.certificates', meaning: 'certificate file for HTTP and gRPC TLS' },
  { key: 'certificate_key_file', kind: 'path', plan: 'tls.certificates', meaning: 'private key file of `certificate_file`' },
  { key: 'client_ca', kind: 'certB64', plan: 'tls.clientCa', meaning: 'CA validating client certificates (mTLS)' },
  { key: 'client_ca_file', kind: 'path', plan: 'tls.clientCa', meaning: 'CA file validating client certificates (mTLS)' },
  { key: 'client_crl', kind: 'certB64', plan: 'tls.clientCrl', meaning: 'PEM CRL for client certificates' },
  { key: 'client_crl_file', kind: 'path', plan: 'tls.clientCrl', meaning: 'PEM CRL file for client certificates' },
  { key: 'cookie_name', kind: 'string', default: '_svc', plan: 'cookie.name', meaning: 'session cookie name' },
  { key: 'cookie_secret', kind: 'secret32', plan: 'cookie.secret', meaning: 'encrypts and authenticates session cookies' },
  { key: 'cookie_secret_file', kind: 'path', plan: 'cookie.secret', meaning: 'file holding `cookie_secret` (one trailing line break ignored)' },
  { key: 'cookie_domain', kind: 'string', plan: 'cookie.domain', meaning: 'scope of session cookies' },
  { key: 'cookie_secure', kind: 'bool', default: true, plan: 'cookie.secure', meaning: 'send the cookie only over HTTPS' },
  { key: 'cookie_http_only', kind: 'bool', default: true, plan: 'cookie.httpOnly', meaning: 'hide the cookie from scripts' },
  { key: 'cookie_expire', kind: 'duration', default: '14h', plan: 'cookie.expireMs', meaning: 'session lifetime' },
  { key: 'svc_debug', kind: 'bool', default: false, plan: 'logging.debug', meaning: 'human-readable colored logs' },
  { key: 'device_self_registration_approved', kind: 'bool', default: false, plan: 'authenticate.deviceSelfRegistrationApproved', meaning: 'a device a user registers is approved at once (default: pending until an operator approves it with `svc devices approve`)' },
  { key: 'forward_auth_url', kind: 'url', schemes: ['https', 'http'], plan: 'authenticate.forwardAuthUrl', meaning: 'creates the forward-auth endpoint' },
  { key: 'timeout_read', kind: 'duration', default: '30s', plan: 'server.timeoutReadMs', meaning: 'global read timeout' },
  { key: 'timeout_write', kind: 'duration', default: '0', plan: 'server.timeoutWriteMs', meaning: 'global write timeout (0: none)' },
  { key: 'timeout_idle', kind: 'duration', default: '5m', plan: 'server.timeoutIdleMs', meaning: 'global idle timeout' },
  { key: 'grpc_address', kind: 'hostport', plan: 'grpc.address', meaning: 'address serving gRPC (`:443`, or `:5443` all-in-one)' },
  { key: 'grpc_insecure', kind: 'bool', plan: 'grpc.insecure', meaning: 'no transport security for gRPC (true all-in-one)' },
  { key: 'grpc_client_timeout', kind: 'duration', default: '10s', plan: 'grpc.clientTimeoutMs', meaning: 'gRPC client deadline' },
  { key: 'grpc_client_dns_roundrobin', kind: 'bool', default: true, plan: 'grpc.clientDnsRoundRobin', meaning: 'client-side round robin over DNS addresses' },
  { key: 'http_redirect_addr', kind: 'hostport', plan: 'server.httpRedirectAddress', meaning: 'http-to-https redirect listener' },
  { key: 'insecure_server', kind: 'bool', default: false, plan: 'server.insecure', meaning: 'serve plain HTTP (behind a TLS-terminating ingress)' },
  { key: 'dns_lookup_family', kind: 'enum', values: ['V4_ONLY', 'V6_ONLY', 'AUTO'], default: 'AUTO', plan: 'server.dnsLookupFamily', meaning: 'DNS resolution policy' },
  { key: 'log_level', kind: 'enum', values: ['debug', 'info', 'warn', 'error'], default: 'info', plan: 'logging.level', meaning: 'minimum log level (release notes 0.9.0: info)' },
  { key: 'proxy_log_level', kind: 'enum', values: ['debug', 'info', 'warn', 'error'], plan: 'logging.proxyLevel', meaning: 'access log level (default: log_level)' },
  { key: 'metrics_address', kind: 'hostport', plan: 'metrics.address', meaning: 'metrics listener' },
  { key: 'metrics_basic_auth', kind: 'secret', plan: 'metrics.basicAuth', meaning: 'base64 `username:password` for the metrics endpoint' },
  { key: 'metrics_basic_auth_file', kind: 'path', plan: 'metrics.basicAuth', meaning: 'file holding `metrics_basic_auth` (one trailing line break ignored)' },
  { key: 'metrics_certificate', kind: 'certB64', plan: 'metrics.certificate', meaning: 'metrics TLS certificate' },
  { key: 'metrics_certificate_key', kind: 'keyB64', plan: 'metrics.certificateKey', meaning: 'metrics TLS key' },
  { key: 'metrics_certificate_file', kind: 'path', plan: 'metrics.certificate', meaning: 'metrics TLS certificate file' },
  { key: 'metrics_certificate_key_file', kind: 'path', plan: 'metrics.certificateKey', meaning: 'metrics TLS key file' },
  { key: 'metrics_client_ca', kind: 'certB64', plan: 'metrics.clientCa', meaning: 'CA for metrics mTLS clients' },
  { key: 'metrics_client_ca_file', kind: 'path', plan: 'metrics.clientCa', meaning: 'CA file for metrics mTLS clients' },
  { key: 'services', kind: 'enum', values: ['all', 'authenticate', 'authorize', 'databroker', 'proxy'], default: 'all', plan: 'mode.services', meaning: 'which services run' },
  { key: 'shared_secret', kind: 'secret32', plan: 'mode.sharedSecret', meaning: 'authenticates requests between services (256 bits)' },
  { key: 'shared_secret_file', kind: 'path', plan: 'mode.sharedSecret', meaning: 'file holding `shared_secret` (one trailing line break ignored)' },
  { key: 'use_proxy_protocol', kind: 'bool', default: false, plan: 'server.useProxyProtocol', meaning: 'require the PROXY protocol (v1, v2)' },
  { key: 'dp_admin_address', kind: 'hostport', plan: 'dp.adminAddress', meaning: 'data-plane admin address (bootstrap)' },
  { key: 'dp_admin_access_log_path', kind: 'string', plan: 'dp.adminAccessLogPath', meaning: 'data-plane admin access log (bootstrap)' },
  { key: 'dp_admin_profile_path', kind: 'string', plan: 'dp.adminProfilePath', meaning: 'data-plane admin profile path (bootstrap)' },
  { key: 'dp_bind_config_freebind', kind: 'bool', plan: 'dp.bindConfigFreebind', meaning: 'data-plane freebind (bootstrap)' },
  { key: 'dp_bind_config_source_address', kind: 'string', plan: 'dp.bindConfigSourceAddress', meaning: 'data-plane upstream source address (bootstrap)' },
  { key: 'tracing_provider', kind: 'enum', values: ['jaeger', 'zipkin', 'apm', 'otlp'], plan: 'tracing.provider', meaning: 'enables tracing' },
  { key: 'tracing_sample_rate', kind: 'number', default: 0.0001, plan: 'tracing.sampleRate', meaning: 'fraction of requests sampled' },
  { key: 'tracing_apm_address', kind: 'hostport', default: 'localhost:8126', plan: 'tracing.apmAddress', meaning: 'vendor trace agent' },
  { key: 'tracing_jaeger_collector_endpoint', kind: 'url', plan: 'tracing.jaegerCollectorEndpoint', meaning: 'jaeger HTTP Thrift collector' },
  { key: 'tracing_jaeger_agent_endpoint', kind: 'hostport', plan: 'tracing.jaegerAgentEndpoint', meaning: 'jaeger agent address' },
  { key: 'tracing_zipkin_endpoint', kind: 'url', plan: 'tracing.zipkinEndpoint', meaning: 'zipkin HTTP endpoint' },
  { key: 'tracing_otlp_endpoint', kind: 'url', schemes: ['http', 'https'], default: 'http://localhost:4318/v1/traces', plan: 'tracing.otlpEndpoint', meaning: 'otlp: URL of the OTLP/HTTP traces endpoint (JSON encoding)' },
  // 2.4 authenticate service
  { key: 'authenticate_callback_path', kind: 'string', default: '/oauth2/callback', plan: 'authenticate.callbackPath', meaning: "path of the identity provider's callback" },
  { key: 'authenticate_service_url', kind: 'url', schemes: ['https', 'http'], plan: 'authenticate.serviceUrl', meaning: 'external URL of the authenticate service' },
  { key: 'authenticate_internal_service_url', kind: 'url', schemes: ['https', 'http'], plan: 'authenticate.internalServiceUrl', meaning: 'listener name and certificate of the authenticate service' },
  { key: 'idp_client_id', kind: 'string', plan: 'idp.clientId', meaning: 'OAuth 2.0 client id' },
  { key: 'idp_client_secret', kind: 'secret', plan: 'idp.clientSecret', meaning: 'OAuth 2.0 client secret' },
  { key: 'idp_client_secret_file', kind: 'path', plan: 'idp.clientSecret', meaning: 'file holding `idp_client_secret` (one trailing line break ignored)' },
  { key: 'idp_provider', kind: 'enum', values: ['oidc', 'azure', 'github', 'gitlab', 'google', 'okta'], plan: 'idp.provider', meaning: 'identity provider' },
  { key: 'idp_scopes', kind: 'list', plan: 'idp.scopes', meaning: 'OAuth 2.0 scopes' },
  { key: 'idp_service_account', kind: 'secret', plan: 'idp.serviceAccount', meaning: 'directory credentials for groups: base64 of a JSON object, fields per provider (docs/authentication.md "Groups from the directory")' },
  { key: 'idp_provider_url', kind: 'url', schemes: ['https', 'http'], plan: 'idp.providerUrl', meaning: 'OpenID Connect discovery base' },
  { key: 'idp_request_params', kind: 'map', plan: 'idp.requestParams', meaning: 'extra sign-in request parameters' },
  { key: 'idp_trust_unverified_email', kind: 'bool', default: false, plan: 'idp.trustUnverifiedEmail', meaning: 'let an email count whose `email_verified` claim is not true (absent or false)' },
  { key: 'idp_refresh_directory_interval', kind: 'duration', default: '10m', plan: 'idp.refreshDirectoryIntervalMs', meaning: 'directory sync interval' },
  { key: 'idp_refresh_directory_timeout', kind: 'duration', default: '1m', plan: 'idp.refreshDirectoryTimeoutMs', meaning: 'directory sync timeout' },
  // 2.5 proxy service
  { key: 'authorize_service_url', kind: 'url', plan: 'authorize.serviceUrls', meaning: 'authorize service (gRPC)' },
  { key: 'authorize_service_urls', kind: 'list', plan: 'authorize.serviceUrls', meaning: 'authorize services (gRPC)' },
  { key: 'authorize_internal_service_url', kind: 'url', plan: 'authorize.internalServiceUrl', meaning: "authorize service's certificate name" },
  { key: 'certificate_authority', kind: 'certB64', plan: 'tls.certificateAuthority', meaning: 'CA for upstreams with custom certificates' },
  { key: 'certificate_authority_file', kind: 'path', plan: 'tls.certificateAuthority', meaning: 'CA file for upstreams with custom certificates' },
  { key: 'default_upstream_timeout', kind: 'duration', default: '30s', plan: 'server.defaultUpstreamTimeoutMs', meaning: 'timeout of routes without `timeout`' },
  { key: 'set_response_headers', kind: 'special', plan: 'headers.response', meaning: 'response headers of every route' },
  { key: 'jwt_claims_headers', kind: 'special', plan: 'identity.claimHeaders', meaning: 'claims copied into upstream request headers: a list, a map header → claim, or the comma form `email,groups,X-Team:team`' },
  { key: 'override_certificate_name', kind: 'string', plan: 'tls.overrideCertificateName', meaning: 'name checked for internal service certificates' },
  { key: 'programmatic_redirect_domain_whitelist', kind: 'list', default: ['localhost'], plan: 'authenticate.programmaticRedirectDomains', meaning: 'allowed programmatic-login redirect domains' },
  { key: 'skip_xff_append', kind: 'bool', default: false, plan: 'server.skipXffAppend', meaning: 'do not append to x-forwarded-for' },
  { key: 'xff_num_trusted_hops', kind: 'uint', default: 0, plan: 'server.xffNumTrustedHops', meaning: 'trusted proxies in front' },
  { key: 'codec_type', kind: 'enum', values: ['auto', 'http1', 'http2'], plan: 'server.codecType', meaning: 'downstream codec (`http1` all-in-one)' },
  { key: 'signout_redirect_url', kind: 'url', schemes: ['https', 'http'], plan: 'authenticate.signoutRedirectUrl', meaning: 'where users go after sign-out' },
  // 2.6 data broker and authorize
  { key: 'databroker_service_url', kind: 'url', plan: 'databroker.serviceUrls', meaning: 'data broker location' },
  { key: 'databroker_service_urls', kind: 'list', plan: 'databroker.serviceUrls', meaning: 'data broker locations' },
  { key: 'databroker_internal_service_url', kind: 'url', plan: 'databroker.internalServiceUrls', meaning: "data broker's certificate name" },
  { key: 'databroker_internal_service_urls', kind: 'list', plan: 'databroker.internalServiceUrls', meaning: "data brokers' certificate names" },
  { key: 'databroker_storage_type', kind: 'enum', values: ['memory', 'redis'], default: 'memory', plan: 'databroker.storage.type', meaning: 'storage backend' },
  { key: 'databroker_storage_connection_string', kind: 'secret', plan: 'databroker.storage.connection', meaning: 'redis connection URL' },
  { key: 'databroker_storage_connection_string_file', kind: 'path', plan: 'databroker.storage.connectionString', meaning: 'file holding `databroker_storage_connection_string` (one trailing line break ignored)' },
  { key: 'databroker_storage_cert_file', kind: 'path', plan: 'databroker.storage.certFile', meaning: 'storage client certificate' },
  { key: 'databroker_storage_key_file', kind: 'path', plan: 'databroker.storage.keyFile', meaning: 'storage client key' },
  { key: 'databroker_storage_ca_file', kind: 'path', plan: 'databroker.storage.caFile', meaning: 'storage server roots' },
  { key: 'databroker_storage_tls_skip_verify', kind: 'bool', default: false, plan: 'databroker.storage.tlsSkipVerify', meaning: 'do not verify storage TLS' },
  { key: 'hostedcloud_serverless_authentication_service_account', kind: 'secret', plan: 'identity.hostedcloudServiceAccount', meaning: 'credentials for signed headers to cloud upstreams' },
  { key: 'signing_key', kind: 'keyB64', plan: 'identity.signingKey', meaning: 'ECDSA or RSA key signing the attestation JWT' },
  { key: 'signing_key_file', kind: 'path', plan: 'identity.signingKey', meaning: 'PEM file of `signing_key` (the PEM itself, not base64)' },
  // routes (2.7) and the deprecated policy key
  { key: 'routes', kind: 'special', plan: 'routes', meaning: 'the routes' },
  { key: 'policy', kind: 'special', plan: 'routes', meaning: 'deprecated: routes in the old form', deprecated: 'routes' },
];

/** Settings by key. */
/**
 * Settings whose string value, in any source (a YAML, JSON or TOML string as well as environment
 * text), is a comma-separated list: `jwt_claims_headers: email,groups,user`, as the established
 * proxy's own examples write it. Items are trimmed; empty items are dropped.
 */
export const COMMA_LIST_SETTINGS: ReadonlySet<string> = new Set(['jwt_claims_headers']);

export const SETTINGS_BY_KEY: ReadonlyMap<string, SettingSpec> = new Map(SETTINGS.map((s) => [s.key, s]));

/** Keys removed in earlier releases (docs/configuration.md "Removed keys"), with what to use instead. */
export const REMOVED_KEYS: Readonly<Record<string, string>> = {
  headers: 'use `set_response_headers`',
  signing_key_algorithm: 'remove it: the algorithm is inferred from `signing_key`',
  policy_file: 'put routes under `routes` in the config file',
  grpc_server_max_connection_age: 'remove it: removed in 0.14.0',
  grpc_server_max_connection_age_grace: 'remove it: removed in 0.14.0',
  refresh_cooldown: 'remove it: removed in 0.14.0',
  tracing_debug: 'use `tracing_sample_rate`',
  cache_service_url: 'use `databroker_service_url`',
  authenticate_internal_url: 'use `authenticate_internal_service_url`',
  administrators: 'grant access with route policies',
  enable_user_impersonation: 'remove it: user impersonation was removed in 0.12.0',
};

/** Route fields removed or renamed in the release notes. */
export const REMOVED_ROUTE_FIELDS: Readonly<Record<string, string>> = {
  headers: 'use `set_request_headers`',
};
