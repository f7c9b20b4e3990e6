/**
 * docs/decisions.md's own examples and the readings of its ambiguous lines (test/reference/README.md)
 * that both back ends share. Readings they do not share are in fixtures/corpus/ instead.
 */
import type { Identity } from '../../../runtime/core/types.ts';
import type { DecisionCase } from '../case.ts';
import { configText } from '../../reference/support.ts';

const user: Identity = { user: 'u-1', email: 'one@example.com', groups: ['g'], claims: { org: { unit: 'eng' }, roles: ['a', 2, true, { x: 1 }] } };
const OPEN = (route: Record<string, unknown> = {}, settings: Record<string, unknown> = {}) =>
  configText([{ from: 'https://app.example.com', to: 'http://app', allow_public_unauthenticated_access: true, ...route }], settings);

export const cases: readonly DecisionCase[] = [
  {
    name: '§2 `/.svc` itself is svc’s own',
    config: OPEN(),
    request: { host: 'app.example.com', target: '/.svc' },
    identity: null,
    expect: { outcome: 'internal', endpoint: { service: 'proxy', path: '/.svc' }, reasons: ['internal'] },
  },
  {
    name: '§2 the authenticate host with :443 is svc’s own',
    config: OPEN(),
    request: { host: 'AUTH.example.com:443', target: '/x' },
    identity: null,
    expect: { outcome: 'internal', endpoint: { service: 'authenticate', path: '/x' } },
  },
  {
    name: '§3 `tcp+https` routes never answer an ordinary request',
    config: configText([{ from: 'tcp+https://db.example.com:5432', to: 'tcp://db:5432', allow_public_unauthenticated_access: true }]),
    request: { host: 'db.example.com:5432', target: '/' },
    identity: null,
    expect: { outcome: 'not_found', status: 404, reasons: ['no-route'] },
  },
  {
    name: '§3 a prefix is a plain string prefix: `/api` matches `/apix`',
    config: OPEN({ prefix: '/api' }),
    request: { host: 'app.example.com', target: '/apix' },
    identity: null,
    expect: { outcome: 'allow', upstream: { url: 'http://app/apix' } },
  },
  {
    name: '§4 claims: dotted names walk nested objects; lists give their scalar items',
    config: configText([{ from: 'https://app.example.com', to: 'http://app', policy: 'allow if claim/org.unit is "eng" and claim/roles has "2" and claim/roles has "true"' }]),
    request: { host: 'app.example.com' },
    identity: user,
    expect: { outcome: 'allow', reasons: ['claim-ok'] },
  },
  {
    name: '§4 a claim named like an Object.prototype member has no value',
    config: configText([{ from: 'https://app.example.com', to: 'http://app', policy: 'allow if claim/constructor contains "Object"' }]),
    request: { host: 'app.example.com' },
    identity: user,
    expect: { outcome: 'deny', reasons: ['claim-unauthorized'] },
  },
  {
    name: '§4 unknown deny before true allow: an anonymous request is asked to sign in',
    config: configText([{ from: 'https://app.example.com', to: 'http://app', policy: 'allow if accept\ndeny if groups has "banned"' }]),
    request: { host: 'app.example.com', headers: { accept: ['text/html'] } },
    identity: null,
    expect: { outcome: 'unauthenticated', status: 302, reasons: ['user-unauthenticated'] },
  },
  {
    name: '§5 with trusted hops, the underscore spelling of X-Forwarded-For is dropped, the real one kept',
    config: OPEN({}, { xff_num_trusted_hops: 1 }),
    request: { host: 'app.example.com', peer: '10.0.0.2', headers: { 'x-forwarded-for': ['192.0.2.1'], x_forwarded_for: ['6.6.6.6'] } },
    identity: null,
    expect: { outcome: 'allow', upstream: { headers: { 'x-forwarded-for': '192.0.2.1, 10.0.0.2' } } },
    absentHeaders: ['x_forwarded_for'],
  },
  {
    name: '§6 `/anything` + `/foo` joins to `/anythingfoo`',
    config: OPEN({ to: 'http://app/anything' }),
    request: { host: 'app.example.com', target: '/foo' },
    identity: null,
    expect: { upstream: { url: 'http://app/anythingfoo' } },
  },
  {
    name: '§6 `/anything/` + `/foo` joins to `/anything/foo`',
    config: OPEN({ to: 'http://app/anything/' }),
    request: { host: 'app.example.com', target: '/foo' },
    identity: null,
    expect: { upstream: { url: 'http://app/anything/foo' } },
  },
  {
    name: '§6 prefix_rewrite on a route without a matcher replaces the leading `/`',
    config: OPEN({ prefix_rewrite: '/v2/' }),
    request: { host: 'app.example.com', target: '/x?y' },
    identity: null,
    expect: { upstream: { url: 'http://app/v2/x?y' } },
  },
  {
    name: '§6 regex rewrite: `\\1` inserts a group and a missing leading `/` is added',
    config: OPEN({ regex_rewrite_pattern: '^/([a-z]+)/(.*)$', regex_rewrite_substitution: '\\2-\\1' }),
    request: { host: 'app.example.com', target: '/abc/def' },
    identity: null,
    expect: { upstream: { url: 'http://app/def-abc' } },
  },
  {
    name: '§6 the default host is the upstream’s, with its non-default port',
    config: OPEN({ to: 'https://app:8443' }),
    request: { host: 'app.example.com' },
    identity: null,
    expect: { upstream: { url: 'https://app:8443/', host: 'app:8443' } },
  },
  {
    name: '§6 duplicate header values are joined with `, `, cookies with `; `',
    config: OPEN(),
    request: { host: 'app.example.com', headers: { cookie: ['a=1', 'b=2'], 'x-list': ['1', '2'] } },
    identity: null,
    expect: { upstream: { headers: { cookie: 'a=1; b=2', 'x-list': '1, 2' } } },
  },
  {
    name: '§6 hop-by-hop headers and the ones `connection` lists are not forwarded',
    config: OPEN(),
    request: { host: 'app.example.com', headers: { connection: ['close, X-Private'], 'x-private': ['p'], upgrade: ['h2c'], 'http2-settings': ['x'], te: ['trailers'], 'proxy-connection': ['x'] } },
    identity: null,
    expect: { outcome: 'allow' },
    absentHeaders: ['connection', 'x-private', 'upgrade', 'http2-settings', 'te', 'proxy-connection'],
  },
  {
    name: '§6 a client header whose name contains `_` is not forwarded by default',
    config: OPEN(),
    request: { host: 'app.example.com', headers: { x_user: ['admin'], 'X_Custom-Thing': ['1'], _: ['x'], 'x-plain': ['kept'] } },
    identity: null,
    expect: { outcome: 'allow', upstream: { headers: { 'x-plain': 'kept' } } },
    absentHeaders: ['x_user', 'x_custom-thing', '_'],
  },
  {
    name: '§6 `allow_underscores_in_headers` forwards them, but never the reserved or forwarded names in `_` spelling',
    config: OPEN({ allow_underscores_in_headers: true }),
    request: { host: 'app.example.com', headers: { x_user: ['admin'], x_svc_route: ['forged'], x_forwarded_proto: ['https'] } },
    identity: null,
    expect: { outcome: 'allow', upstream: { headers: { x_user: 'admin', 'x-forwarded-proto': 'https' } } },
    absentHeaders: ['x_svc_route', 'x_forwarded_proto'],
  },
  {
    name: '§6 `expect` (answered by svc itself) and HTTP/2 pseudo-headers are not forwarded',
    config: OPEN(),
    request: { headers: { ':authority': ['app.example.com'], ':method': ['POST'], expect: ['100-continue'] }, method: 'POST' },
    identity: null,
    expect: { outcome: 'allow' },
    absentHeaders: ['expect', ':authority', ':method'],
  },
  {
    name: '§7 the scheme’s default port is left out; the request port is kept otherwise',
    config: configText([{ from: 'https://app.example.com:8443', redirect: { scheme_redirect: 'http' }, allow_public_unauthenticated_access: true }]),
    request: { host: 'app.example.com:8443', target: '/p?q' },
    identity: null,
    expect: { outcome: 'redirect', status: 301, location: 'http://app.example.com:8443/p?q' },
  },
];
