/**
 * docs/security.md rows the decision core answers for (S06-S11, S13-S18): each row's attack as a request,
 * and what docs/decisions.md says must come of it.
 */
import type { Identity } from '../../../runtime/core/types.ts';
import type { DecisionCase } from '../case.ts';
import { configText } from '../../reference/support.ts';

const admin: Identity = { user: 'u-admin', email: 'admin@example.com', groups: ['admins'], claims: {} };
const bob: Identity = { user: 'u-bob', email: 'bob@example.com', groups: ['staff'], claims: {} };

/** `/public` is open to all, everything else on the host needs the `admins` group. */
const PUBLIC_AND_ADMIN = configText([
  { from: 'https://app.example.com', name: 'public', prefix: '/public', to: 'http://app', allow_public_unauthenticated_access: true },
  { from: 'https://app.example.com', name: 'admin', to: 'http://app', policy: 'allow if groups has "admins"' },
]);

const s06: DecisionCase[] = ['/public/../admin', '/public/%2e%2e/admin', '/public/%2E%2E/admin', '/./admin', '/public/./../admin'].map((target) => ({
  name: `S06 dot segments are removed before matching: ${target}`,
  config: PUBLIC_AND_ADMIN,
  request: { host: 'app.example.com', target },
  identity: bob,
  expect: { outcome: 'deny', status: 403, route: { id: 'admin' }, reasons: ['groups-unauthorized'] },
}));

const s06Forward: DecisionCase = {
  name: 'S06 the path that was matched is the path forwarded',
  config: PUBLIC_AND_ADMIN,
  request: { host: 'app.example.com', target: '/public/%2e%2e/admin/./x?y=/../z' },
  identity: admin,
  expect: { outcome: 'allow', route: { id: 'admin' }, upstream: { url: 'http://app/admin/x?y=/../z' } },
};

const s07: DecisionCase[] = ['/admin%2Fsecret', '/admin%2fsecret', '/admin%5csecret', '/admin%00', '/admin%3b', '/admin%3B', '/admin%23', '/admin%3Fx', '/public%2F..%2Fadmin'].map((target) => ({
  name: `S07 encoded / \\ NUL ; ? # in the path are refused: ${target}`,
  config: PUBLIC_AND_ADMIN,
  request: { host: 'app.example.com', target },
  identity: admin,
  expect: { outcome: 'bad_request', status: 400, problem: 'target-forbidden-escape', reasons: ['target-forbidden-escape'] },
}));

const s08: DecisionCase[] = [
  {
    name: 'S08 `//admin` is matched and forwarded as `/admin`',
    config: PUBLIC_AND_ADMIN,
    request: { host: 'app.example.com', target: '//admin' },
    identity: admin,
    expect: { outcome: 'allow', route: { id: 'admin' }, upstream: { url: 'http://app/admin' } },
  },
  {
    name: 'S08 `//public/..//admin//config` is merged the same way for matching and forwarding',
    config: PUBLIC_AND_ADMIN,
    request: { host: 'app.example.com', target: '//public/..//admin//config' },
    identity: admin,
    expect: { outcome: 'allow', route: { id: 'admin' }, upstream: { url: 'http://app/admin/config' } },
  },
  {
    name: 'S08 a merged `//public` is the public route for an anonymous visitor',
    config: PUBLIC_AND_ADMIN,
    request: { host: 'app.example.com', target: '//public//x' },
    identity: null,
    expect: { outcome: 'allow', route: { id: 'public' }, reasons: ['public-route'], upstream: { url: 'http://app/public/x' } },
  },
];

const s09: DecisionCase[] = ['/user/profile#x', '/public#/../admin', '/admin?x=#y'].map((target) => ({
  name: `S09 a raw # in the target is refused: ${target}`,
  config: PUBLIC_AND_ADMIN,
  request: { host: 'app.example.com', target },
  identity: admin,
  expect: { outcome: 'bad_request', status: 400, problem: 'target-fragment' },
}));

const REGEX_PUBLIC = configText([
  { from: 'https://app.example.com', name: 'public', regex: '.*public', to: 'http://app', allow_public_unauthenticated_access: true },
  { from: 'https://app.example.com', name: 'anchored', regex: '^/open', to: 'http://app', allow_public_unauthenticated_access: true },
  { from: 'https://app.example.com', name: 'admin', to: 'http://app', policy: 'allow if groups has "admins"' },
]);

const s10: DecisionCase[] = [
  {
    name: 'S10 a public regex never sees the query',
    config: REGEX_PUBLIC,
    request: { host: 'app.example.com', target: '/admin?x=/public', headers: { accept: ['application/json'] } },
    identity: null,
    expect: { outcome: 'unauthenticated', status: 401, route: { id: 'admin' }, location: null },
  },
  {
    name: 'S10 regexes are anchored to the whole path: `.*public` does not match `/publicx`',
    config: REGEX_PUBLIC,
    request: { host: 'app.example.com', target: '/publicx' },
    identity: bob,
    expect: { outcome: 'deny', route: { id: 'admin' } },
  },
  {
    name: 'S10 `^/open` matches only `/open` as a whole, not `/open/x`',
    config: REGEX_PUBLIC,
    request: { host: 'app.example.com', target: '/open/x' },
    identity: bob,
    expect: { outcome: 'deny', route: { id: 'admin' } },
  },
  {
    name: 'S10 the public regex matches its whole path',
    config: REGEX_PUBLIC,
    request: { host: 'app.example.com', target: '/x/public?q=1' },
    identity: null,
    expect: { outcome: 'allow', route: { id: 'public' }, upstream: { url: 'http://app/x/public?q=1' } },
  },
];

/** Two routes whose policies disagree; the decision must be the forwarded route's. */
const SPLIT = configText([
  { from: 'https://app.example.com', name: 'strict', prefix: '/api/admin', to: 'http://admin-backend', policy: 'allow if groups has "admins"' },
  { from: 'https://app.example.com', name: 'open', prefix: '/api', to: 'http://api-backend', policy: 'allow if authenticated_user' },
]);

const s11: DecisionCase[] = [
  {
    name: 'S11 a path that normalizes into the strict route is decided and forwarded by the strict route',
    config: SPLIT,
    request: { host: 'app.example.com', target: '/api/x/../admin/users' },
    identity: bob,
    expect: { outcome: 'deny', route: { id: 'strict', index: 0 }, reasons: ['groups-unauthorized'] },
  },
  {
    name: 'S11 the allowed request goes to the upstream of the route whose policy allowed it',
    config: SPLIT,
    request: { host: 'app.example.com', target: '/api/%61dmin/users' },
    identity: admin,
    expect: { outcome: 'allow', route: { id: 'strict' }, reasons: ['groups-ok'], upstream: { url: 'http://admin-backend/api/admin/users' } },
  },
  {
    name: 'S11 a path leaving the strict prefix is the open route’s, decided and forwarded there',
    config: SPLIT,
    request: { host: 'app.example.com', target: '/api/admin/../users' },
    identity: bob,
    expect: { outcome: 'allow', route: { id: 'open', index: 1 }, reasons: ['authenticated-user-ok'], upstream: { url: 'http://api-backend/api/users' } },
  },
];

const DIRECT = configText([{ from: 'https://app.example.com', name: 'app', prefix: '/admin', to: 'http://app', policy: 'allow if groups has "admins"' }, { from: 'https://app.example.com', name: 'public', to: 'http://app', allow_public_unauthenticated_access: true }]);

const s13: DecisionCase[] = [
  {
    name: 'S13 X-Forwarded-Uri from a direct client neither routes nor reaches the upstream',
    config: DIRECT,
    request: { host: 'app.example.com', target: '/admin', headers: { 'x-forwarded-uri': ['/public'], 'x-original-url': ['/public'], 'x-forwarded-prefix': ['/public'] } },
    identity: admin,
    expect: { outcome: 'allow', route: { id: 'app' }, upstream: { url: 'http://app/admin' } },
    absentHeaders: ['x-forwarded-uri', 'x-forwarded-prefix'],
  },
  {
    name: 'S13 X-Forwarded-For from a direct client is replaced by the TCP peer',
    config: DIRECT,
    request: { host: 'app.example.com', target: '/x', peer: '198.51.100.7', headers: { 'x-forwarded-for': ['10.0.0.1'], 'x-real-ip': ['10.0.0.1'], forwarded: ['for=10.0.0.1'] } },
    identity: null,
    expect: { outcome: 'allow', upstream: { headers: { 'x-forwarded-for': '198.51.100.7' } } },
    absentHeaders: ['x-real-ip', 'forwarded'],
  },
];

const s14: DecisionCase[] = [
  {
    name: 'S14 X-Forwarded-Proto: https over plain HTTP is not believed',
    config: DIRECT,
    request: { host: 'app.example.com', target: '/x', scheme: 'http', headers: { 'x-forwarded-proto': ['https'] } },
    identity: null,
    expect: { outcome: 'allow', upstream: { headers: { 'x-forwarded-proto': 'http' } } },
  },
  {
    name: 'S14 X-Forwarded-Host never steers the sign-in URL',
    config: DIRECT,
    request: { host: 'app.example.com', target: '/admin?a=1', headers: { 'x-forwarded-host': ['evil.example'], accept: ['text/html'] } },
    identity: null,
    expect: {
      outcome: 'unauthenticated',
      status: 302,
      location: `https://auth.example.com/.svc/sign_in?svc_redirect_uri=${encodeURIComponent('https://app.example.com/admin?a=1')}`,
    },
  },
  {
    name: 'S14 X-Forwarded-Host from a direct client is not forwarded',
    config: DIRECT,
    request: { host: 'app.example.com', target: '/x', headers: { 'x-forwarded-host': ['evil.example'] } },
    identity: null,
    expect: { outcome: 'allow', upstream: { host: 'app' } },
    absentHeaders: ['x-forwarded-host'],
  },
];

const TRUSTED = (hops: number) =>
  configText(
    [
      { from: 'https://app.example.com', name: 'internal', prefix: '/internal', to: 'http://app', policy: 'allow if source_ip in ["10.0.0.0/8"]' },
      { from: 'https://app.example.com', name: 'blocked', to: 'http://app', policy: 'allow if accept\ndeny if source_ip in ["192.0.2.0/24"]' },
    ],
    { xff_num_trusted_hops: hops },
  );

const s15: DecisionCase[] = [
  ...[['a'], [''], ['unknown'], ['10.0.0.1:80'], ['[10.0.0.1]']].map(
    (xff): DecisionCase => ({
      name: `S15 an unparsable client address is refused, never "no restriction": ${JSON.stringify(xff)}`,
      config: TRUSTED(1),
      request: { host: 'app.example.com', target: '/x', headers: { 'x-forwarded-for': xff } },
      identity: null,
      expect: { outcome: 'bad_request', status: 400, problem: 'client-address-invalid', reasons: ['client-address-invalid'] },
    }),
  ),
  {
    name: 'S15 fewer X-Forwarded-For entries than trusted hops is refused',
    config: TRUSTED(2),
    request: { host: 'app.example.com', target: '/x', headers: { 'x-forwarded-for': ['192.0.2.5'] } },
    identity: null,
    expect: { outcome: 'bad_request', problem: 'client-address-invalid' },
  },
  {
    name: 'S15 no X-Forwarded-For at all with trusted hops is refused',
    config: TRUSTED(1),
    request: { host: 'app.example.com', target: '/x' },
    identity: null,
    expect: { outcome: 'bad_request', problem: 'client-address-invalid' },
  },
  {
    name: 'S15 the trusted entry decides the deny rule',
    config: TRUSTED(1),
    request: { host: 'app.example.com', target: '/x', headers: { 'x-forwarded-for': ['garbage-left-of-trust, 192.0.2.5'] } },
    identity: null,
    expect: { outcome: 'deny', reasons: ['source-ip-ok'] },
  },
  {
    name: 'S15 an IPv4-mapped trusted entry is its IPv4 address',
    config: TRUSTED(1),
    request: { host: 'app.example.com', target: '/internal', headers: { 'x-forwarded-for': ['::ffff:10.1.2.3'] } },
    identity: null,
    expect: { outcome: 'allow', route: { id: 'internal' }, reasons: ['source-ip-ok'] },
  },
];

const IDENTITY_HEADERS = configText([{ from: 'https://app.example.com', to: 'http://app', policy: 'allow if authenticated_user', pass_identity_headers: true }], {
  jwt_claims_headers: { 'Remote-User': 'user', 'X-Email': 'email', 'X-Groups': 'groups' },
});

const s16: DecisionCase[] = [
  {
    name: 'S16 a client-sent identity header is replaced by the session’s value',
    config: IDENTITY_HEADERS,
    request: { host: 'app.example.com', headers: { 'remote-user': ['admin'], 'x-groups': ['admins'] } },
    identity: { user: 'u-bob', groups: ['staff', 'dev'], claims: {} },
    expect: { outcome: 'allow', upstream: { assertion: true, headers: { 'remote-user': 'u-bob', 'x-groups': 'staff,dev' } } },
    absentHeaders: ['x-email'],
  },
  {
    name: 'S16 an identity header the session has no value for is still removed (`_` read as `-`)',
    config: IDENTITY_HEADERS,
    request: { host: 'app.example.com', headers: { x_email: ['admin@example.com'], 'x-email': ['admin@example.com'] } },
    identity: { user: 'u-bob', groups: [], claims: {} },
    expect: { outcome: 'allow' },
    absentHeaders: ['x-email', 'x_email'],
  },
  {
    name: 'S16 identity headers are removed on a public route with an anonymous request',
    config: configText([{ from: 'https://app.example.com', to: 'http://app', allow_public_unauthenticated_access: true, pass_identity_headers: true }], { jwt_claims_headers: { 'Remote-User': 'user' } }),
    request: { host: 'app.example.com', headers: { 'remote-user': ['admin'], 'x-svc-jwt-assertion': ['forged'] } },
    identity: null,
    expect: { outcome: 'allow', upstream: { assertion: false } },
    absentHeaders: ['remote-user', 'x-svc-jwt-assertion'],
  },
];

const s17: DecisionCase[] = [
  {
    name: 'S17 two Host headers are refused',
    config: DIRECT,
    request: { headers: { host: ['app.example.com', 'evil.example'] } },
    identity: admin,
    expect: { outcome: 'bad_request', status: 400, problem: 'host-duplicate' },
  },
  {
    name: 'S17 a duplicated host_rewrite_header is not trusted: the upstream’s host is sent',
    config: configText([{ from: 'https://app.example.com', to: 'http://app:8080', host_rewrite_header: 'X-Target-Host', allow_public_unauthenticated_access: true }]),
    request: { host: 'app.example.com', headers: { 'x-target-host': ['internal.example', 'admin.internal'] } },
    identity: null,
    expect: { outcome: 'allow', upstream: { host: 'app:8080', headers: { host: 'app:8080' } } },
  },
  {
    name: 'S17 a duplicated client identity header is removed whole',
    config: IDENTITY_HEADERS,
    request: { host: 'app.example.com', headers: { 'remote-user': ['u-bob', 'admin'] } },
    identity: { user: 'u-bob', groups: [], claims: {} },
    expect: { outcome: 'allow', upstream: { headers: { 'remote-user': 'u-bob' } } },
  },
];

const s18: DecisionCase = {
  name: 'S18 the reserved x-svc-* and x-envoy-* namespaces are stripped at ingress',
  config: DIRECT,
  request: {
    host: 'app.example.com',
    target: '/x',
    headers: { 'x-envoy-original-path': ['/admin'], 'x-svc-route': ['admin'], x_svc_jwt_assertion: ['forged'], 'x-envoy-internal': ['true'], 'x-svc-claim-email': ['admin@example.com'] },
  },
  identity: null,
  expect: { outcome: 'allow', upstream: { headers: { host: 'app', 'x-forwarded-proto': 'https', 'x-forwarded-for': '203.0.113.9' } } },
  absentHeaders: ['x-envoy-original-path', 'x-svc-route', 'x_svc_jwt_assertion', 'x-envoy-internal', 'x-svc-claim-email'],
};

/** Every docs/security.md case of the decision core. */
export const cases: readonly DecisionCase[] = [...s06, s06Forward, ...s07, ...s08, ...s09, ...s10, ...s11, ...s13, ...s14, ...s15, ...s16, ...s17, s18];
