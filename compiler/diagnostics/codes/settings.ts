import { diag, q } from '../define.ts';

export const InvalidDuration = diag<{ key: string; value: string }>(
  'SVC3001', 'invalid-duration', 'error',
  'A duration that is not a number with a unit suffix (`ms`, `s`, `m`, `h`), such as `30s` or `1h45m`.',
  (a) => `\`${a.key}\` is not a duration: ${q(a.value)}`,
  'write a number with a unit suffix, such as `30s`, `5m` or `1h45m`; `0` means no timeout where allowed',
);

export const InvalidUrl = diag<{ key: string; value: string; problem: string }>(
  'SVC3002', 'invalid-url', 'error',
  'A URL without a scheme or host name, or one that does not parse.',
  (a) => `\`${a.key}\` is not a valid URL: ${q(a.value)} ${a.problem}`,
  'write a full URL with a scheme and a host name, such as `https://auth.example.com`',
);

export const InvalidHostPort = diag<{ key: string; value: string }>(
  'SVC3003', 'invalid-host-port', 'error',
  'A listening address that is not `host:port` or `:port` with a port from 1 to 65535.',
  (a) => `\`${a.key}\` is not a \`host:port\` address: ${q(a.value)}`,
  'write `:443`, `0.0.0.0:8443` or `[::1]:9090`',
);

export const InvalidBase64 = diag<{ key: string }>(
  'SVC3004', 'invalid-base64', 'error',
  'A value that must be standard base64 text and is not.',
  (a) => `\`${a.key}\` is not valid base64`,
  (a) => `encode the value with \`base64 -w0\`${a.key.endsWith('certificate') || a.key.endsWith('_ca') ? `, or give a file with \`${a.key}_file\`` : ''}`,
);

export const SecretWrongSize = diag<{ key: string; bytes: number }>(
  'SVC3005', 'secret-wrong-size', 'error',
  '`shared_secret` and `cookie_secret` must be base64 of exactly 32 random bytes (256 bits).',
  (a) => `\`${a.key}\` decodes to ${a.bytes} bytes, not 32`,
  'generate one with `head -c32 /dev/urandom | base64`',
);

export const InlineSecret = diag<{ key: string }>(
  'SVC3006', 'inline-secret', 'warning',
  'A secret written literally in the config file ends up inline in the plan. It works, but the config file is then a secret too.',
  (a) => `\`${a.key}\` is written inline in the config file`,
  (a) => `set it with the environment variable \`${a.key.toUpperCase()}\` instead, so the plan holds a reference`,
);

export const FileUnreadable = diag<{ key: string; file: string; reason: string }>(
  'SVC3007', 'file-unreadable', 'error',
  'A file named by the configuration cannot be read at compile time.',
  (a) => `cannot read \`${a.file}\` named by \`${a.key}\`: ${a.reason}`,
  'file locations are relative to the working directory svc runs in',
);

export const InvalidCertificate = diag<{ key: string; reason: string }>(
  'SVC3008', 'invalid-certificate', 'error',
  'A certificate (or CA bundle) that is not PEM-encoded X.509.',
  (a) => `\`${a.key}\` is not a PEM certificate: ${a.reason}`,
  'give the PEM text (`-----BEGIN CERTIFICATE-----`), base64-encoded for the inline key',
);

export const InvalidPrivateKey = diag<{ key: string; reason: string }>(
  'SVC3009', 'invalid-private-key', 'error',
  'A private key that is not a PEM-encoded private key.',
  (a) => `\`${a.key}\` is not a PEM private key: ${a.reason}`,
  'give the PEM text (`-----BEGIN PRIVATE KEY-----`), base64-encoded for the inline key',
);

export const CertificateKeyMismatch = diag<{ cert: string; key: string }>(
  'SVC3010', 'certificate-key-mismatch', 'error',
  'A certificate whose public key does not belong to the private key given with it.',
  (a) => `the private key in \`${a.key}\` does not match the certificate in \`${a.cert}\``,
  'pair each certificate with its own key',
);

export const MutuallyExclusiveSettings = diag<{ a: string; b: string }>(
  'SVC3011', 'mutually-exclusive-settings', 'error',
  'Two settings that say the same thing in different ways, such as a value and its `_file` form, or a singular and a plural key.',
  (a) => `\`${a.a}\` and \`${a.b}\` cannot both be set`,
  (a) => `keep one of \`${a.a}\` and \`${a.b}\``,
);

export const UnsupportedSigningKey = diag<{ type: string }>(
  'SVC3012', 'unsupported-signing-key', 'error',
  '`signing_key` must be an ECDSA (P-256, P-384, P-521) or RSA private key; Ed25519 is unsupported (0.14.0).',
  (a) => `\`signing_key\` is a ${a.type} key; only ECDSA and RSA keys are supported`,
  'generate one with `openssl ecparam -genkey -name prime256v1 -noout | openssl pkcs8 -topk8 -nocrypt | base64 -w0`',
);

export const InvalidRedisUrl = diag<{ problem: string }>(
  'SVC3013', 'invalid-redis-url', 'error',
  'A `databroker_storage_connection_string` that is not one of the redis URL shapes (docs/scale-out.md).',
  (a) => `\`databroker_storage_connection_string\` is not a valid redis URL: ${a.problem}`,
  'use `redis://[user:pass@]host:port/[db]`, `redis+sentinel://[:pass@]host:port[,host:port]/master[/db]`, `redis+cluster://[user:pass@]host:port[,host:port]/` or their `rediss` TLS forms',
);

export const ControlCharacter = diag<{ key: string }>(
  'SVC3014', 'control-character', 'error',
  'A string setting that contains a control character (newline, tab, NUL, ...). Such values are how header and config injection attacks start (docs/security.md S28).',
  (a) => `\`${a.key}\` contains a control character`,
  'remove line breaks, tabs and other control characters from the value',
);

export const NoCertificates = diag(
  'SVC3015', 'no-certificates', 'error',
  'No TLS certificate is configured and neither `insecure_server` nor `autocert` is set.',
  () => 'no certificate configured: set `certificate_file` and `certificate_key_file` (or `certificates`), `autocert`, or `insecure_server`',
  'for local testing behind a TLS-terminating ingress, set `insecure_server: true`',
);

export const MissingRequiredSetting = diag<{ key: string; why: string; produce?: string }>(
  'SVC3016', 'missing-required-setting', 'error',
  'A setting the selected services need is not set. Where the established proxy generates or defaults the value (`shared_secret`, `cookie_secret`, `signout_redirect_url`), the help gives one command that produces a good one.',
  (a) => `\`${a.key}\` is required ${a.why}`,
  (a) =>
    a.produce === undefined
      ? `set \`${a.key}\` in the config file or with the environment variable \`${a.key.toUpperCase()}\``
      : `set \`${a.key}\` in the config file or with the environment variable \`${a.key.toUpperCase()}\`, for example: ${a.produce}`,
);

export const InvalidHeaderName = diag<{ key: string; name: string }>(
  'SVC3017', 'invalid-header-name', 'error',
  'A header name that is not an HTTP token (RFC 9110): letters, digits and ``!#$%&\'*+-.^_`|~`` only.',
  (a) => `\`${a.key}\` names an invalid header ${q(a.name)}`,
  'header names are letters, digits and `-`',
);

export const InvalidHeaderValue = diag<{ key: string; name: string }>(
  'SVC3018', 'invalid-header-value', 'error',
  'A header value with characters HTTP does not allow (control characters).',
  (a) => `\`${a.key}\` gives header ${q(a.name)} a value with control characters`,
  'remove line breaks and other control characters',
);

export const TracingEndpointMissing = diag<{ provider: string; key: string }>(
  'SVC3019', 'tracing-endpoint-missing', 'error',
  'A tracing provider without the endpoint it needs.',
  (a) => `\`tracing_provider\` \`${a.provider}\` needs \`${a.key}\``,
  (a) => `set \`${a.key}\``,
);

export const DependentSettingMissing = diag<{ key: string; needs: string }>(
  'SVC3020', 'dependent-setting-missing', 'error',
  'A setting that only makes sense together with another one that is not set.',
  (a) => `\`${a.key}\` needs \`${a.needs}\``,
  (a) => `set \`${a.needs}\` or remove \`${a.key}\``,
);

export const AllInOneServiceUrl = diag<{ key: string }>(
  'SVC3021', 'all-in-one-service-url', 'error',
  'In all-in-one mode the authorize service is reached on loopback; an old config that sets `authorize_service_url` makes gRPC calls fail with DeadlineExceeded.',
  (a) => `\`${a.key}\` must not be set when \`services\` is \`all\``,
  'remove it: all-in-one mode infers it as localhost',
);

export const InvalidValue = diag<{ key: string; value: string; expected: string }>(
  'SVC3022', 'invalid-value', 'error',
  'A value with the right type but outside what the setting accepts.',
  (a) => `\`${a.key}\` has an invalid value ${q(a.value)}: ${a.expected}`,
);

export const InsecureSetting = diag<{ key: string; risk: string }>(
  'SVC3023', 'insecure-setting', 'warning',
  'A legal setting that weakens security, such as turning off cookie `Secure` or TLS verification.',
  (a) => `\`${a.key}\` ${a.risk}`,
  'fine for a test setup; do not ship it',
);

export const GroupsWithoutServiceAccount = diag<{ where: string }>(
  'SVC3024', 'groups-without-service-account', 'warning',
  'A policy uses groups but `idp_service_account` is not set; for most providers group data is then missing and group rules never match.',
  (a) => `${a.where} uses groups but \`idp_service_account\` is not set`,
  'set `idp_service_account`, or ignore this if your OIDC provider sends groups as a claim',
);

export const SettingWithoutEffect = diag<{ key: string; because: string }>(
  'SVC3025', 'setting-without-effect', 'warning',
  'A setting that only takes effect together with another one, which is not set (such as `autocert_email` without `autocert: true`, or `metrics_certificate` without `metrics_address`). It is ignored.',
  (a) => `\`${a.key}\` has no effect ${a.because}`,
  'set the setting it depends on, or remove this one',
);

export const ForwardAuthCallerUnauthenticated = diag<{ why: string }>(
  'SVC3026', 'forward-auth-caller-unauthenticated', 'warning',
  'The forward-authentication endpoint (`forward_auth_url`) answers callers it cannot authenticate: without `client_ca` over TLS, any client that reaches it can ask for decisions and identity headers (docs/security.md S13).',
  (a) => `\`forward_auth_url\` answers any caller: ${a.why}`,
  'set `client_ca` (or `client_ca_file`) and give each proxy a client certificate (nginx `proxy_ssl_certificate`, Caddy `tls_client_auth`); until then keep the forward-auth host reachable by the proxies only',
);

export const DirectoryRefreshOutOfRange = diag<{ key: string; value: string; minimum: string }>(
  'SVC3035', 'directory-refresh-out-of-range', 'error',
  'An `idp_refresh_directory_interval` or `idp_refresh_directory_timeout` below its minimum: the identity manager would ask the identity provider about every session continuously, or never finish a run.',
  (a) => `\`${a.key}\` is ${q(a.value)}, below its minimum of ${a.minimum}`,
  'use the default (`10m` interval, `1m` timeout) or a longer duration; short intervals may hit the provider\'s rate limits',
);

export const MetricsBasicAuthWithoutColon = diag<{ key: string }>(
  'SVC3040', 'metrics-basic-auth-without-colon', 'error',
  '`metrics_basic_auth` must be base64 of `username:password`; a value that decodes to text without a colon names no user and no password, so no scraper could ever send it.',
  (a) => `\`${a.key}\` does not decode to \`username:password\`: the decoded text has no colon`,
  'encode the pair with `printf %s "user:password" | base64 -w0`',
);

export const MetricsBasicAuthEmptyCredential = diag<{ key: string; empty: 'user name' | 'password' | 'user name and password' }>(
  'SVC3041', 'metrics-basic-auth-empty-credential', 'error',
  '`metrics_basic_auth` decodes to `username:password` with an empty user name or an empty password (`prometheus:`, `:secret`, `:`). An empty password protects nothing: `Authorization: Basic Og==` (the base64 of `:`) or `prometheus:` is guessed at the first try. svc also refuses to start the metrics listener with such a credential from a plan compiled elsewhere.',
  (a) => `\`${a.key}\` decodes to \`username:password\` with an empty ${a.empty}`,
  'give both a user name and a random password: `printf %s "prometheus:$(head -c24 /dev/urandom | base64)" | base64 -w0`',
);

export const InvalidServiceAccount = diag<{ key: string; provider: string; problem: string }>(
  'SVC3045', 'invalid-service-account', 'error',
  '`idp_service_account` must be base64 of a JSON object holding the fields `idp_provider` needs to read its directory (docs/authentication.md "Groups from the directory"): `private_token` for `gitlab`; a service-account key file (`client_email`, `private_key`) plus `impersonate_user` for `google`; `client_id`, `client_secret` and `directory_id` for `azure`; `api_key` for `okta`; `username` and `personal_access_token` for `github`. Optional API bases (`api_url`, `token_uri`, `login_url`, `graph_url`) must be http(s) URLs.',
  (a) => `\`${a.key}\` for \`${a.provider}\` ${a.problem}`,
  'encode the JSON object with `base64 -w0 < service-account.json`; docs/authentication.md "Groups from the directory" lists the fields of each provider',
);

export const InvalidServerlessServiceAccount = diag<{ key: string; problem: string }>(
  'SVC3046', 'invalid-serverless-service-account', 'error',
  '`hostedcloud_serverless_authentication_service_account` must be base64 of a cloud service-account key file: a JSON object with `client_email`, a PEM `private_key` and, when given, an http(s) `token_uri` (docs/authentication.md "Serverless upstreams"). svc signs an assertion with the key and exchanges it at `token_uri` for the ID token each serverless upstream receives; a value it cannot read would refuse every such request.',
  (a) => `\`${a.key}\` ${a.problem}`,
  'encode the key file the cloud console gave you with `base64 -w0 < key.json`',
);

export const AutocertWildcardHost = diag<{ host: string }>(
  'SVC3050', 'autocert-wildcard-host', 'warning',
  'With `autocert: true`, a route whose `from` host is a wildcard (`*.example.com`) that no configured certificate covers: a wildcard certificate needs the DNS-01 challenge, which svc does not answer, so autocert does not obtain one and the host is served with a self-signed certificate.',
  (a) => `autocert does not obtain a certificate for the wildcard host \`${a.host}\` (it needs DNS-01, which svc does not answer)`,
  'add a certificate covering it (`certificates`), or list the host names this route serves instead of a wildcard',
);
