/**
 * Stage 5 (settings): lowers the global settings (docs/configuration.md "Settings") into the plan's typed form:
 * durations in ms, URLs parsed, addresses split, secrets as references, PEM files read and checked,
 * mode-dependent defaults applied (all-in-one: gRPC on `:5443`, insecure gRPC, `http1`, localhost
 * authorize and data broker URLs).
 */
import * as D from '../diagnostics/codes/settings.ts';
import type { Span } from '../source/source-file.ts';
import type { CertificatePair, HostPort, LogLevel, PemSource, PlanSettings, RedisConnection, Secret } from '../plan/types.ts';
import { SETTINGS } from '../settings/table.ts';
import { spanAt, type LowerCtx } from './lower-ctx.ts';
import { certificateNames, fingerprint, keySource, pemSource, secretSource } from './material.ts';
import { parseRedisUrl } from './redis.ts';
import { decodeBase64, hasControlChar, isHeaderName, lowerDuration, lowerHostPort, lowerUrl } from './values.ts';
import { headerMap } from './headers.ts';

/** Default global response headers (`set_response_headers`, docs/decisions.md §8). */
export const DEFAULT_RESPONSE_HEADERS: Readonly<Record<string, string>> = {
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'SAMEORIGIN',
  'X-XSS-Protection': '1; mode=block',
  'Strict-Transport-Security': 'max-age=31536000; includeSubDomains; preload',
};

const LOCAL_GRPC_URL = 'http://localhost:5443/';

export function lowerSettings(data: Record<string, unknown>, cx: LowerCtx): PlanSettings {
  const at = (key: string): Span | undefined => spanAt(cx, key);
  const raw = (key: string): unknown => data[key];
  const str = (key: string): string | undefined => {
    const v = raw(key);
    if (typeof v !== 'string') return undefined;
    if (hasControlChar(v)) {
      cx.r.report(D.ControlCharacter, at(key), { key }, key);
      return undefined;
    }
    return v;
  };
  const get = (key: string): { value: string; at: Span | undefined } | undefined => {
    const v = str(key);
    return v === undefined || v === '' ? undefined : { value: v, at: at(key) };
  };
  const def = (key: string): unknown => SETTINGS.find((s) => s.key === key)?.default;
  const bool = (key: string, fallback = false): boolean => {
    const v = raw(key);
    return typeof v === 'boolean' ? v : ((def(key) as boolean | undefined) ?? fallback);
  };
  const num = (key: string): number => {
    const v = raw(key);
    return typeof v === 'number' ? v : (def(key) as number);
  };
  const duration = (key: string): number => {
    const v = raw(key);
    if (v !== undefined) {
      const ms = lowerDuration(v, key, at(key), cx.r);
      if (ms !== undefined) return ms;
    }
    return lowerDuration(def(key), key, undefined, cx.r) ?? 0;
  };
  const url = (key: string): string | null => {
    const v = get(key);
    if (!v) return null;
    return lowerUrl(v.value, key, v.at, cx.r, SETTINGS.find((s) => s.key === key)?.schemes)?.href ?? null;
  };
  const urlList = (key: string): string[] => {
    const v = raw(key);
    if (!Array.isArray(v)) return [];
    const out: string[] = [];
    v.forEach((item, i) => {
      if (typeof item !== 'string') return;
      const u = lowerUrl(item, `${key}[${i}]`, spanAt(cx, `${key}[${i}]`) ?? at(key), cx.r);
      if (u) out.push(u.href);
    });
    return out;
  };
  const hostPort = (key: string, fallback?: string): HostPort | null => {
    const v = get(key);
    if (v) return lowerHostPort(v.value, key, v.at, cx.r) ?? null;
    return fallback === undefined ? null : (lowerHostPort(fallback, key, undefined, cx.r) ?? null);
  };
  // A secret with a `_file` form (`fileKey`) is read from either; the plan holds a reference to a file.
  const secret = (key: string, fileKey?: string): Secret | null => {
    const v = fileKey ? secretSource(key, fileKey, cx, get) : secretSource(key, '-', cx, (k) => (k === key ? get(k) : undefined));
    return v?.secret ?? null;
  };
  const secret32 = (key: string, fileKey: string): Secret | null => {
    const v = secretSource(key, fileKey, cx, get);
    if (!v) return null;
    const buf = decodeBase64(v.text);
    if (!buf) cx.r.report(D.InvalidBase64, v.at, { key: v.name }, v.name);
    else if (buf.length !== 32) cx.r.report(D.SecretWrongSize, v.at, { key: v.name, bytes: buf.length }, v.name);
    return v.secret;
  };
  // `metrics_basic_auth`: base64 of `username:password`; docs/configuration.md "Settings"; the runtime compares the pair.
  const basicAuth = (key: string, fileKey: string): Secret | null => {
    const v = secretSource(key, fileKey, cx, get);
    if (!v) return null;
    const buf = decodeBase64(v.text);
    if (!buf) cx.r.report(D.InvalidBase64, v.at, { key: v.name }, v.name);
    else if (!buf.toString('utf8').includes(':')) cx.r.report(D.MetricsBasicAuthWithoutColon, v.at, { key: v.name }, v.name);
    return v.secret;
  };
  const singularOrPlural = (one: string, many: string): string[] => {
    if (get(one) && Array.isArray(raw(many))) cx.r.report(D.MutuallyExclusiveSettings, at(many), { a: one, b: many }, many);
    const u = url(one);
    return u ? [u] : urlList(many);
  };
  const pem = (inlineKey: string, fileKey: string, kind: 'certificate' | 'crl' = 'certificate'): PemSource | null =>
    pemSource(inlineKey, fileKey, kind, cx, get)?.source ?? null;

  // Mode.
  const services = (raw('services') as PlanSettings['mode']['services'] | undefined) ?? 'all';
  const allInOne = services === 'all';
  const runs = (s: string) => allInOne || services === s;

  // Certificates: the `certificates` list plus the single pair (inline and file forms may be mixed).
  const certificates: CertificatePair[] = [];
  const pairCert = pemSource('certificate', 'certificate_file', 'certificate', cx, get);
  const pairKey = keySource('certificate_key', 'certificate_key_file', cx, get);
  if (pairCert && pairKey) {
    const cert = pairCert.certs[0]!;
    if (pairKey.key && !cert.checkPrivateKey(pairKey.key)) {
      cx.r.report(D.CertificateKeyMismatch, pairKey.at, { cert: get('certificate') ? 'certificate' : 'certificate_file', key: pairKey.name }, pairKey.name);
    }
    certificates.push({ cert: pairCert.source, key: pairKey.secret, names: certificateNames(cert) });
  } else if (pairCert && !pairKey) {
    cx.r.report(D.DependentSettingMissing, at(get('certificate') ? 'certificate' : 'certificate_file'), { key: get('certificate') ? 'certificate' : 'certificate_file', needs: 'certificate_key` or `certificate_key_file' }, 'certificate');
  } else if (pairKey && !pairCert) {
    cx.r.report(D.DependentSettingMissing, pairKey.at, { key: pairKey.name, needs: 'certificate` or `certificate_file' }, pairKey.name);
  }
  const list = raw('certificates');
  if (Array.isArray(list)) {
    list.forEach((_, i) => {
      const p = `certificates[${i}]`;
      const entry = list[i] as Record<string, unknown>;
      const entryGet = (k: string) => {
        const field = k === `${p}.cert` ? 'cert' : k === `${p}.key` ? 'key' : undefined;
        const v = field ? entry[field] : undefined;
        return typeof v === 'string' && v !== '' ? { value: v, at: spanAt(cx, k) } : undefined;
      };
      const c = pemSource('-', `${p}.cert`, 'certificate', cx, entryGet);
      const k = keySource('-', `${p}.key`, cx, entryGet);
      if (c && k) {
        const cert = c.certs[0]!;
        if (k.key && !cert.checkPrivateKey(k.key)) cx.r.report(D.CertificateKeyMismatch, k.at, { cert: `${p}.cert`, key: `${p}.key` }, `${p}.key`);
        certificates.push({ cert: c.source, key: k.secret, names: certificateNames(cert) });
      }
    });
  }

  // Global response headers: defaults unless `disable`, then the configured ones.
  const response: Record<string, string> = {};
  const srh = raw('set_response_headers') as Record<string, unknown> | undefined;
  const disabled = srh !== undefined && (srh['disable'] === true || srh['disable'] === 'true');
  if (!disabled) Object.assign(response, DEFAULT_RESPONSE_HEADERS);
  if (srh) {
    const configured = headerMap(
      Object.fromEntries(Object.entries(srh).filter(([k]) => k !== 'disable').map(([k, v]) => [k, String(v)])),
      'set_response_headers',
      cx,
    );
    for (const [k, v] of Object.entries(configured)) {
      for (const existing of Object.keys(response)) if (existing.toLowerCase() === k.toLowerCase()) delete response[existing];
      response[k] = v;
    }
  }

  // JWT claim headers: a list of claims (`X-Svc-Claim-<claim>`) or a map header → claim.
  const claimHeaders: Record<string, string> = {};
  const jch = raw('jwt_claims_headers');
  const addClaimHeader = (header: string, claim: string, p: string) => {
    if (!isHeaderName(header)) cx.r.report(D.InvalidHeaderName, spanAt(cx, p) ?? at('jwt_claims_headers'), { key: 'jwt_claims_headers', name: header }, p);
    else claimHeaders[header] = claim;
  };
  // In the list form (and its env text form `email,X-Team:groups`) an item `Header:claim` names its header.
  if (Array.isArray(jch))
    jch.forEach((c, i) => {
      if (typeof c !== 'string') return;
      const colon = c.indexOf(':');
      if (colon > 0) addClaimHeader(c.slice(0, colon).trim(), c.slice(colon + 1).trim(), `jwt_claims_headers[${i}]`);
      else addClaimHeader(`X-Svc-Claim-${c}`, c, `jwt_claims_headers[${i}]`);
    });
  else if (jch && typeof jch === 'object') for (const [h, c] of Object.entries(jch)) addClaimHeader(h, String(c), `jwt_claims_headers.${h}`);

  // Signing key: ECDSA or RSA only; the algorithm is inferred.
  let signingAlgorithm: PlanSettings['identity']['signingAlgorithm'] = null;
  const sk = keySource('signing_key', 'signing_key_file', cx, get);
  if (sk?.key) {
    const type = sk.key.asymmetricKeyType;
    const curve = sk.key.asymmetricKeyDetails?.namedCurve;
    if (type === 'rsa' || type === 'rsa-pss') signingAlgorithm = 'RS256';
    else if (type === 'ec' && curve === 'prime256v1') signingAlgorithm = 'ES256';
    else if (type === 'ec' && curve === 'secp384r1') signingAlgorithm = 'ES384';
    else if (type === 'ec' && curve === 'secp521r1') signingAlgorithm = 'ES512';
    else cx.r.report(D.UnsupportedSigningKey, sk.at, { type: type === 'ec' ? `EC ${curve ?? ''}`.trim() : (type ?? 'unknown') }, 'signing_key');
  }

  // Data broker storage.
  const storageType = (raw('databroker_storage_type') as 'memory' | 'redis' | undefined) ?? 'memory';
  let connection: RedisConnection | null = null;
  const conn = secretSource('databroker_storage_connection_string', 'databroker_storage_connection_string_file', cx, get);
  const connectionString = conn?.secret ?? null;
  if (conn) {
    const parsed = parseRedisUrl(conn.text);
    const where = conn.name === 'databroker_storage_connection_string' ? '' : ` (in the file named by \`${conn.name}\`)`;
    if (typeof parsed === 'string') cx.r.report(D.InvalidRedisUrl, conn.at, { problem: `${parsed}${where}` }, conn.name);
    else
      connection = {
        kind: parsed.kind,
        tls: parsed.tls,
        hosts: parsed.hosts,
        username: parsed.username,
        passwordFingerprint: parsed.password === null ? null : fingerprint(parsed.password),
        db: parsed.db,
        master: parsed.master,
        params: parsed.params,
      };
  }
  if (storageType === 'redis' && !conn && !get('databroker_storage_connection_string_file') && runs('databroker')) {
    cx.r.report(D.MissingRequiredSetting, at('databroker_storage_type'), { key: 'databroker_storage_connection_string', why: 'when `databroker_storage_type` is `redis`' }, 'databroker_storage_connection_string');
  }
  const storageKey = keySource('-', 'databroker_storage_key_file', cx, (k) => (k === 'databroker_storage_key_file' ? get(k) : undefined));

  // Authorize and data broker URLs: inferred as localhost in all-in-one mode.
  if (allInOne) {
    for (const k of ['authorize_service_url', 'authorize_service_urls']) if (raw(k) !== undefined) cx.r.report(D.AllInOneServiceUrl, at(k), { key: k }, k);
  }
  const authorizeUrls = allInOne ? [LOCAL_GRPC_URL] : singularOrPlural('authorize_service_url', 'authorize_service_urls');
  const dbUrls = singularOrPlural('databroker_service_url', 'databroker_service_urls');
  const dbInternal = singularOrPlural('databroker_internal_service_url', 'databroker_internal_service_urls');

  const logLevel = ((raw('log_level') as LogLevel | undefined) ?? 'info') satisfies LogLevel;

  const settings: PlanSettings = {
    mode: { services, allInOne, sharedSecret: secret32('shared_secret', 'shared_secret_file') },
    server: {
      address: hostPort('address', ':443')!,
      insecure: bool('insecure_server'),
      httpRedirectAddress: hostPort('http_redirect_addr'),
      codecType: (raw('codec_type') as PlanSettings['server']['codecType'] | undefined) ?? (allInOne ? 'http1' : 'auto'),
      useProxyProtocol: bool('use_proxy_protocol'),
      timeoutReadMs: duration('timeout_read'),
      timeoutWriteMs: duration('timeout_write'),
      timeoutIdleMs: duration('timeout_idle'),
      defaultUpstreamTimeoutMs: duration('default_upstream_timeout'),
      dnsLookupFamily: (raw('dns_lookup_family') as PlanSettings['server']['dnsLookupFamily'] | undefined) ?? 'AUTO',
      xffNumTrustedHops: num('xff_num_trusted_hops'),
      skipXffAppend: bool('skip_xff_append'),
    },
    tls: {
      certificates,
      clientCa: pem('client_ca', 'client_ca_file'),
      clientCrl: pem('client_crl', 'client_crl_file', 'crl'),
      certificateAuthority: pem('certificate_authority', 'certificate_authority_file'),
      overrideCertificateName: str('override_certificate_name') ?? null,
    },
    autocert: {
      enabled: bool('autocert'),
      caUrl: url('autocert_ca'),
      email: str('autocert_email') ?? null,
      mustStaple: bool('autocert_must_staple'),
      dir: str('autocert_dir') ?? (bool('autocert') ? defaultAutocertDir(cx) : null),
      useStaging: bool('autocert_use_staging'),
      eabKeyId: str('autocert_eab_key_id') ?? null,
      eabMacKey: secret('autocert_eab_mac_key'),
      trustedCa: pem('autocert_trusted_ca', 'autocert_trusted_ca_file'),
    },
    cookie: {
      name: str('cookie_name') ?? '_svc',
      secret: secret32('cookie_secret', 'cookie_secret_file'),
      domain: str('cookie_domain') ?? null,
      secure: bool('cookie_secure'),
      httpOnly: bool('cookie_http_only'),
      expireMs: duration('cookie_expire'),
    },
    authenticate: {
      serviceUrl: url('authenticate_service_url'),
      internalServiceUrl: url('authenticate_internal_service_url'),
      callbackPath: str('authenticate_callback_path') ?? '/oauth2/callback',
      signoutRedirectUrl: url('signout_redirect_url'),
      forwardAuthUrl: url('forward_auth_url'),
      programmaticRedirectDomains: (raw('programmatic_redirect_domain_whitelist') as string[] | undefined) ?? ['localhost'],
      deviceSelfRegistrationApproved: bool('device_self_registration_approved'),
    },
    idp: {
      provider: str('idp_provider') ?? null,
      providerUrl: url('idp_provider_url'),
      clientId: str('idp_client_id') ?? null,
      clientSecret: secret('idp_client_secret', 'idp_client_secret_file'),
      scopes: (raw('idp_scopes') as string[] | undefined) ?? ['openid', 'profile', 'email', 'offline_access'],
      serviceAccount: secret('idp_service_account'),
      requestParams: (raw('idp_request_params') as Record<string, string> | undefined) ?? {},
      trustUnverifiedEmail: bool('idp_trust_unverified_email'),
      refreshDirectoryIntervalMs: duration('idp_refresh_directory_interval'),
      refreshDirectoryTimeoutMs: duration('idp_refresh_directory_timeout'),
    },
    authorize: { serviceUrls: authorizeUrls, internalServiceUrl: allInOne ? LOCAL_GRPC_URL : url('authorize_internal_service_url') },
    databroker: {
      serviceUrls: dbUrls.length > 0 ? dbUrls : allInOne ? [LOCAL_GRPC_URL] : [],
      internalServiceUrls: dbInternal.length > 0 ? dbInternal : allInOne ? [LOCAL_GRPC_URL] : [],
      storage: {
        type: storageType,
        connection,
        connectionString,
        certFile: pem('-', 'databroker_storage_cert_file'),
        keyFile: storageKey?.secret ?? null,
        caFile: pem('-', 'databroker_storage_ca_file'),
        tlsSkipVerify: bool('databroker_storage_tls_skip_verify'),
      },
    },
    grpc: {
      address: hostPort('grpc_address', allInOne ? ':5443' : ':443')!,
      insecure: typeof raw('grpc_insecure') === 'boolean' ? (raw('grpc_insecure') as boolean) : allInOne,
      clientTimeoutMs: duration('grpc_client_timeout'),
      clientDnsRoundRobin: bool('grpc_client_dns_roundrobin'),
    },
    identity: {
      signingKey: sk?.secret ?? null,
      signingAlgorithm,
      claimHeaders,
      hostedcloudServiceAccount: secret('hostedcloud_serverless_authentication_service_account'),
    },
    headers: { response },
    logging: {
      debug: bool('svc_debug'),
      level: logLevel,
      proxyLevel: (raw('proxy_log_level') as LogLevel | undefined) ?? logLevel,
    },
    metrics: {
      address: hostPort('metrics_address'),
      basicAuth: basicAuth('metrics_basic_auth', 'metrics_basic_auth_file'),
      certificate: pem('metrics_certificate', 'metrics_certificate_file'),
      certificateKey: keySource('metrics_certificate_key', 'metrics_certificate_key_file', cx, get)?.secret ?? null,
      clientCa: pem('metrics_client_ca', 'metrics_client_ca_file'),
    },
    tracing: {
      provider: (raw('tracing_provider') as PlanSettings['tracing']['provider'] | undefined) ?? null,
      sampleRate: num('tracing_sample_rate'),
      apmAddress: hostPort('tracing_apm_address', 'localhost:8126')!,
      jaegerCollectorEndpoint: url('tracing_jaeger_collector_endpoint'),
      jaegerAgentEndpoint: hostPort('tracing_jaeger_agent_endpoint'),
      zipkinEndpoint: url('tracing_zipkin_endpoint'),
      otlpEndpoint: url('tracing_otlp_endpoint') ?? String(def('tracing_otlp_endpoint')),
    },
    dp: {
      adminAddress: hostPort('dp_admin_address'),
      adminAccessLogPath: str('dp_admin_access_log_path') ?? null,
      adminProfilePath: str('dp_admin_profile_path') ?? null,
      bindConfigFreebind: typeof raw('dp_bind_config_freebind') === 'boolean' ? (raw('dp_bind_config_freebind') as boolean) : null,
      bindConfigSourceAddress: str('dp_bind_config_source_address') ?? null,
    },
  };
  return settings;
}

/**
 * `autocert_dir` default (docs/autocert.md "Storage directory"): the installation's own when it names one
 * (`SVC_DEFAULT_AUTOCERT_DIR`, `/data/autocert` in svc's container image: a packager's default, not
 * an operator's setting, so it never draws "has no effect" without `autocert`), else under the XDG
 * data home, else `$HOME/.local/share/svc`.
 */
function defaultAutocertDir(cx: LowerCtx): string | null {
  const packaged = cx.input.env['SVC_DEFAULT_AUTOCERT_DIR'];
  if (packaged) return packaged;
  const xdg = cx.input.env['XDG_DATA_HOME'];
  if (xdg) return `${xdg.replace(/\/$/, '')}/svc`;
  const home = cx.input.env['HOME'];
  return home ? `${home.replace(/\/$/, '')}/.local/share/svc` : null;
}
