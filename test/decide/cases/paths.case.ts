/**
 * docs/security.md S54: paths that rewrites and the `to` join would make ambiguous again (docs/decisions.md
 * §6 step 5, §7). The rule: what is forwarded is re-normalized; a dot segment, or a path that leaves
 * the route's forwarded prefix, is 400 `forwarded-path-dot-segment`; merged slashes are merged.
 * docs/security.md S55: paths upstreams read differently (§1, §3): a raw `;` in the path is 400
 * `target-path-parameter` unless the chosen route has `allow_path_parameters`; route matching
 * compares case as the route's `path_case` says, the same for `path`, `prefix` and `regex`.
 */
import type { Identity } from '../../../runtime/core/types.ts';
import type { DecisionCase } from '../case.ts';
import { configText } from '../../reference/support.ts';

const bob: Identity = { user: 'u-bob', email: 'bob@example.com', groups: ['staff'], claims: {} };
const REFUSED = { outcome: 'bad_request', status: 400, problem: 'forwarded-path-dot-segment', reasons: ['forwarded-path-dot-segment'] } as const;

/** `/app` strips its prefix; the upstream's `/admin` is denied by policy on the canonical path. */
const STRIP = configText([
  { from: 'https://app.example.com', name: 'app', prefix: '/app', prefix_rewrite: '/', to: 'http://app', policy: 'allow if groups has "staff"\ndeny if http_path starts_with "/admin"' },
]);

const dotAfterPrefix: DecisionCase[] = ['/app%2e%2e/admin', '/app../admin', '/app%2E%2e/admin', '/app./admin', '/app%2e/admin', '/app..'].map((target) => ({
  name: `§6.5 a dot right after a prefix becomes a dot segment after prefix_rewrite: refused: ${target}`,
  config: STRIP,
  request: { host: 'app.example.com', target },
  identity: bob,
  expect: REFUSED,
}));

/** A restricted `/admin` before a public catch-all: the shape upstream-reading attacks aim at. */
const RESTRICTED = (extra: Record<string, unknown> = {}, publicExtra: Record<string, unknown> = {}) =>
  configText([
    { from: 'https://app.example.com', name: 'admin', prefix: '/admin', to: 'http://app', policy: 'allow if groups has "admins"', ...extra },
    { from: 'https://app.example.com', name: 'public', to: 'http://app', allow_public_unauthenticated_access: true, ...publicExtra },
  ]);

const parameters: DecisionCase[] = ['/..;/admin', '/admin;x', '/public;jsessionid=1/../admin', '/a;/b', '/;'].map((target) => ({
  name: `§1 a raw \`;\` in the path is refused: ${target}`,
  config: RESTRICTED(),
  request: { host: 'app.example.com', target },
  identity: null,
  expect: { outcome: 'bad_request', status: 400, problem: 'target-path-parameter', reasons: ['target-path-parameter'] },
}));

const caseVariants: DecisionCase[] = ['/ADMIN', '/Admin/x', '/aDmIn'].flatMap((target): DecisionCase[] => [
  {
    name: `§3 path_case sensitive (the default): ${target} is not the restricted prefix`,
    config: RESTRICTED(),
    request: { host: 'app.example.com', target },
    identity: null,
    expect: { outcome: 'allow', route: { id: 'public' } },
  },
  {
    name: `§3 path_case insensitive: ${target} is the restricted prefix`,
    config: RESTRICTED({ path_case: 'insensitive' }),
    request: { host: 'app.example.com', target },
    identity: null,
    expect: { outcome: 'unauthenticated', status: 401, route: { id: 'admin' } },
  },
]);

export const cases: readonly DecisionCase[] = [
  ...dotAfterPrefix,
  ...parameters,
  ...caseVariants,
  {
    name: '§1 a `;` in the query is ordinary',
    config: RESTRICTED(),
    request: { host: 'app.example.com', target: '/x?a=1;b=2' },
    identity: null,
    expect: { outcome: 'allow', route: { id: 'public' }, upstream: { url: 'http://app/x?a=1;b=2' } },
  },
  {
    name: '§1 a route with allow_path_parameters takes a raw `;` and forwards it',
    config: RESTRICTED({}, { allow_path_parameters: true }),
    request: { host: 'app.example.com', target: '/files/a;v=2' },
    identity: null,
    expect: { outcome: 'allow', route: { id: 'public' }, upstream: { url: 'http://app/files/a;v=2' } },
  },
  ...['/..;/admin', '/.;/admin', '/;x/admin', '/public/..;x/admin'].map((target): DecisionCase => ({
    name: `§1 with allow_path_parameters, a dot segment before its parameters is still refused: ${target}`,
    config: RESTRICTED({}, { allow_path_parameters: true }),
    request: { host: 'app.example.com', target },
    identity: null,
    expect: { outcome: 'bad_request', status: 400, problem: 'target-path-parameter' },
  })),
  {
    name: '§1 a `;` removed by a later `..` still counts: refused without the opt-in',
    config: configText([
      { from: 'https://app.example.com', name: 'public', to: 'http://app', allow_public_unauthenticated_access: true },
      { from: 'https://other.example.com', name: 'java', to: 'http://app', allow_path_parameters: true, allow_public_unauthenticated_access: true },
    ]),
    request: { host: 'app.example.com', target: '/public;/../admin' },
    identity: null,
    expect: { outcome: 'bad_request', status: 400, problem: 'target-path-parameter' },
  },
  {
    name: '§1 a `;` path that the opt-in host routes to a route without it is still refused',
    config: RESTRICTED({}, { allow_path_parameters: true }),
    request: { host: 'app.example.com', target: '/admin;x' },
    identity: null,
    expect: { outcome: 'bad_request', status: 400, problem: 'target-path-parameter' },
  },
  {
    name: '§3 path_case insensitive applies to `path` routes',
    config: configText([{ from: 'https://app.example.com', name: 'exact', path: '/Login', path_case: 'insensitive', to: 'http://app', allow_public_unauthenticated_access: true }]),
    request: { host: 'app.example.com', target: '/LOGIN' },
    identity: null,
    expect: { outcome: 'allow', route: { id: 'exact' }, upstream: { url: 'http://app/LOGIN' } },
  },
  {
    name: '§3 path_case insensitive applies to `regex` routes; prefix_rewrite replaces the matched length',
    config: configText([{ from: 'https://app.example.com', name: 'rx', regex: '/api/v[0-9]+/.*', path_case: 'insensitive', to: 'http://app', allow_public_unauthenticated_access: true }]),
    request: { host: 'app.example.com', target: '/API/V2/x' },
    identity: null,
    expect: { outcome: 'allow', route: { id: 'rx' } },
  },
  {
    name: '§3 path_case insensitive prefix_rewrite replaces the matched prefix whatever its case',
    config: configText([{ from: 'https://app.example.com', name: 'p', prefix: '/app/', prefix_rewrite: '/', path_case: 'insensitive', to: 'http://app', allow_public_unauthenticated_access: true }]),
    request: { host: 'app.example.com', target: '/APP/X' },
    identity: null,
    expect: { outcome: 'allow', route: { id: 'p' }, upstream: { url: 'http://app/X' } },
  },
  {
    name: '§6.5 an ordinary path under the prefix is forwarded, the empty segment of the splice merged',
    config: STRIP,
    request: { host: 'app.example.com', target: '/app/x/y?q=/../z' },
    identity: bob,
    expect: { outcome: 'allow', upstream: { url: 'http://app/x/y?q=/../z' } },
  },
  {
    name: '§6.5 a dot that is part of a longer segment is not a dot segment',
    config: STRIP,
    request: { host: 'app.example.com', target: '/app...x' },
    identity: bob,
    expect: { outcome: 'allow', upstream: { url: 'http://app/...x' } },
  },
  {
    name: '§6.5 the `to` path join merges `//` made by the rewrite',
    config: configText([{ from: 'https://app.example.com', prefix: '/api', prefix_rewrite: '/v1/', to: 'http://app/base/', allow_public_unauthenticated_access: true }]),
    request: { host: 'app.example.com', target: '/api/users' },
    identity: null,
    expect: { outcome: 'allow', upstream: { url: 'http://app/base/v1/users' } },
  },
  {
    name: '§6.5 a dot after the prefix is refused through a `to` path too',
    config: configText([{ from: 'https://app.example.com', prefix: '/api', prefix_rewrite: '/v1/', to: 'http://app/base/', allow_public_unauthenticated_access: true }]),
    request: { host: 'app.example.com', target: '/api%2e%2e/secret' },
    identity: null,
    expect: REFUSED,
  },
  {
    name: '§6.5 a rewrite without a trailing `/` fuses the dots into a segment: allowed',
    config: configText([{ from: 'https://app.example.com', prefix: '/api', prefix_rewrite: '/v1', to: 'http://app', allow_public_unauthenticated_access: true }]),
    request: { host: 'app.example.com', target: '/api../x' },
    identity: null,
    expect: { outcome: 'allow', upstream: { url: 'http://app/v1../x' } },
  },
  {
    name: '§6.5 a regex rewrite that makes a dot segment is refused',
    config: configText([{ from: 'https://app.example.com', regex_rewrite_pattern: '^/files-', regex_rewrite_substitution: '/files/', to: 'http://app', allow_public_unauthenticated_access: true }]),
    request: { host: 'app.example.com', target: '/files-../admin' },
    identity: null,
    expect: REFUSED,
  },
  {
    name: '§6.5 a denied request is still 403: step 5 comes after the policy',
    config: STRIP,
    request: { host: 'app.example.com', target: '/app%2e%2e/admin' },
    identity: null,
    expect: { outcome: 'unauthenticated', status: 401 },
  },
  {
    name: '§7 a redirect prefix_rewrite that makes a dot segment is refused',
    config: configText([{ from: 'https://app.example.com', prefix: '/old', redirect: { prefix_rewrite: '/new/' }, allow_public_unauthenticated_access: true }]),
    request: { host: 'app.example.com', target: '/old../x' },
    identity: null,
    expect: REFUSED,
  },
  {
    name: '§7 a redirect prefix_rewrite path is merged',
    config: configText([{ from: 'https://app.example.com', prefix: '/old', redirect: { prefix_rewrite: '/new/' }, allow_public_unauthenticated_access: true }]),
    request: { host: 'app.example.com', target: '/old/x' },
    identity: null,
    expect: { outcome: 'redirect', location: 'https://app.example.com/new/x' },
  },
];
