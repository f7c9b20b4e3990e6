/**
 * The JSON schema of a plan (`schemas/plan.schema.json`), mirroring plan/types.ts. The runtime
 * checks every plan it loads against it; a test checks every golden plan against it.
 */
type S = Record<string, unknown>;

const str: S = { type: 'string' };
const bool: S = { type: 'boolean' };
const int: S = { type: 'integer', minimum: 0 };
const num: S = { type: 'number' };
const nul: S = { type: 'null' };
const nullable = (s: S): S => ({ anyOf: [s, nul] });
const strList: S = { type: 'array', items: str };
const strMap: S = { type: 'object', additionalProperties: str };
const ref = (name: string): S => ({ $ref: `#/$defs/${name}` });
const enumOf = (...values: string[]): S => ({ type: 'string', enum: values });

function obj(properties: Record<string, S>): S {
  return { type: 'object', properties, required: Object.keys(properties), additionalProperties: false };
}

const defs: Record<string, S> = {
  hostPort: obj({ host: str, port: { type: 'integer', minimum: 1, maximum: 65535 } }),
  secret: {
    oneOf: [
      obj({ ref: { type: 'string', pattern: '^(env|file):' }, fingerprint: str }),
      obj({ value: str, fingerprint: str }),
    ],
  },
  pem: { oneOf: [obj({ pem: str, sha256: str }), obj({ file: str, sha256: str })] },
  policy: obj({ rules: { type: 'array', items: obj({ action: enumOf('allow', 'deny'), when: { type: 'object' } }) } }),
  upstream: obj({ url: str, scheme: enumOf('http', 'https', 'tcp'), host: str, port: int, path: str, weight: { type: 'integer', minimum: 1 } }),
  healthCheck: obj({
    timeoutMs: int,
    intervalMs: int,
    initialJitterMs: int,
    intervalJitterMs: int,
    unhealthyThreshold: int,
    healthyThreshold: int,
    check: {
      oneOf: [
        obj({ kind: { const: 'http' }, host: nullable(str), path: str, expectedStatuses: { type: 'array', items: obj({ start: int, end: int }) }, codec: enumOf('HTTP1', 'HTTP2') }),
        obj({ kind: { const: 'tcp' }, send: nullable(str), receive: strList }),
        obj({ kind: { const: 'grpc' }, serviceName: nullable(str), authority: nullable(str) }),
      ],
    },
  }),
  route: obj({
    id: str,
    index: int,
    name: nullable(str),
    from: obj({ url: str, scheme: enumOf('https', 'tcp+https'), host: str, port: nullable(int) }),
    match: {
      oneOf: [
        obj({ kind: { const: 'any' } }),
        obj({ kind: { const: 'path' }, path: str }),
        obj({ kind: { const: 'prefix' }, prefix: str }),
        obj({ kind: { const: 'regex' }, regex: str }),
      ],
    },
    action: {
      oneOf: [
        obj({ kind: { const: 'forward' }, upstreams: { type: 'array', minItems: 1, items: ref('upstream') } }),
        obj({
          kind: { const: 'redirect' },
          redirect: obj({
            httpsRedirect: bool,
            scheme: nullable(str),
            host: nullable(str),
            port: nullable(int),
            path: nullable(str),
            prefixRewrite: nullable(str),
            responseCode: { type: 'integer', minimum: 300, maximum: 399 },
            stripQuery: bool,
          }),
        }),
      ],
    },
    policy: ref('policy'),
    public: bool,
    rewrite: obj({ prefixRewrite: nullable(str), regex: nullable(obj({ pattern: str, substitution: str })) }),
    host: {
      oneOf: [
        obj({ kind: { const: 'upstream' } }),
        obj({ kind: { const: 'preserve' } }),
        obj({ kind: { const: 'literal' }, host: str }),
        obj({ kind: { const: 'header' }, header: str }),
        obj({ kind: { const: 'path_regex' }, pattern: str, substitution: str }),
      ],
    },
    requestHeaders: obj({ set: strMap, remove: strList }),
    responseHeaders: obj({ set: strMap, rewrite: { type: 'array', items: obj({ header: str, prefix: str, value: str }) } }),
    timeoutMs: int,
    idleTimeoutMs: int,
    passIdentityHeaders: bool,
    tls: obj({
      skipVerify: bool,
      serverName: nullable(str),
      customCa: nullable(ref('pem')),
      downstreamClientCa: nullable(ref('pem')),
      clientCert: nullable(ref('pem')),
      clientKey: nullable(ref('secret')),
    }),
    allowWebsockets: bool,
    allowSpdy: bool,
    allowEncodedPathCharacters: bool,
    allowPathParameters: bool,
    pathCase: enumOf('sensitive', 'insensitive'),
    allowUnderscoresInHeaders: bool,
    lb: obj({
      policy: enumOf('ROUND_ROBIN', 'LEAST_REQUEST', 'RING_HASH', 'RANDOM', 'MAGLEV'),
      leastRequest: nullable(obj({ choiceCount: int, activeRequestBias: num })),
      ringHash: nullable(obj({ minimumRingSize: int, maximumRingSize: int, hashFunction: enumOf('XX_HASH', 'MURMUR_HASH_2') })),
      maglev: nullable(obj({ tableSize: int })),
    }),
    healthChecks: { type: 'array', items: ref('healthCheck') },
    outlierDetection: nullable(
      obj({
        consecutive5xx: int,
        consecutiveGatewayFailure: nullable(int),
        intervalMs: int,
        baseEjectionTimeMs: int,
        maxEjectionTimeMs: int,
        maxEjectionPercent: int,
        enforcingConsecutive5xx: int,
      }),
    ),
    hostedcloudServerlessAuthentication: bool,
    orchestratorServiceAccountToken: nullable(ref('secret')),
  }),
};

const level = enumOf('debug', 'info', 'warn', 'error');
const secret = nullable(ref('secret'));
const pem = nullable(ref('pem'));

const settings = obj({
  mode: obj({ services: enumOf('all', 'authenticate', 'authorize', 'databroker', 'proxy'), allInOne: bool, sharedSecret: secret }),
  server: obj({
    address: ref('hostPort'),
    insecure: bool,
    httpRedirectAddress: nullable(ref('hostPort')),
    codecType: enumOf('auto', 'http1', 'http2'),
    useProxyProtocol: bool,
    timeoutReadMs: int,
    timeoutWriteMs: int,
    timeoutIdleMs: int,
    defaultUpstreamTimeoutMs: int,
    dnsLookupFamily: enumOf('V4_ONLY', 'V6_ONLY', 'AUTO'),
    xffNumTrustedHops: int,
    skipXffAppend: bool,
  }),
  tls: obj({
    certificates: { type: 'array', items: obj({ cert: ref('pem'), key: ref('secret'), names: strList }) },
    clientCa: pem,
    clientCrl: pem,
    certificateAuthority: pem,
    overrideCertificateName: nullable(str),
  }),
  autocert: obj({
    enabled: bool,
    caUrl: nullable(str),
    email: nullable(str),
    mustStaple: bool,
    dir: nullable(str),
    useStaging: bool,
    eabKeyId: nullable(str),
    eabMacKey: secret,
    trustedCa: pem,
  }),
  cookie: obj({ name: str, secret, domain: nullable(str), secure: bool, httpOnly: bool, expireMs: int }),
  authenticate: obj({
    serviceUrl: nullable(str),
    internalServiceUrl: nullable(str),
    callbackPath: str,
    signoutRedirectUrl: nullable(str),
    forwardAuthUrl: nullable(str),
    programmaticRedirectDomains: strList,
    deviceSelfRegistrationApproved: bool,
  }),
  idp: obj({
    provider: nullable(str),
    providerUrl: nullable(str),
    clientId: nullable(str),
    clientSecret: secret,
    scopes: strList,
    serviceAccount: secret,
    requestParams: strMap,
    trustUnverifiedEmail: bool,
    refreshDirectoryIntervalMs: int,
    refreshDirectoryTimeoutMs: int,
  }),
  authorize: obj({ serviceUrls: strList, internalServiceUrl: nullable(str) }),
  databroker: obj({
    serviceUrls: strList,
    internalServiceUrls: strList,
    storage: obj({
      type: enumOf('memory', 'redis'),
      connection: nullable(
        obj({
          kind: enumOf('redis', 'sentinel', 'cluster'),
          tls: bool,
          hosts: { type: 'array', minItems: 1, items: ref('hostPort') },
          username: nullable(str),
          passwordFingerprint: nullable(str),
          db: int,
          master: nullable(str),
          params: strMap,
        }),
      ),
      connectionString: secret,
      certFile: pem,
      keyFile: secret,
      caFile: pem,
      tlsSkipVerify: bool,
    }),
  }),
  grpc: obj({ address: ref('hostPort'), insecure: bool, clientTimeoutMs: int, clientDnsRoundRobin: bool }),
  identity: obj({
    signingKey: secret,
    signingAlgorithm: nullable(enumOf('RS256', 'ES256', 'ES384', 'ES512')),
    claimHeaders: strMap,
    hostedcloudServiceAccount: secret,
  }),
  headers: obj({ response: strMap }),
  logging: obj({ debug: bool, level, proxyLevel: level }),
  metrics: obj({ address: nullable(ref('hostPort')), basicAuth: secret, certificate: pem, certificateKey: secret, clientCa: pem }),
  tracing: obj({
    provider: nullable(enumOf('jaeger', 'zipkin', 'apm', 'otlp')),
    sampleRate: num,
    apmAddress: ref('hostPort'),
    jaegerCollectorEndpoint: nullable(str),
    jaegerAgentEndpoint: nullable(ref('hostPort')),
    zipkinEndpoint: nullable(str),
    otlpEndpoint: str,
  }),
  dp: obj({
    adminAddress: nullable(ref('hostPort')),
    adminAccessLogPath: nullable(str),
    adminProfilePath: nullable(str),
    bindConfigFreebind: nullable(bool),
    bindConfigSourceAddress: nullable(str),
  }),
});

/** The plan schema (draft-07). */
export function planSchema(): S {
  return {
    $schema: 'http://json-schema.org/draft-07/schema#',
    $id: 'https://svc.dev/schemas/plan.schema.json',
    title: 'svc plan',
    ...obj({
      formatVersion: { const: 1 },
      generator: str,
      checksum: { type: 'string', pattern: '^sha256:[0-9a-f]{64}$' },
      inputs: strList,
      sourceMap: obj({
        settings: strMap,
        routes: { type: 'array', items: obj({ at: str, fields: strMap }) },
      }),
      body: obj({ settings, routes: { type: 'array', items: ref('route') } }),
    }),
    $defs: defs,
  };
}
