/**
 * What `svc run` implements of a plan, in one place: every field of the plan body (settings and
 * route fields, schemas/plan.schema.json) is classified here.
 *
 * - `honoured`: the runtime reads and applies it.
 * - `compiled`: the compiler folds it into other plan fields (`via`), which the runtime honours
 *   (`default_upstream_timeout` is already each route's timeout).
 * - `partial`: honoured, except for what `reason` says; said as a warning at start when used.
 * - `refused`: not implemented. A plan that uses it (`used`: its value differs from the one that
 *   means "off") is refused by `svc run`, at start and on reload, with one error per setting
 *   (`SVC_ERR_UNSUPPORTED_SETTING`, docs/running.md); `svc compile` prints the same list as notes.
 *
 * A test (test/runtime/plan/capabilities.test.ts) walks every field of the plan schema and fails
 * when one is not classified here, or is `honoured` without the runtime reading it. When a feature
 * lands, its settings move from `refused` to `honoured` here.
 *
 * Runtime code: cluster workers check every plan with it, so it imports no compiler code (types only).
 */
import type { Expr, PlanBody, PlanEnvelope, PlanSettings, Route } from '../../compiler/plan/types.ts';
import { SvcError, type RuntimeErrorCode } from '../core/errors.ts';
import { relyingPartyId, underRelyingParty } from '../core/relying-party.ts';
import { routeReadsDevice } from './reads-device.ts';

/** The stable code of a refused setting (docs/running.md). */
export const UNSUPPORTED_SETTING = 'SVC_ERR_UNSUPPORTED_SETTING' satisfies RuntimeErrorCode;

/** What a `used` test sees: the plan body, and whether a config key was written (not defaulted). */
export interface UseContext {
  readonly body: PlanBody;
  readonly settings: PlanSettings;
  /** True when the key was set in the config file or the environment (from the plan's source map). */
  explicit(key: string): boolean;
}

interface Classified {
  /**
   * Config keys that set these fields: settings keys, or route field names for `routes[]` paths.
   * A refused or partial use is named by the first key the source map locates, else the first key.
   */
  readonly keys: readonly string[];
  /** Plan body paths: `settings.metrics.address`, `routes[].tls.customCa`; a path covers its subfields. */
  readonly paths: readonly string[];
}

export type Capability =
  | (Classified & { readonly support: 'honoured' })
  | (Classified & { readonly support: 'compiled'; readonly via: readonly string[] })
  | (Classified & {
      readonly support: 'partial' | 'refused';
      /** Refused: why svc run cannot serve it; partial: what it does not do. One sentence. */
      readonly reason: string;
      /** A global setting in use. */
      readonly used: (cx: UseContext) => boolean;
    })
  | (Classified & {
      readonly support: 'partial' | 'refused';
      readonly reason: string;
      /** A route field in use on `route`. */
      readonly usedBy: (route: Route, cx: UseContext) => boolean;
    });

const honoured = (keys: readonly string[], ...paths: string[]): Capability => ({ support: 'honoured', keys, paths });

const NO_JAEGER_AGENT = 'svc sends spans to tracing_jaeger_collector_endpoint (HTTP Thrift) only, never to the jaeger agent (UDP)';
/**
 * The providers whose directory `svc run` reads with `idp_service_account` (runtime/sessions/directory/).
 * `oidc` has no directory API: with it the setting is refused, never ignored.
 */
export const DIRECTORY_PROVIDERS: readonly string[] = ['gitlab', 'google', 'azure', 'okta', 'github'];
const NO_DIRECTORY =
  'svc reads a directory only for idp_provider `gitlab`, `google`, `azure`, `okta` and `github` (docs/authentication.md "Groups from the directory"); with `oidc`, groups come from the provider\'s `groups` claim';
const NO_DATA_PLANE = 'data-plane bootstrap options are not implemented: svc run proxies in its own process, with no separate data plane to configure';

function refused(keys: readonly string[], paths: readonly string[], reason: string, used: (cx: UseContext) => boolean): Capability {
  return { support: 'refused', keys, paths, reason, used };
}

/** Whether a hostPort equals `host:port`. */
const at = (a: { readonly host: string; readonly port: number } | null, host: string, port: number) => a !== null && a.host === host && a.port === port;
const set = (key: string) => (cx: UseContext) => cx.explicit(key);
/** Upgrades (websocket, SPDY) to an https upstream: they open their own TLS connection (runtime/proxy/upgrade.ts). */

export const CAPABILITIES: readonly Capability[] = [
  // Mode: every role (docs/distributed.md): `all` (with the data broker also served over
  // gRPC), `databroker` (runtime/process/databroker-run.ts), `authorize` (runtime/process/authorize-run.ts),
  // `proxy` (routes, policies asked of the authorize service: runtime/authorize/) and `authenticate`
  // (its own host's endpoints only: runtime/proxy/role.ts).
  honoured(['services'], 'settings.mode.services', 'settings.mode.allInOne'),
  honoured(['shared_secret', 'shared_secret_file'], 'settings.mode.sharedSecret'),

  // Listener and global timeouts.
  honoured(['address'], 'settings.server.address'),
  honoured(['insecure_server'], 'settings.server.insecure'),
  {
    support: 'partial',
    keys: ['http_redirect_addr'],
    paths: ['settings.server.httpRedirectAddress'],
    reason: 'with insecure_server svc run starts no http-to-https redirect listener',
    used: (cx) => cx.settings.server.insecure && cx.settings.server.httpRedirectAddress !== null,
  },
  {
    support: 'partial',
    keys: ['codec_type'],
    paths: ['settings.server.codecType'],
    reason: 'with insecure_server svc run serves HTTP/1.1 only (never h2c); codec_type applies to HTTPS',
    used: (cx) => cx.settings.server.insecure && cx.settings.server.codecType !== 'http1',
  },
  honoured(['use_proxy_protocol'], 'settings.server.useProxyProtocol'),
  honoured(['timeout_read'], 'settings.server.timeoutReadMs'),
  honoured(['timeout_write'], 'settings.server.timeoutWriteMs'),
  honoured(['timeout_idle'], 'settings.server.timeoutIdleMs'),
  { support: 'compiled', keys: ['default_upstream_timeout'], paths: ['settings.server.defaultUpstreamTimeoutMs'], via: ['routes[].timeoutMs'] },
  {
    support: 'partial',
    keys: ['dns_lookup_family'],
    paths: ['settings.server.dnsLookupFamily'],
    reason: 'it applies to proxied requests, upgrades and tcp+https tunnels; health checks resolve upstream names in both families',
    used: (cx) => cx.settings.server.dnsLookupFamily !== 'AUTO',
  },
  honoured(['xff_num_trusted_hops'], 'settings.server.xffNumTrustedHops'),
  honoured(['skip_xff_append'], 'settings.server.skipXffAppend'),

  // TLS.
  honoured(['certificates', 'certificate', 'certificate_file', 'certificate_key', 'certificate_key_file'], 'settings.tls.certificates'),
  honoured(['client_ca', 'client_ca_file'], 'settings.tls.clientCa'),
  honoured(['client_crl', 'client_crl_file'], 'settings.tls.clientCrl'),
  honoured(['certificate_authority', 'certificate_authority_file'], 'settings.tls.certificateAuthority'),
  // The name a data broker's certificate is checked against (runtime/grpc/plan-options.ts).
  honoured(['override_certificate_name'], 'settings.tls.overrideCertificateName'),
  // Autocert (runtime/tls/acme/, OCSP stapling in runtime/tls/ocsp/). `autocert` with
  // `insecure_server` never reaches the runtime: the compiler refuses the pair (SVC3xxx
  // mutually-exclusive-settings), since a plain-HTTP listener could neither answer TLS-ALPN-01 nor
  // serve what it obtained. A reload changing any autocert setting is refused (acme/start.ts).
  honoured(['autocert'], 'settings.autocert.enabled'),
  honoured(['autocert_ca'], 'settings.autocert.caUrl'),
  honoured(['autocert_email'], 'settings.autocert.email'),
  honoured(['autocert_must_staple'], 'settings.autocert.mustStaple'),
  honoured(['autocert_dir'], 'settings.autocert.dir'),
  honoured(['autocert_use_staging'], 'settings.autocert.useStaging'),
  honoured(['autocert_eab_key_id'], 'settings.autocert.eabKeyId'),
  honoured(['autocert_eab_mac_key'], 'settings.autocert.eabMacKey'),
  honoured(['autocert_trusted_ca', 'autocert_trusted_ca_file'], 'settings.autocert.trustedCa'),

  // Sessions and sign-in.
  honoured(['cookie_name'], 'settings.cookie.name'),
  honoured(['cookie_secret', 'cookie_secret_file'], 'settings.cookie.secret'),
  honoured(['cookie_domain'], 'settings.cookie.domain'),
  honoured(['cookie_secure'], 'settings.cookie.secure'),
  honoured(['cookie_http_only'], 'settings.cookie.httpOnly'),
  honoured(['cookie_expire'], 'settings.cookie.expireMs'),
  honoured(['authenticate_service_url'], 'settings.authenticate.serviceUrl'),
  honoured(['authenticate_internal_service_url'], 'settings.authenticate.internalServiceUrl'),
  honoured(['authenticate_callback_path'], 'settings.authenticate.callbackPath'),
  honoured(['signout_redirect_url'], 'settings.authenticate.signoutRedirectUrl'),
  honoured(['forward_auth_url'], 'settings.authenticate.forwardAuthUrl'),
  honoured(['programmatic_redirect_domain_whitelist'], 'settings.authenticate.programmaticRedirectDomains'),
  honoured(['idp_provider'], 'settings.idp.provider'),
  honoured(['idp_provider_url'], 'settings.idp.providerUrl'),
  honoured(['idp_client_id'], 'settings.idp.clientId'),
  honoured(['idp_client_secret', 'idp_client_secret_file'], 'settings.idp.clientSecret'),
  honoured(['idp_scopes'], 'settings.idp.scopes'),
  honoured(['idp_request_params'], 'settings.idp.requestParams'),
  honoured(['idp_trust_unverified_email'], 'settings.idp.trustUnverifiedEmail'),
  // Honoured for DIRECTORY_PROVIDERS (runtime/sessions/identity-manager.ts reads the directory); refused with any other provider.
  refused(['idp_service_account'], ['settings.idp.serviceAccount'], NO_DIRECTORY, (cx) => cx.settings.idp.serviceAccount !== null && !DIRECTORY_PROVIDERS.includes(cx.settings.idp.provider ?? '')),
  // The identity manager (runtime/sessions/identity-manager.ts) reads users and groups from the
  // provider's userinfo endpoint on this interval, each run bounded by the timeout.
  honoured(['idp_refresh_directory_interval'], 'settings.idp.refreshDirectoryIntervalMs'),
  honoured(['idp_refresh_directory_timeout'], 'settings.idp.refreshDirectoryTimeoutMs'),

  // The authorize service, asked by the proxy role (runtime/authorize/open-authorizer.ts): several
  // URLs are balanced and failed over; the internal URL names the certificate. Other roles never call
  // it, so one config file serves every role (an all-in-one plan setting them is a compile error: SVC3021).
  honoured(['authorize_service_url', 'authorize_service_urls'], 'settings.authorize.serviceUrls'),
  honoured(['authorize_internal_service_url'], 'settings.authorize.internalServiceUrl'),
  // A data broker service over gRPC (runtime/databroker/grpc-store.ts, runtime/grpc/plan-options.ts):
  // several URLs are balanced and failed over; the internal URL names the certificate.
  honoured(['databroker_service_url', 'databroker_service_urls'], 'settings.databroker.serviceUrls'),
  honoured(['databroker_internal_service_url', 'databroker_internal_service_urls'], 'settings.databroker.internalServiceUrls'),
  // Sessions in memory or in Redis (runtime/databroker/open-store.ts, redis-options.ts): every URL
  // shape, its parameters, and the TLS files. The plan's parsed `connection` is what a reviewer
  // sees; the runtime reads the same URL from the connection string secret.
  honoured(['databroker_storage_type'], 'settings.databroker.storage.type'),
  honoured(['databroker_storage_connection_string', 'databroker_storage_connection_string_file'], 'settings.databroker.storage.connectionString'),
  { support: 'compiled', keys: ['databroker_storage_connection_string'], paths: ['settings.databroker.storage.connection'], via: ['settings.databroker.storage.connectionString'] },
  honoured(['databroker_storage_cert_file'], 'settings.databroker.storage.certFile'),
  honoured(['databroker_storage_key_file'], 'settings.databroker.storage.keyFile'),
  honoured(['databroker_storage_ca_file'], 'settings.databroker.storage.caFile'),
  honoured(['databroker_storage_tls_skip_verify'], 'settings.databroker.storage.tlsSkipVerify'),
  // The gRPC defaults (`:5443`, insecure, all-in-one) are in every plan: only a value written in the
  // config, or one other than the mode's default, is a use.
  // The data broker served over gRPC (runtime/process/grpc-databroker.ts) and its clients (runtime/grpc/).
  honoured(['grpc_address'], 'settings.grpc.address'),
  honoured(['grpc_insecure'], 'settings.grpc.insecure'),
  honoured(['grpc_client_timeout'], 'settings.grpc.clientTimeoutMs'),
  // Round robin over every DNS address of a service URL's host, or one address (runtime/grpc/client.ts).
  honoured(['grpc_client_dns_roundrobin'], 'settings.grpc.clientDnsRoundRobin'),

  // Identity.
  honoured(['signing_key', 'signing_key_file'], 'settings.identity.signingKey'),
  // Inferred from the key by the compiler for reviewers; the runtime infers it from the key again.
  { support: 'compiled', keys: ['signing_key'], paths: ['settings.identity.signingAlgorithm'], via: ['settings.identity.signingKey'] },
  honoured(['jwt_claims_headers'], 'settings.identity.claimHeaders'),
  honoured(['hostedcloud_serverless_authentication_service_account'], 'settings.identity.hostedcloudServiceAccount'),
  { support: 'compiled', keys: ['set_response_headers'], paths: ['settings.headers.response'], via: ['routes[].responseHeaders.set'] },

  // Logs (runtime/observe/log/run-log.ts).
  honoured(['svc_debug'], 'settings.logging.debug'),
  honoured(['log_level'], 'settings.logging.level'),
  honoured(['proxy_log_level'], 'settings.logging.proxyLevel'),

  // Observability.
  // Metrics listener (runtime/observe/metrics/): /metrics, /healthz, /readyz.
  honoured(['metrics_address'], 'settings.metrics.address'),
  honoured(['metrics_basic_auth', 'metrics_basic_auth_file'], 'settings.metrics.basicAuth'),
  honoured(['metrics_certificate', 'metrics_certificate_file'], 'settings.metrics.certificate'),
  honoured(['metrics_certificate_key', 'metrics_certificate_key_file'], 'settings.metrics.certificateKey'),
  honoured(['metrics_client_ca', 'metrics_client_ca_file'], 'settings.metrics.clientCa'),
  // Tracing (runtime/observe/trace/tracing.ts).
  honoured(['tracing_provider'], 'settings.tracing.provider'),
  honoured(['tracing_sample_rate'], 'settings.tracing.sampleRate'),
  honoured(['tracing_apm_address'], 'settings.tracing.apmAddress'),
  honoured(['tracing_jaeger_collector_endpoint'], 'settings.tracing.jaegerCollectorEndpoint'),
  // The compiler asks for both jaeger endpoints (docs/tracing.md "Exporters"); spans go to the collector only.
  {
    support: 'partial',
    keys: ['tracing_jaeger_agent_endpoint'],
    paths: ['settings.tracing.jaegerAgentEndpoint'],
    reason: NO_JAEGER_AGENT,
    used: (cx) => cx.settings.tracing.jaegerAgentEndpoint !== null,
  },
  honoured(['tracing_zipkin_endpoint'], 'settings.tracing.zipkinEndpoint'),
  honoured(['tracing_otlp_endpoint'], 'settings.tracing.otlpEndpoint'),
  refused(['dp_admin_address'], ['settings.dp.adminAddress'], NO_DATA_PLANE, (cx) => cx.settings.dp.adminAddress !== null),
  refused(['dp_admin_access_log_path'], ['settings.dp.adminAccessLogPath'], NO_DATA_PLANE, (cx) => cx.settings.dp.adminAccessLogPath !== null),
  refused(['dp_admin_profile_path'], ['settings.dp.adminProfilePath'], NO_DATA_PLANE, (cx) => cx.settings.dp.adminProfilePath !== null),
  refused(['dp_bind_config_freebind'], ['settings.dp.bindConfigFreebind'], NO_DATA_PLANE, (cx) => cx.settings.dp.bindConfigFreebind !== null),
  refused(['dp_bind_config_source_address'], ['settings.dp.bindConfigSourceAddress'], NO_DATA_PLANE, (cx) => cx.settings.dp.bindConfigSourceAddress !== null),

  // Routes.
  honoured(['name'], 'routes[].id', 'routes[].index', 'routes[].name'),
  honoured(['from'], 'routes[].from'),
  honoured(['path', 'prefix', 'regex'], 'routes[].match'),
  honoured(['to', 'redirect'], 'routes[].action'),
  honoured(['policy', 'allowed_domains', 'allowed_groups', 'allowed_users', 'allowed_idp_claims', 'cors_allow_preflight', 'allow_any_authenticated_user'], 'routes[].policy'),
  honoured(['allow_public_unauthenticated_access'], 'routes[].public'),
  honoured(['prefix_rewrite', 'regex_rewrite_pattern', 'regex_rewrite_substitution'], 'routes[].rewrite'),
  honoured(['preserve_host_header', 'host_rewrite', 'host_rewrite_header', 'host_path_regex_rewrite_pattern', 'host_path_regex_rewrite_substitution'], 'routes[].host'),
  honoured(['set_request_headers', 'remove_request_headers'], 'routes[].requestHeaders'),
  honoured(['set_response_headers', 'rewrite_response_headers'], 'routes[].responseHeaders'),
  honoured(['timeout'], 'routes[].timeoutMs'),
  honoured(['idle_timeout'], 'routes[].idleTimeoutMs'),
  honoured(['pass_identity_headers'], 'routes[].passIdentityHeaders'),
  honoured(['tls_skip_verify'], 'routes[].tls.skipVerify'),
  honoured(['tls_server_name'], 'routes[].tls.serverName'),
  honoured(['tls_downstream_client_ca', 'tls_downstream_client_ca_file'], 'routes[].tls.downstreamClientCa'),
  honoured(['tls_custom_ca', 'tls_custom_ca_file'], 'routes[].tls.customCa'),
  honoured(['tls_client_cert', 'tls_client_cert_file', 'tls_client_key', 'tls_client_key_file'], 'routes[].tls.clientCert', 'routes[].tls.clientKey'),
  honoured(['allow_websockets'], 'routes[].allowWebsockets'),
  honoured(['allow_spdy'], 'routes[].allowSpdy'),
  honoured(['allow_encoded_path_characters'], 'routes[].allowEncodedPathCharacters'),
  honoured(['allow_path_parameters'], 'routes[].allowPathParameters'),
  honoured(['path_case'], 'routes[].pathCase'),
  honoured(['allow_underscores_in_headers'], 'routes[].allowUnderscoresInHeaders'),
  honoured(['lb_policy', 'least_request_lb_config', 'ring_hash_lb_config', 'maglev_lb_config'], 'routes[].lb'),
  honoured(['health_checks'], 'routes[].healthChecks'),
  honoured(['outlier_detection'], 'routes[].outlierDetection'),
  honoured(['enable_hostedcloud_serverless_authentication'], 'routes[].hostedcloudServerlessAuthentication'),
  // One ID token audience per route (runtime/authn/serverless-token.ts): the identity step runs
  // before the upstream is picked, so every `to` of such a route must name one host. No path of
  // its own: the field is classified above; this refuses the one shape svc run does not serve.
  {
    support: 'refused',
    keys: ['enable_hostedcloud_serverless_authentication'],
    paths: [],
    reason: 'one ID token audience per route: every `to` of a route with enable_hostedcloud_serverless_authentication must have the same host',
    usedBy: (r) => r.hostedcloudServerlessAuthentication && r.action.kind === 'forward' && new Set(r.action.upstreams.map((u) => u.host)).size > 1,
  },
  honoured(['orchestrator_service_account_token', 'orchestrator_service_account_token_file'], 'routes[].orchestratorServiceAccountToken'),
  // The `device` criterion (docs/policy.md "`device`"): a session gets a device from the device page
  // (runtime/authn/webauthn.ts), served in every mode (the devices live in the data broker, reached
  // in split mode over gRPC and by cluster workers through their primary), but only under the
  // relying party id: the registrable domain of the authenticate service's host
  // (runtime/core/relying-party.ts). Without one, or on a route host outside it, a route reading
  // `device` would send users to a page that cannot work.
  honoured(['device_self_registration_approved'], 'settings.authenticate.deviceSelfRegistrationApproved'),
  {
    support: 'refused',
    keys: ['policy'],
    paths: [],
    reason:
      'the `device` criterion needs a WebAuthn relying party id, the registrable domain of authenticate_service_url\'s host under the public suffix list (docs/authentication.md "Devices"): authenticate_service_url is unset, or its host has none (an IP address, `localhost`, a bare public suffix)',
    usedBy: (r, cx) => routeReadsDevice(r) && deviceRelyingParty(cx.settings) === null,
  },
  {
    support: 'refused',
    keys: ['policy'],
    paths: [],
    reason: 'the `device` criterion needs the device page, served only on https route hosts equal to or under the relying party id (the registrable domain of authenticate_service_url\'s host, docs/authentication.md "Devices")',
    usedBy: (r, cx) => {
      const rpId = deviceRelyingParty(cx.settings);
      return routeReadsDevice(r) && rpId !== null && !(r.from.scheme === 'https' && underRelyingParty(r.from.host, rpId));
    },
  },
];

/** The device page's relying party id for these settings, or null (see the capabilities above). */
function deviceRelyingParty(settings: PlanSettings): string | null {
  const serviceUrl = settings.authenticate.serviceUrl;
  return serviceUrl === null ? null : relyingPartyId(new URL(serviceUrl).host);
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** One use of a refused or partly honoured setting by a plan. */
export interface SettingUse {
  readonly support: 'refused' | 'partial';
  /** The config key (a route field name for a route). */
  readonly key: string;
  /** Where it was set: `file:line:col` or `env:NAME`; undefined when the plan does not say. */
  readonly at: string | undefined;
  /** The route, for a route field: its name, else `#index from`. */
  readonly route: string | undefined;
  readonly reason: string;
}

/** Every use of a refused or partly honoured setting by `plan`, in source order (config file, then environment). */
export function settingUses(plan: Pick<PlanEnvelope, 'body' | 'sourceMap'>): readonly SettingUse[] {
  const where = plan.sourceMap.settings;
  const cx: UseContext = { body: plan.body, settings: plan.body.settings, explicit: (key) => Object.hasOwn(where, key) };
  const out: SettingUse[] = [];
  for (const c of CAPABILITIES) {
    if (c.support !== 'refused' && c.support !== 'partial') continue;
    if ('used' in c) {
      if (!c.used(cx)) continue;
      const key = c.keys.find((k) => Object.hasOwn(where, k)) ?? c.keys[0]!;
      out.push({ support: c.support, key, at: where[key], route: undefined, reason: c.reason });
    } else {
      plan.body.routes.forEach((route, i) => {
        if (!c.usedBy(route, cx)) return;
        const map = plan.sourceMap.routes[i];
        const fields = map?.fields ?? {};
        const key = c.keys.find((k) => Object.hasOwn(fields, k)) ?? c.keys[0]!;
        out.push({ support: c.support, key, at: fields[key] ?? map?.at, route: route.name ?? `#${route.index} ${route.from.url}`, reason: c.reason });
      });
    }
  }
  return out.sort((a, b) => compareLocations(a.at, b.at));
}

/** `file:line:col` in file, line and column order, then `env:NAME`, then unknown (stable otherwise). */
function compareLocations(a: string | undefined, b: string | undefined): number {
  const parse = (at: string | undefined): [number, string, number, number] => {
    if (at === undefined) return [2, '', 0, 0];
    const m = /^(.*):(\d+):(\d+)$/.exec(at);
    return m ? [0, m[1]!, Number(m[2]), Number(m[3])] : [1, at, 0, 0];
  };
  const x = parse(a);
  const y = parse(b);
  return x[0] - y[0] || (x[1] < y[1] ? -1 : x[1] > y[1] ? 1 : 0) || x[2] - y[2] || x[3] - y[3];
}

/** A refused use as `svc run` reports it: `config.yaml:12:3: error SVC_ERR_UNSUPPORTED_SETTING metrics_address: …`. */
export function errorLine(u: SettingUse): string {
  return `${u.at !== undefined ? `${u.at}: ` : ''}error ${UNSUPPORTED_SETTING} ${u.key}: ${u.route !== undefined ? `route ${u.route}: ` : ''}${u.reason}`;
}

/** A use as `svc compile` notes it. */
export function noteLine(u: SettingUse): string {
  const what = u.support === 'refused' ? 'is not supported by svc run yet' : 'is honoured only partly by svc run';
  return `${u.at !== undefined ? `${u.at}: ` : ''}note: ${u.key}${u.route !== undefined ? ` (route ${u.route})` : ''} ${what}: ${u.reason}`;
}

/** The error lines (one per refused setting) when svc run cannot serve `plan`; undefined when it can. */
export function refusal(plan: Pick<PlanEnvelope, 'body' | 'sourceMap'>): string | undefined {
  const lines = settingUses(plan)
    .filter((u) => u.support === 'refused')
    .map(errorLine);
  return lines.length > 0 ? lines.join('\n') : undefined;
}

/**
 * {@link refusal} as log entries, one per refused setting, for `svc run` with JSON logs:
 * `{level, code, name, at, msg}` with the setting as `name`, like a compiler diagnostic's entry.
 */
export function refusalEntries(plan: Pick<PlanEnvelope, 'body' | 'sourceMap'>): readonly Record<string, unknown>[] {
  return settingUses(plan)
    .filter((u) => u.support === 'refused')
    .map((u) => ({ level: 'error', code: UNSUPPORTED_SETTING, name: u.key, ...(u.at !== undefined ? { at: u.at } : {}), ...(u.route !== undefined ? { route: u.route } : {}), msg: u.reason }));
}

/** Why a plan is refused: the error lines of {@link refusal}. */
export class UnsupportedSettingsError extends SvcError<typeof UNSUPPORTED_SETTING> {
  constructor(message: string) {
    super(UNSUPPORTED_SETTING, message);
    this.name = 'UnsupportedSettingsError';
  }
}

/** Throws {@link UnsupportedSettingsError} when `plan` uses a setting svc run does not implement. */
export function assertSupported(plan: Pick<PlanEnvelope, 'body' | 'sourceMap'>): void {
  const message = refusal(plan);
  if (message !== undefined) throw new UnsupportedSettingsError(message);
}

/** The uses honoured only partly, as log entries `svc run` writes (warn) when it starts serving a plan. */
export function partialUses(plan: Pick<PlanEnvelope, 'body' | 'sourceMap'>): readonly Record<string, unknown>[] {
  return settingUses(plan)
    .filter((u) => u.support === 'partial')
    .map((u) => ({ level: 'warn', msg: 'setting honoured only partly', setting: u.key, ...(u.route !== undefined ? { route: u.route } : {}), ...(u.at !== undefined ? { at: u.at } : {}), detail: u.reason }));
}

/** The classification of a plan body path (the nearest classified ancestor); undefined when none. */
export function capabilityOf(path: string): Capability | undefined {
  let best: Capability | undefined;
  let bestLength = -1;
  for (const c of CAPABILITIES)
    for (const p of c.paths)
      if ((path === p || path.startsWith(`${p}.`) || path.startsWith(`${p}[`)) && p.length > bestLength) {
        best = c;
        bestLength = p.length;
      }
  return best;
}
