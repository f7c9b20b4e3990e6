/**
 * The plan: the only thing the runtime reads (docs/architecture.md §1, invariant 1). JSON-only data (no Map,
 * RegExp, Date or undefined), deeply readonly, durations as integer `…Ms`, regexes as source
 * strings, routes in listed order. The runtime imports these types and nothing else from compiler/.
 */
import type { PolicyIR } from '../policy/ir.ts';

export type {
  PolicyIR,
  Rule,
  Expr,
  Criterion,
  StringMatcher,
  ListMatcher,
  DateMatcher,
  TimeOfDayMatcher,
  Day,
} from '../policy/ir.ts';

/** A listening address: `host` is empty for all interfaces. */
export interface HostPort {
  readonly host: string;
  readonly port: number;
}

/**
 * A secret. `ref` names where the runtime reads it at load (`env:COOKIE_SECRET`,
 * `file:certs/key.pem`); an inline literal from a config file is kept in `value` (with a
 * warning). `fingerprint` changes whenever the value does, and never reveals it.
 */
export type Secret =
  | { readonly ref: string; readonly fingerprint: string }
  | { readonly value: string; readonly fingerprint: string };

/** A public PEM document (certificate, CA bundle, CRL): inline text or a file the runtime watches. */
export type PemSource =
  | { readonly pem: string; readonly sha256: string }
  | { readonly file: string; readonly sha256: string };

export interface CertificatePair {
  readonly cert: PemSource;
  readonly key: Secret;
  /** DNS names of the certificate (subject alternative names, else the common name), for SNI. */
  readonly names: readonly string[];
}

export interface RedisConnection {
  readonly kind: 'redis' | 'sentinel' | 'cluster';
  readonly tls: boolean;
  readonly hosts: readonly HostPort[];
  readonly username: string | null;
  /** The password itself stays in `connectionString`; this only tells a reviewer it changed. */
  readonly passwordFingerprint: string | null;
  readonly db: number;
  /** Sentinel only: the master group name. */
  readonly master: string | null;
  readonly params: Readonly<Record<string, string>>;
}

export interface PlanSettings {
  readonly mode: { readonly services: 'all' | 'authenticate' | 'authorize' | 'databroker' | 'proxy'; readonly allInOne: boolean; readonly sharedSecret: Secret | null };
  readonly server: {
    readonly address: HostPort;
    readonly insecure: boolean;
    readonly httpRedirectAddress: HostPort | null;
    readonly codecType: 'auto' | 'http1' | 'http2';
    readonly useProxyProtocol: boolean;
    readonly timeoutReadMs: number;
    readonly timeoutWriteMs: number;
    readonly timeoutIdleMs: number;
    readonly defaultUpstreamTimeoutMs: number;
    readonly dnsLookupFamily: 'V4_ONLY' | 'V6_ONLY' | 'AUTO';
    readonly xffNumTrustedHops: number;
    readonly skipXffAppend: boolean;
  };
  readonly tls: {
    readonly certificates: readonly CertificatePair[];
    readonly clientCa: PemSource | null;
    readonly clientCrl: PemSource | null;
    readonly certificateAuthority: PemSource | null;
    readonly overrideCertificateName: string | null;
  };
  readonly autocert: {
    readonly enabled: boolean;
    readonly caUrl: string | null;
    readonly email: string | null;
    readonly mustStaple: boolean;
    readonly dir: string | null;
    readonly useStaging: boolean;
    readonly eabKeyId: string | null;
    readonly eabMacKey: Secret | null;
    readonly trustedCa: PemSource | null;
  };
  readonly cookie: {
    readonly name: string;
    readonly secret: Secret | null;
    readonly domain: string | null;
    readonly secure: boolean;
    readonly httpOnly: boolean;
    readonly expireMs: number;
  };
  readonly authenticate: {
    readonly serviceUrl: string | null;
    readonly internalServiceUrl: string | null;
    readonly callbackPath: string;
    readonly signoutRedirectUrl: string | null;
    readonly forwardAuthUrl: string | null;
    readonly programmaticRedirectDomains: readonly string[];
    /** `device_self_registration_approved`: a newly registered device is approved at once (docs/authentication.md "Devices"). */
    readonly deviceSelfRegistrationApproved: boolean;
  };
  readonly idp: {
    readonly provider: string | null;
    readonly providerUrl: string | null;
    readonly clientId: string | null;
    readonly clientSecret: Secret | null;
    readonly scopes: readonly string[];
    readonly serviceAccount: Secret | null;
    readonly requestParams: Readonly<Record<string, string>>;
    /** `idp_trust_unverified_email`: an email counts even when `email_verified` is not true (docs/authentication.md). */
    readonly trustUnverifiedEmail: boolean;
    readonly refreshDirectoryIntervalMs: number;
    readonly refreshDirectoryTimeoutMs: number;
  };
  readonly authorize: { readonly serviceUrls: readonly string[]; readonly internalServiceUrl: string | null };
  readonly databroker: {
    readonly serviceUrls: readonly string[];
    readonly internalServiceUrls: readonly string[];
    readonly storage: {
      readonly type: 'memory' | 'redis';
      readonly connection: RedisConnection | null;
      readonly connectionString: Secret | null;
      readonly certFile: PemSource | null;
      readonly keyFile: Secret | null;
      readonly caFile: PemSource | null;
      readonly tlsSkipVerify: boolean;
    };
  };
  readonly grpc: { readonly address: HostPort; readonly insecure: boolean; readonly clientTimeoutMs: number; readonly clientDnsRoundRobin: boolean };
  readonly identity: {
    readonly signingKey: Secret | null;
    /** `rsa` or `ec` (with the curve), inferred from the key; null without a key (ephemeral key at runtime). */
    readonly signingAlgorithm: 'RS256' | 'ES256' | 'ES384' | 'ES512' | null;
    /** Upstream header name (as written) → claim name. */
    readonly claimHeaders: Readonly<Record<string, string>>;
    readonly hostedcloudServiceAccount: Secret | null;
  };
  /** Global response headers after defaults and `disable` (name → value). */
  readonly headers: { readonly response: Readonly<Record<string, string>> };
  readonly logging: { readonly debug: boolean; readonly level: LogLevel; readonly proxyLevel: LogLevel };
  readonly metrics: {
    readonly address: HostPort | null;
    readonly basicAuth: Secret | null;
    readonly certificate: PemSource | null;
    readonly certificateKey: Secret | null;
    readonly clientCa: PemSource | null;
  };
  readonly tracing: {
    readonly provider: 'jaeger' | 'zipkin' | 'apm' | 'otlp' | null;
    readonly sampleRate: number;
    readonly apmAddress: HostPort;
    readonly jaegerCollectorEndpoint: string | null;
    readonly jaegerAgentEndpoint: HostPort | null;
    readonly zipkinEndpoint: string | null;
    /** `tracing_otlp_endpoint`: the OTLP/HTTP traces URL (default `http://localhost:4318/v1/traces`). */
    readonly otlpEndpoint: string;
  };
  /** Data-plane bootstrap options; they cannot change at runtime. */
  readonly dp: {
    readonly adminAddress: HostPort | null;
    readonly adminAccessLogPath: string | null;
    readonly adminProfilePath: string | null;
    readonly bindConfigFreebind: boolean | null;
    readonly bindConfigSourceAddress: string | null;
  };
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export interface Upstream {
  readonly url: string;
  readonly scheme: 'http' | 'https' | 'tcp';
  readonly host: string;
  readonly port: number;
  readonly path: string;
  /** Load-balancing weight; 1 when no weights are given. */
  readonly weight: number;
}

export type PathMatch =
  | { readonly kind: 'any' }
  | { readonly kind: 'path'; readonly path: string }
  | { readonly kind: 'prefix'; readonly prefix: string }
  /** RE2 source, matched against the whole normalized path (anchored), never the query. */
  | { readonly kind: 'regex'; readonly regex: string };

export type HostRule =
  | { readonly kind: 'upstream' }
  | { readonly kind: 'preserve' }
  | { readonly kind: 'literal'; readonly host: string }
  | { readonly kind: 'header'; readonly header: string }
  | { readonly kind: 'path_regex'; readonly pattern: string; readonly substitution: string };

export interface RedirectAction {
  readonly httpsRedirect: boolean;
  readonly scheme: string | null;
  readonly host: string | null;
  readonly port: number | null;
  readonly path: string | null;
  readonly prefixRewrite: string | null;
  readonly responseCode: number;
  readonly stripQuery: boolean;
}

export interface HealthCheck {
  readonly timeoutMs: number;
  readonly intervalMs: number;
  readonly initialJitterMs: number;
  readonly intervalJitterMs: number;
  readonly unhealthyThreshold: number;
  readonly healthyThreshold: number;
  readonly check:
    | { readonly kind: 'http'; readonly host: string | null; readonly path: string; readonly expectedStatuses: readonly { readonly start: number; readonly end: number }[]; readonly codec: 'HTTP1' | 'HTTP2' }
    | { readonly kind: 'tcp'; readonly send: string | null; readonly receive: readonly string[] }
    | { readonly kind: 'grpc'; readonly serviceName: string | null; readonly authority: string | null };
}

export interface OutlierDetection {
  readonly consecutive5xx: number;
  readonly consecutiveGatewayFailure: number | null;
  readonly intervalMs: number;
  readonly baseEjectionTimeMs: number;
  readonly maxEjectionTimeMs: number;
  readonly maxEjectionPercent: number;
  readonly enforcingConsecutive5xx: number;
}

export interface Route {
  /** Stable id: the route's `name`, else derived from `from` and its path matcher. */
  readonly id: string;
  /** Position in the config's route list (0-based). */
  readonly index: number;
  readonly name: string | null;
  readonly from: { readonly url: string; readonly scheme: 'https' | 'tcp+https'; readonly host: string; readonly port: number | null };
  readonly match: PathMatch;
  readonly action:
    | { readonly kind: 'forward'; readonly upstreams: readonly Upstream[] }
    | { readonly kind: 'redirect'; readonly redirect: RedirectAction };
  readonly policy: PolicyIR;
  /** `allow_public_unauthenticated_access`: no authentication, no authorization. */
  readonly public: boolean;
  readonly rewrite: {
    readonly prefixRewrite: string | null;
    readonly regex: { readonly pattern: string; readonly substitution: string } | null;
  };
  readonly host: HostRule;
  readonly requestHeaders: { readonly set: Readonly<Record<string, string>>; readonly remove: readonly string[] };
  readonly responseHeaders: {
    /** Route `set_response_headers` merged over the global ones (route wins). */
    readonly set: Readonly<Record<string, string>>;
    readonly rewrite: readonly { readonly header: string; readonly prefix: string; readonly value: string }[];
  };
  readonly timeoutMs: number;
  readonly idleTimeoutMs: number;
  readonly passIdentityHeaders: boolean;
  readonly tls: {
    readonly skipVerify: boolean;
    readonly serverName: string | null;
    readonly customCa: PemSource | null;
    readonly downstreamClientCa: PemSource | null;
    readonly clientCert: PemSource | null;
    readonly clientKey: Secret | null;
  };
  readonly allowWebsockets: boolean;
  readonly allowSpdy: boolean;
  /**
   * `allow_encoded_path_characters` (docs/security.md S07 opt-in): a target with encoded `/`, `\`, NUL,
   * `;`, `?` or `#` in its path may reach this route; it is matched and forwarded in that raw form.
   */
  readonly allowEncodedPathCharacters: boolean;
  /**
   * `allow_path_parameters` (opt-in, docs/decisions.md §1): a target with a raw `;` in its path (`/a;v=1`)
   * may reach this route; anything else refuses it with 400 `target-path-parameter`.
   */
  readonly allowPathParameters: boolean;
  /**
   * `path_case` (docs/decisions.md §3): how the route's `path`, `prefix` or `regex` compares letters with the
   * canonical path; `insensitive` folds ASCII case on both sides. Default `sensitive`.
   */
  readonly pathCase: 'sensitive' | 'insensitive';
  /**
   * `allow_underscores_in_headers`: forward client header fields whose names contain `_`. Off by
   * default: such names are dropped before forwarding, because upstreams (CGI, nginx, many
   * frameworks) read `_` as `-`, so `X_User` could stand in for a header svc sets or removes.
   */
  readonly allowUnderscoresInHeaders: boolean;
  readonly lb: {
    readonly policy: 'ROUND_ROBIN' | 'LEAST_REQUEST' | 'RING_HASH' | 'RANDOM' | 'MAGLEV';
    readonly leastRequest: { readonly choiceCount: number; readonly activeRequestBias: number } | null;
    readonly ringHash: { readonly minimumRingSize: number; readonly maximumRingSize: number; readonly hashFunction: 'XX_HASH' | 'MURMUR_HASH_2' } | null;
    readonly maglev: { readonly tableSize: number } | null;
  };
  readonly healthChecks: readonly HealthCheck[];
  readonly outlierDetection: OutlierDetection | null;
  readonly hostedcloudServerlessAuthentication: boolean;
  readonly orchestratorServiceAccountToken: Secret | null;
}

/** The checksummed body of a plan. */
export interface PlanBody {
  readonly settings: PlanSettings;
  readonly routes: readonly Route[];
}

/** Where each piece of the plan came from: `file:line:col` or `env:NAME`; not checksummed. */
export interface SourceMap {
  readonly settings: Readonly<Record<string, string>>;
  readonly routes: readonly { readonly at: string; readonly fields: Readonly<Record<string, string>> }[];
}

export interface PlanEnvelope {
  readonly formatVersion: 1;
  readonly generator: string;
  /** `sha256:` of the canonical JSON (RFC 8785) of `body`. */
  readonly checksum: string;
  /** Files the plan was built from or refers to (config, certificates, keys), for watching. */
  readonly inputs: readonly string[];
  readonly sourceMap: SourceMap;
  readonly body: PlanBody;
}
