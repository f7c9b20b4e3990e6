/**
 * Rule book §9, the door: every way in (request, websocket upgrade, CONNECT; HTTP/1.0, 1.1, 2.0)
 * gets the same checks in the same order: 505, 400, 421, session, decision, 495. Each case runs
 * through both gates (the reference's `gateReference` and the runtime's `admit`).
 *
 * Which routes require a client certificate is the connection's `requires` (what the listener
 * reads from `tls_downstream_client_ca` and `client_ca`): the configs here carry no CA, so that
 * no certificate material is needed to compile them.
 */
import type { Identity } from '../../../runtime/core/types.ts';
import type { EntryKind, GateConnectionData } from '../../reference/gate.ts';
import { configText } from '../../reference/support.ts';
import type { DecisionCase } from '../case.ts';

const ops: Identity = { user: 'u-ops', email: 'ops@example.com', groups: ['ops'], claims: {} };

/**
 * Route 0 `mtls` (websockets allowed) requires a client certificate on the connections below;
 * route 1 `open` does not. Routes 2-5 are `tcp+https`: public, a group policy, a method policy that
 * CONNECT fails, and a policy that CONNECT passes (method `CONNECT`, path `/`).
 */
const CONFIG = configText(
  [
    { from: 'https://app.example.com', name: 'mtls', to: 'http://app', allow_websockets: true, allow_public_unauthenticated_access: true },
    { from: 'https://open.example.com', name: 'open', to: 'http://open', allow_websockets: true, allow_public_unauthenticated_access: true },
    { from: 'tcp+https://db.example.com:5432', name: 'db', to: 'tcp://db1:5432', allow_public_unauthenticated_access: true },
    { from: 'tcp+https://redis.example.com:6379', name: 'redis', to: 'tcp://redis:6379', policy: 'allow if groups has "ops"' },
    { from: 'tcp+https://ssh.example.com:22', name: 'ssh', to: 'tcp://ssh:22', policy: 'allow if http_method is "GET"' },
    { from: 'tcp+https://pg.example.com:5432', name: 'pg', to: ['tcp://pg1:5432,1', 'tcp://pg2:5433,3'], policy: 'allow if http_method is "CONNECT" and http_path is "/"' },
  ],
  { forward_auth_url: 'https://fwd.example.com' },
);

/** TLS, a `*.example.com` certificate, no client certificate; route 0 requires one. */
const MTLS_NO_CERT: GateConnectionData = { tls: { covers: ['*.example.com'], requires: [0] } };
const MTLS_VALID_CERT: GateConnectionData = { tls: { covers: ['*.example.com'], clientCertificate: { fingerprint: 'ab'.repeat(32), valid: true }, requires: [0] } };
const MTLS_INVALID_CERT: GateConnectionData = { tls: { covers: ['*.example.com'], clientCertificate: { fingerprint: 'cd'.repeat(32), valid: false }, requires: [0] } };
/** A certificate for another name: an HTTP/2 connection coalesced for `other.example.net`. */
const OTHER_NAME: GateConnectionData = { tls: { covers: ['other.example.net', '*.other.example.net'], requires: [] } };
/** A global `client_ca`: every route and the forward-auth host require a certificate. */
const GLOBAL_CA_NO_CERT: GateConnectionData = { tls: { covers: ['*.example.com'], requires: ['forward_auth', 0, 1, 2, 3, 4, 5] } };

const WEBSOCKET = { upgrade: ['websocket'], connection: ['Upgrade'], 'sec-websocket-version': ['13'], 'sec-websocket-key': ['dGhlIHNhbXBsZSBub25jZQ=='] };
const KINDS: readonly EntryKind[] = ['request', 'upgrade', 'connect'];

/** The request of each kind aimed at `app.example.com` (CONNECT: at `db.example.com:5432`). */
const requestOf = (kind: EntryKind): DecisionCase['request'] =>
  kind === 'connect' ? { method: 'CONNECT', target: 'db.example.com:5432' } : kind === 'upgrade' ? { host: 'app.example.com', target: '/ws', headers: WEBSOCKET } : { host: 'app.example.com', target: '/ws' };

const certificate: DecisionCase[] = [
  {
    name: 'an upgrade on a route requiring a client certificate, without one: 495',
    config: CONFIG,
    entry: { kind: 'upgrade' },
    connection: MTLS_NO_CERT,
    request: requestOf('upgrade'),
    identity: null,
    expect: { refused: 495, problem: 'client-certificate-required' },
  },
  {
    name: 'the same route as a plain request, without a certificate: the same 495',
    config: CONFIG,
    entry: { kind: 'request' },
    connection: MTLS_NO_CERT,
    request: requestOf('request'),
    identity: null,
    expect: { refused: 495, problem: 'client-certificate-required' },
  },
  {
    name: 'an upgrade over HTTP/2 with an invalid certificate: 495',
    config: CONFIG,
    entry: { kind: 'upgrade', httpVersion: '2.0' },
    connection: MTLS_INVALID_CERT,
    request: requestOf('upgrade'),
    identity: null,
    expect: { refused: 495, problem: 'client-certificate-required' },
  },
  {
    name: 'an upgrade with a valid certificate is decided and forwarded, without the upgrade headers',
    config: CONFIG,
    entry: { kind: 'upgrade' },
    connection: MTLS_VALID_CERT,
    request: requestOf('upgrade'),
    identity: null,
    expect: { outcome: 'allow', route: { id: 'mtls' }, upstream: { url: 'http://app/ws' } },
    absentHeaders: ['upgrade', 'connection'],
  },
  {
    name: 'a route that requires no certificate answers without one on the same connection',
    config: CONFIG,
    entry: { kind: 'upgrade' },
    connection: MTLS_NO_CERT,
    request: { ...requestOf('upgrade'), host: 'open.example.com' },
    identity: null,
    expect: { outcome: 'allow', route: { id: 'open' } },
  },
  {
    name: 'a 404 never answers 495, even under a global client_ca',
    config: CONFIG,
    entry: { kind: 'request' },
    connection: GLOBAL_CA_NO_CERT,
    request: { host: 'nowhere.example.com' },
    identity: null,
    expect: { outcome: 'not_found', status: 404 },
  },
  {
    name: 'the forward-auth host under a global client_ca, without a certificate: 495',
    config: CONFIG,
    entry: { kind: 'request' },
    connection: GLOBAL_CA_NO_CERT,
    request: { host: 'fwd.example.com', target: '/?uri=https://app.example.com/' },
    identity: null,
    expect: { refused: 495, problem: 'client-certificate-required' },
  },
  {
    name: 'the sign-in endpoints under a global client_ca answer without a certificate (browsers sign in there)',
    config: CONFIG,
    entry: { kind: 'request' },
    connection: GLOBAL_CA_NO_CERT,
    request: { host: 'auth.example.com', target: '/.svc/sign_in' },
    identity: null,
    expect: { outcome: 'internal', endpoint: { service: 'authenticate', path: '/.svc/sign_in' } },
  },
  {
    name: 'a CONNECT to a route requiring a certificate, without one: 495',
    config: CONFIG,
    entry: { kind: 'connect' },
    connection: GLOBAL_CA_NO_CERT,
    request: requestOf('connect'),
    identity: null,
    expect: { refused: 495, problem: 'client-certificate-required' },
  },
  {
    name: 'a plain-HTTP listener has no certificate to check: no 421, no 495',
    config: CONFIG,
    entry: { kind: 'upgrade' },
    connection: { tls: null },
    request: { ...requestOf('upgrade'), scheme: 'http' },
    identity: null,
    expect: { outcome: 'allow', route: { id: 'mtls' } },
  },
];

const http10: DecisionCase[] = KINDS.map((kind) => ({
  name: `HTTP/1.0 is refused with 505 before anything else: ${kind}`,
  config: CONFIG,
  entry: { kind, httpVersion: '1.0' },
  // A certificate for another name and a route requiring a certificate: 505 still comes first.
  connection: { tls: { covers: ['other.example.net'], requires: [0, 2] } },
  request: requestOf(kind),
  identity: null,
  expect: { refused: 505, problem: 'http-1.0-unsupported' },
}));

const misdirected: DecisionCase[] = KINDS.flatMap((kind) =>
  (['1.1', '2.0'] as const).map((httpVersion) => ({
    name: `a host the certificate does not cover is 421: ${kind} over HTTP/${httpVersion}`,
    config: CONFIG,
    entry: { kind, httpVersion },
    connection: OTHER_NAME,
    request: requestOf(kind),
    identity: null,
    expect: { refused: 421, problem: 'misdirected-request' },
  })),
);

const wildcard: DecisionCase[] = [
  {
    name: 'a wildcard name covers one label only: `*.example.com` does not cover `a.b.example.com` (421)',
    config: CONFIG,
    entry: { kind: 'request' },
    connection: { tls: { covers: ['*.example.com'], requires: [] } },
    request: { host: 'a.b.example.com' },
    identity: null,
    expect: { refused: 421, problem: 'misdirected-request' },
  },
  {
    name: 'the 421 check ignores the port and the case of the host',
    config: CONFIG,
    entry: { kind: 'request' },
    connection: { tls: { covers: ['app.example.com'], requires: [] } },
    request: { host: 'APP.example.com:443', target: '/x' },
    identity: null,
    expect: { outcome: 'allow', route: { id: 'mtls' }, upstream: { url: 'http://app/x' } },
  },
  {
    name: 'a malformed target is 400 before the 421 check',
    config: CONFIG,
    entry: { kind: 'request' },
    connection: OTHER_NAME,
    request: { host: 'app.example.com', target: '/a%2fb' },
    identity: null,
    expect: { outcome: 'bad_request', status: 400, problem: 'target-forbidden-escape' },
  },
];

const connect: DecisionCase[] = [
  {
    name: 'CONNECT to a public tcp route: allowed, to its tcp:// upstream',
    config: CONFIG,
    entry: { kind: 'connect' },
    request: { method: 'CONNECT', target: 'db.example.com:5432' },
    identity: null,
    expect: { outcome: 'allow', status: 200, route: { id: 'db' }, reasons: ['public-route'], upstream: { url: 'tcp://db1:5432', host: 'db1:5432', headers: {}, assertion: false } },
  },
  {
    name: 'CONNECT over HTTP/2, authority in upper case: the same route',
    config: CONFIG,
    entry: { kind: 'connect', httpVersion: '2.0' },
    request: { method: 'CONNECT', target: 'DB.Example.COM:5432' },
    identity: null,
    expect: { outcome: 'allow', route: { id: 'db' }, upstream: { url: 'tcp://db1:5432' } },
  },
  {
    name: 'CONNECT is decided with method CONNECT and path `/`; the upstream is chosen by weight',
    config: CONFIG,
    entry: { kind: 'connect' },
    request: { method: 'CONNECT', target: 'pg.example.com:5432', upstreamSample: 0.5 },
    identity: null,
    expect: { outcome: 'allow', route: { id: 'pg' }, upstream: { url: 'tcp://pg2:5433', host: 'pg2:5433' } },
  },
  {
    name: 'CONNECT without a session to a tcp route with a policy: 401, never a sign-in redirect',
    config: CONFIG,
    entry: { kind: 'connect' },
    // A browser's Accept header changes nothing: no browser tunnels through svc.
    request: { method: 'CONNECT', target: 'redis.example.com:6379', headers: { accept: ['text/html'] } },
    identity: null,
    expect: { outcome: 'unauthenticated', status: 401, route: { id: 'redis' }, reasons: ['user-unauthenticated'], location: null },
  },
  {
    name: 'CONNECT with the session of a tunnel credential its route allows: the tcp upstream',
    config: CONFIG,
    entry: { kind: 'connect' },
    request: { method: 'CONNECT', target: 'redis.example.com:6379' },
    identity: ops,
    expect: { outcome: 'allow', status: 200, route: { id: 'redis' }, upstream: { url: 'tcp://redis:6379', host: 'redis:6379' } },
  },
  {
    name: 'CONNECT that the route policy denies: 403',
    config: CONFIG,
    entry: { kind: 'connect' },
    request: { method: 'CONNECT', target: 'ssh.example.com:22' },
    identity: null,
    expect: { outcome: 'deny', status: 403, route: { id: 'ssh' }, reasons: ['http-method-unauthorized'] },
  },
  ...['unknown.example.com:5432', 'db.example.com:5433', 'app.example.com:443', 'fwd.example.com:443'].map(
    (target): DecisionCase => ({
      name: `CONNECT to an authority no tcp route has: 404 (${target})`,
      config: CONFIG,
      entry: { kind: 'connect' },
      request: { method: 'CONNECT', target },
      identity: ops,
      expect: { outcome: 'not_found', status: 404, reasons: ['no-route'] },
    }),
  ),
  ...['db.example.com', 'db.example.com:0', 'db.example.com:65536', ':5432', 'user@db.example.com:5432', 'db.example.com:5432/x', '/'].map(
    (target): DecisionCase => ({
      name: `a malformed CONNECT authority is 400, before the certificate check: ${target}`,
      config: CONFIG,
      entry: { kind: 'connect' },
      connection: OTHER_NAME,
      request: { method: 'CONNECT', target },
      identity: null,
      expect: { outcome: 'bad_request', status: 400, problem: 'target-not-origin-form' },
    }),
  ),
  {
    name: 'an ordinary request never reaches a tcp route: 404',
    config: CONFIG,
    entry: { kind: 'request' },
    request: { host: 'db.example.com:5432' },
    identity: null,
    expect: { outcome: 'not_found', status: 404 },
  },
];

/**
 * Rule book §1, one authority per request: over HTTP/2 `:authority` is the authority
 * and a `host` naming another host is refused; over HTTP/1.1 an absolute-form target is, and a
 * `Host` naming another host is refused. Compared after normalization; whitespace never trimmed.
 * Both a plain request and an upgrade, on a connection whose certificate covers both hosts (so the
 * 400 is the rule's, not a 421).
 */
const BOTH_HOSTS: GateConnectionData = { tls: { covers: ['*.example.com'], requires: [] } };
const oneAuthority: DecisionCase[] = (['request', 'upgrade'] as const).flatMap((kind): DecisionCase[] => {
  const { host: _host, ...base } = requestOf(kind);
  const h2 = (authority: string, host: string | undefined) => ({ ...base, headers: { ...(base.headers ?? {}), ':authority': [authority], ...(host === undefined ? {} : { host: [host] }) } });
  return [
    ...(
      [
        ['open.example.com', 'app.example.com'],
        ['app.example.com', 'open.example.com'],
        ['app.example.com', 'app.example.com:8443'],
        ['app.example.com', 'app.example.com.'],
      ] as const
    ).map(([authority, host]) => ({
      name: `HTTP/2 ${kind}: a host \`${host}\` beside :authority \`${authority}\` is 400 host-conflict`,
      config: CONFIG,
      entry: { kind, httpVersion: '2.0' as const },
      connection: BOTH_HOSTS,
      request: h2(authority, host),
      identity: null,
      expect: { outcome: 'bad_request' as const, status: 400, problem: 'host-conflict' as const },
    })),
    {
      name: `HTTP/2 ${kind}: a host equal to :authority after normalization (case, default port) is routed by :authority`,
      config: CONFIG,
      entry: { kind, httpVersion: '2.0' },
      connection: BOTH_HOSTS,
      request: h2('open.example.com', 'OPEN.example.com:443'),
      identity: null,
      expect: { outcome: 'allow', route: { id: 'open' } },
    },
    {
      name: `HTTP/2 ${kind}: :authority alone is the authority`,
      config: CONFIG,
      entry: { kind, httpVersion: '2.0' },
      connection: BOTH_HOSTS,
      request: h2('open.example.com', undefined),
      identity: null,
      expect: { outcome: 'allow', route: { id: 'open' } },
    },
    {
      name: `HTTP/2 ${kind}: a host with whitespace beside :authority is refused, not trimmed`,
      config: CONFIG,
      entry: { kind, httpVersion: '2.0' },
      connection: BOTH_HOSTS,
      request: h2('open.example.com', 'open.example.com '),
      identity: null,
      expect: { outcome: 'bad_request', status: 400, problem: 'host-invalid' },
    },
    ...(['https://open.example.com/ws', 'https://OPEN.example.com:443/ws'] as const).map((target) => ({
      name: `HTTP/1.1 ${kind}: an absolute-form target \`${target}\` beside Host \`app.example.com\` is 400 host-conflict`,
      config: CONFIG,
      entry: { kind },
      connection: BOTH_HOSTS,
      request: { ...base, host: 'app.example.com', target },
      identity: null,
      expect: { outcome: 'bad_request' as const, status: 400, problem: 'host-conflict' as const },
    })),
    {
      name: `HTTP/1.1 ${kind}: an absolute-form target naming the Host's host (other case, default port) is routed`,
      config: CONFIG,
      entry: { kind },
      connection: BOTH_HOSTS,
      request: { ...base, host: 'Open.Example.com', target: 'https://open.example.com:443/ws' },
      identity: null,
      expect: { outcome: 'allow', route: { id: 'open' } },
    },
    ...([' open.example.com', 'open.example.com\t', ''] as const).map((host) => ({
      name: `HTTP/1.1 ${kind}: Host ${JSON.stringify(host)} is refused, never trimmed (beside an absolute-form target too)`,
      config: CONFIG,
      entry: { kind },
      connection: BOTH_HOSTS,
      request: { ...base, host, target: 'https://open.example.com/ws' },
      identity: null,
      expect: { outcome: 'bad_request' as const, status: 400, problem: 'host-invalid' as const },
    })),
    ...([' open.example.com', 'open.example.com\t'] as const).map((host) => ({
      name: `HTTP/1.1 ${kind}: Host ${JSON.stringify(host)} is refused, never trimmed`,
      config: CONFIG,
      entry: { kind },
      connection: BOTH_HOSTS,
      request: { ...base, host },
      identity: null,
      expect: { outcome: 'bad_request' as const, status: 400, problem: 'host-invalid' as const },
    })),
  ];
});

/**
 * Rule book §9 step 2: more than 1,000 header fields is 431 at every way in, before the canonical
 * request; each value of a repeated field counts, HTTP/2 pseudo-headers do not.
 */
const fieldsOf = (n: number): Record<string, string[]> => Object.fromEntries(Array.from({ length: n }, (_, i) => [`x-f${i}`, ['1']]));
const tooManyHeaders: DecisionCase[] = KINDS.flatMap((kind) =>
  (['1.1', '2.0'] as const).flatMap((httpVersion): DecisionCase[] => {
    const base = requestOf(kind);
    const own = kind === 'connect' ? 0 : Object.values(base.headers ?? {}).reduce((n, v) => n + (v?.length ?? 0), 0) + 1; // + Host
    return [
      {
        name: `${kind} over HTTP/${httpVersion} with 1,001 header fields: 431, before the target is read`,
        config: CONFIG,
        entry: { kind, httpVersion },
        request: { ...base, ...(kind === 'connect' ? {} : { target: '/a%2fb' }), headers: { ...(base.headers ?? {}), ...fieldsOf(1001 - own) } },
        identity: null,
        expect: { refused: 431, problem: 'too-many-headers' },
      },
      {
        name: `${kind} over HTTP/${httpVersion} with 1,000 header fields (and pseudo-headers) is decided`,
        config: CONFIG,
        entry: { kind, httpVersion },
        connection: { tls: { covers: ['*.example.com'], requires: [] } },
        request: { ...base, headers: { ...(base.headers ?? {}), ...fieldsOf(1000 - own), ':method': ['GET'], ':scheme': ['https'] } },
        identity: null,
        expect: { outcome: 'allow' },
      },
    ];
  }),
);
const repeatedField: DecisionCase = {
  name: 'each value of a repeated field counts: one name with 1,001 values is 431',
  config: CONFIG,
  entry: { kind: 'request' },
  request: { host: 'open.example.com', headers: { 'x-many': Array.from({ length: 1000 }, () => '1') } },
  identity: null,
  expect: { refused: 431, problem: 'too-many-headers' },
};

/**
 * A route whose policy reads the device (docs/decisions.md §4): the same answer on every way in,
 * plain requests over HTTP/1.1 and HTTP/2 and websocket upgrades over both.
 */
const DEVICE_CONFIG = configText([{ from: 'https://dev.example.com', name: 'dev', to: 'http://dev', allow_websockets: true, policy: 'allow if device approved and device type "enclave_only"' }]);
const withDevice = (type: string, approved: boolean): Identity => ({ ...ops, device: { id: 'cred-1', type, approved } });
const DEVICE_ENTRIES: readonly { readonly kind: EntryKind; readonly httpVersion: '1.1' | '2.0' }[] = [
  { kind: 'request', httpVersion: '1.1' },
  { kind: 'request', httpVersion: '2.0' },
  { kind: 'upgrade', httpVersion: '1.1' },
  { kind: 'upgrade', httpVersion: '2.0' },
];
const device: DecisionCase[] = DEVICE_ENTRIES.flatMap(({ kind, httpVersion }) => {
  const request = kind === 'upgrade' ? { host: 'dev.example.com', target: '/ws', headers: WEBSOCKET } : { host: 'dev.example.com', target: '/ws' };
  const entry = { kind, httpVersion };
  return [
    { name: `a device route, ${kind} over HTTP/${httpVersion}, approved platform device: allowed`, config: DEVICE_CONFIG, entry, request, identity: withDevice('enclave_only', true), expect: { outcome: 'allow', route: { id: 'dev' } } },
    { name: `a device route, ${kind} over HTTP/${httpVersion}, a USB key: 450`, config: DEVICE_CONFIG, entry, request, identity: withDevice('any', true), expect: { outcome: 'deny', status: 450, reasons: ['device-unauthorized'] } },
    { name: `a device route, ${kind} over HTTP/${httpVersion}, pending device: 450`, config: DEVICE_CONFIG, entry, request, identity: withDevice('enclave_only', false), expect: { outcome: 'deny', status: 450 } },
    { name: `a device route, ${kind} over HTTP/${httpVersion}, signed in without a device: 401`, config: DEVICE_CONFIG, entry, request, identity: ops, expect: { outcome: 'unauthenticated', status: 401, reasons: ['device-unauthenticated'] } },
  ] satisfies DecisionCase[];
});

export const cases: readonly DecisionCase[] = [...certificate, ...http10, ...misdirected, ...wildcard, ...connect, ...oneAuthority, ...tooManyHeaders, repeatedField, ...device];
