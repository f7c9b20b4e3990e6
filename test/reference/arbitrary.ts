/**
 * fast-check generators for the differential tests: configs that compile cleanly (a few hosts,
 * overlapping path matchers, rewrites, every host rule, header edits, redirects, public routes and
 * policies in the text syntax), identities, and requests aimed at the generated config (its hosts
 * and paths, plus the tricky targets and headers of docs/security.md).
 *
 * Configs are generated valid by construction, following the compiler's validation rules
 * (compiler/validate/rules/): one path matcher, one host rule, no policy on a public route, paths
 * starting with `/`, complete rewrite pairs, weights on all `to` URLs or none, redirects that change
 * something without conflicting fields, `set_request_headers` never naming `Host`, unique names.
 */
import fc from 'fast-check';
import type { DecisionRequest, Identity, RequestHeaders } from '../../runtime/core/types.ts';
import type { GateConnectionData, GateEntry } from './gate.ts';
import { configText } from './support.ts';

// ---------------------------------------------------------------------------------------------
// Vocabulary

/** Route hosts (`from` authority). Ports other than 443 answer only exactly. */
export const ROUTE_HOSTS = ['a.example.com', 'b.example.com', 'a.example.com:8443', 'c.example.com:443', 'd.example.com:9443'] as const;
const AUTH_HOST = 'auth.example.com';
const FORWARD_AUTH_URL = 'https://fwd.example.com';

const PATHS = ['/', '/api', '/api/', '/api/v1', '/admin', '/admin/', '/public', '/x', '/a.b', '/apix'] as const;
const PREFIXES = ['/', '/api', '/api/', '/adm', '/admin/', '/public', '/a.b/', '/x'] as const;
/** A small safe RE2 vocabulary: anchoring is implicit, so most of these can also fail on a prefix. */
const REGEXES = ['/api/.*', '/api/v[0-9]+(/.*)?', '/(admin|public)(/.*)?', '.*public.*', '/[a-z]+', '/x/?', '/a\\.b/.*', '(/api)?/admin/.*', '/[^/]*', '/API.*'] as const;
const REWRITE_PATTERNS = ['^/api', '/v([0-9]+)', '^/([a-z]+)/(.*)$', 'a', '/+', 'x*', '(p)(u)?blic', '\\.'] as const;
const REWRITE_SUBSTITUTIONS = ['/', '/v\\1', '/\\2/\\1', '', 'b\\\\c', '$1', '\\2\\1', 'z\\9', 'no-slash', '[\\0]'] as const;
const HOST_PATTERNS = ['^/([a-z]+)/.*$', '^/api/([^/]+)', '([a-z]+)', '^/nomatch$'] as const;
const HOST_SUBSTITUTIONS = ['\\1.internal', '\\1.example.com:8080', 'fixed.internal'] as const;
const UPSTREAMS = ['http://up1', 'http://up2:8080', 'https://up3', 'https://up4:443', 'http://up5:80', 'http://10.0.0.5:9000', 'https://up6:8443'] as const;
const UPSTREAM_PATHS = ['', '/', '/base', '/base/', '/anything'] as const;
const REQUEST_HEADER_NAMES = ['x-custom', 'x-target', 'x-drop', 'accept-language', 'x-forwarded-host', 'authorization', 'cookie'] as const;
const HOST_HEADER_NAMES = ['x-target', 'X-Target', 'x-forwarded-host', 'host'] as const;

export const USERS = ['u-alice', 'u-bob', 'u-carol', 'admin'] as const;
export const EMAILS = [
  'alice@example.com', 'bob@corp.example', 'carol@example.com', 'x@y@example.com', 'no-at-sign', 'Alice@Example.com',
  // docs/security.md S53: not one address (no email at all), and a mixed-case domain.
  'x@evil.example@corp.example', '"x@evil.example"@corp.example', 'a@corp.example.', 'a..b@corp.example', 'Bob@CORP.Example',
] as const;
export const GROUPS = ['admins', 'ops', 'team-blue', 'team-red', 'contractors'] as const;
export const CLAIM_NAMES = ['team', 'org.unit', 'level', 'verified', 'roles', 'odd name', 'constructor', 'missing'] as const;
const CLAIM_VALUES = ['blue', 'red', 'eng', 'ops', '3', 'true', 'editor'] as const;
export const DEVICES = [
  { id: 'd1', type: 'enclave_only', approved: true },
  { id: 'd2', type: 'any', approved: false },
] as const;
export const FINGERPRINTS = ['ab'.repeat(32), 'cd'.repeat(32)] as const;
/** Peers as Node reports them: IPv4, IPv6, IPv4-mapped IPv6. */
export const PEERS = ['203.0.113.9', '10.1.2.3', '192.0.2.1', '2001:db8::7', '::1', '::ffff:10.9.8.7', '::ffff:198.51.100.4', 'fe80::1'] as const;
const CIDRS = ['10.0.0.0/8', '192.0.2.0/24', '192.0.2.1/32', '2001:db8::/32', '::ffff:0:0/96', '0.0.0.0/0', '198.51.100.0/24', '::1/128'] as const;

/** The request time window: 2025-06-01 to 2025-06-15 (UTC), so date bounds below fall inside it. */
export const NOW_MIN_MS = Date.parse('2025-06-01T00:00:00Z');
export const NOW_MAX_MS = Date.parse('2025-06-15T00:00:00Z');
const INSTANTS = ['2025-06-05T00:00:00Z', '2025-06-10T12:00:00+02:00'] as const;

const pick = <T>(xs: readonly T[]): fc.Arbitrary<T> => fc.constantFrom(...xs);
const q = (s: string): string => JSON.stringify(s);
const list = (xs: readonly string[]): string => `[${xs.map(q).join(', ')}]`;
const someOf = <T>(xs: readonly T[], max = 3): fc.Arbitrary<T[]> => fc.uniqueArray(pick(xs), { minLength: 1, maxLength: max });

// ---------------------------------------------------------------------------------------------
// Policies (text syntax)

const stringMatcherText = (values: readonly string[]): fc.Arbitrary<string> =>
  fc.oneof(
    fc.tuple(pick(['is', 'starts_with', 'ends_with', 'contains']), pick(values)).map(([op, v]) => `${op} ${q(v)}`),
    fc.tuple(pick(['in', 'not_in']), someOf(values)).map(([op, vs]) => `${op} ${list(vs)}`),
  );
const listMatcherText = (values: readonly string[]): fc.Arbitrary<string> => fc.oneof(stringMatcherText(values), pick(values).map((v) => `has ${q(v)}`));

const claimName = pick(CLAIM_NAMES).map((n) => (/^[A-Za-z_][A-Za-z0-9_.-]*$/.test(n) && !['allow', 'deny', 'if', 'and', 'or', 'not', 'true', 'false'].includes(n) ? n : q(n)));

/** One criterion in the text syntax. */
export const criterionText: fc.Arbitrary<string> = fc.oneof(
  pick(['accept', 'reject', 'true', 'false', 'authenticated_user', 'cors_preflight', 'invalid_client_certificate']),
  stringMatcherText(['example.com', 'corp.example', 'Example.com', 'y@example.com', 'CORP.example', 'evil.example@corp.example']).map((m) => `domain ${m}`),
  stringMatcherText([...EMAILS, '@example.com', 'alice', '@corp.example', 'bob@Corp.example']).map((m) => `email ${m}`),
  listMatcherText([...EMAILS, '@corp.example']).map((m) => `claim/email ${m}`),
  stringMatcherText([...USERS, 'u-']).map((m) => `user ${m}`),
  listMatcherText([...GROUPS, 'team-']).map((m) => `groups ${m}`),
  fc.tuple(claimName, listMatcherText(CLAIM_VALUES)).map(([n, m]) => `claim/${n} ${m}`),
  fc.oneof(fc.constant('device approved'), fc.constant('device not_approved'), pick(DEVICES).map((d) => `device is ${q(d.id)}`), pick(DEVICES).map((d) => `device type ${q(d.type)}`)),
  stringMatcherText(['GET', 'POST', 'DELETE', 'OPTIONS', 'get']).map((m) => `http_method ${m}`),
  stringMatcherText(['/api', '/admin', '/public', '/', '/api/v1', 'a.b']).map((m) => `http_path ${m}`),
  fc.oneof(pick(CIDRS).map((c) => `source_ip is ${q(c)}`), fc.tuple(pick(['in', 'not_in']), someOf(CIDRS)).map(([op, cs]) => `source_ip ${op} ${list(cs)}`)),
  fc.oneof(pick(FINGERPRINTS).map((f) => `client_certificate is ${q(f)}`), someOf(FINGERPRINTS).map((fs) => `client_certificate in ${list(fs)}`)),
  fc.oneof(pick(INSTANTS).map((i) => `date after ${q(i)}`), pick(INSTANTS).map((i) => `date before ${q(i)}`), fc.constant(`date after ${q(INSTANTS[0])} before ${q(INSTANTS[1])}`)),
  fc
    .tuple(pick(['after "09:00"', 'before "17:00"', 'after "09:00" before "17:00"', 'after "22:00" before "06:00"']), fc.option(pick(['UTC', 'Europe/Paris', 'America/New_York', 'Asia/Tokyo']), { nil: undefined }))
    .map(([b, tz]) => `time_of_day ${b}${tz === undefined ? '' : ` timezone ${q(tz)}`}`),
  fc
    .tuple(fc.oneof(pick(['mon', 'wed', 'sat']).map((d) => `is ${q(d)}`), fc.tuple(pick(['in', 'not_in']), someOf(['mon', 'tue', 'wed', 'sat', 'sun'])).map(([op, ds]) => `${op} ${list(ds)}`)), fc.option(pick(['UTC', 'Pacific/Kiritimati', 'America/Los_Angeles']), { nil: undefined }))
    .map(([m, tz]) => `day_of_week ${m}${tz === undefined ? '' : ` timezone ${q(tz)}`}`),
);

type ExprTree = { readonly kind: 'leaf'; readonly text: string } | { readonly kind: 'and' | 'or'; readonly args: readonly ExprTree[] } | { readonly kind: 'not'; readonly arg: ExprTree };

const exprTree: fc.Arbitrary<ExprTree> = fc.letrec<{ e: ExprTree }>((tie) => ({
  e: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    criterionText.map((text): ExprTree => ({ kind: 'leaf', text })),
    fc.tuple(pick(['and', 'or'] as const), fc.array(tie('e'), { minLength: 2, maxLength: 3 })).map(([kind, args]): ExprTree => ({ kind, args })),
    tie('e').map((arg): ExprTree => ({ kind: 'not', arg })),
  ),
})).e;

/** Policy text of a condition; compound operands are parenthesized, so precedence never matters. */
function exprText(e: ExprTree): string {
  const operand = (x: ExprTree): string => (x.kind === 'leaf' || x.kind === 'not' ? exprText(x) : `(${exprText(x)})`);
  switch (e.kind) {
    case 'leaf':
      return e.text;
    case 'not':
      return `not ${operand(e.arg)}`;
    default:
      return e.args.map(operand).join(` ${e.kind} `);
  }
}

/** A whole policy in the text syntax: one to three rules, separated by line breaks or `;`. */
export const policyText: fc.Arbitrary<string> = fc
  .tuple(fc.array(fc.tuple(fc.constantFrom('allow', 'allow', 'deny'), exprTree), { minLength: 1, maxLength: 3 }), fc.constantFrom('\n', '; '))
  .map(([rules, sep]) => rules.map(([action, e]) => `${action} if ${exprText(e)}`).join(sep));

// ---------------------------------------------------------------------------------------------
// Configs

/** A generated config: its text plus what the request generator aims at. */
export interface GeneratedConfig {
  readonly text: string;
  /** Paths worth requesting (matcher values and their extensions). */
  readonly paths: readonly string[];
  /** The `from` hosts of its routes (`host` or `host:port`). */
  readonly hosts: readonly string[];
  /** Per route: its host and paths it (or a neighbour) matches, so most requests reach a route. */
  readonly aims: readonly { readonly host: string; readonly paths: readonly string[] }[];
  /** The `host:port` of its `tcp+https` routes (gate configs only), for CONNECT targets. */
  readonly authorities?: readonly string[];
  /** How many routes it has, of both kinds. */
  readonly routeCount?: number;
}

/** `a` with probability `p` (in percent), else undefined. */
const sometimes = <T>(a: fc.Arbitrary<T>, p: number): fc.Arbitrary<T | undefined> => fc.oneof({ weight: 100 - p, arbitrary: fc.constant(undefined) }, { weight: p, arbitrary: a });

const matcher = fc.oneof(
  fc.constant<Record<string, string>>({}),
  pick(PATHS).map((path) => ({ path })),
  pick(PREFIXES).map((prefix) => ({ prefix })),
  pick(REGEXES).map((regex) => ({ regex })),
);

const hostRule = fc.oneof(
  { weight: 3, arbitrary: fc.constant<Record<string, unknown>>({}) },
  { weight: 1, arbitrary: fc.constant({ preserve_host_header: true }) },
  { weight: 1, arbitrary: pick(['literal.internal', 'Literal.Internal:8080']).map((host_rewrite) => ({ host_rewrite })) },
  { weight: 1, arbitrary: pick(HOST_HEADER_NAMES).map((host_rewrite_header) => ({ host_rewrite_header })) },
  {
    weight: 1,
    arbitrary: fc.tuple(pick(HOST_PATTERNS), pick(HOST_SUBSTITUTIONS)).map(([p, s]) => ({ host_path_regex_rewrite_pattern: p, host_path_regex_rewrite_substitution: s })),
  },
);

const pathRewrite = fc.oneof(
  { weight: 3, arbitrary: fc.constant<Record<string, unknown>>({}) },
  { weight: 1, arbitrary: pick(['/', '/v2', '/v2/', '/new/']).map((prefix_rewrite) => ({ prefix_rewrite })) },
  { weight: 1, arbitrary: fc.tuple(pick(REWRITE_PATTERNS), pick(REWRITE_SUBSTITUTIONS)).map(([p, s]) => ({ regex_rewrite_pattern: p, regex_rewrite_substitution: s })) },
);

const upstreams = fc
  .tuple(fc.uniqueArray(fc.tuple(pick(UPSTREAMS), pick(UPSTREAM_PATHS)), { minLength: 1, maxLength: 3, selector: ([u]) => u }), fc.boolean(), fc.array(fc.integer({ min: 1, max: 5 }), { minLength: 3, maxLength: 3 }))
  .map(([ups, weighted, weights]) => {
    const urls = ups.map(([u, p]) => `${u}${p}`);
    const to = weighted ? urls.map((u, i) => `${u},${weights[i]!}`) : urls;
    return to.length === 1 && !weighted ? to[0]! : to;
  });

const redirect = fc
  .record(
    {
      https_redirect: fc.constant(true),
      scheme_redirect: pick(['http', 'https']),
      host_redirect: pick(['b.example.com', 'new.example.com']),
      port_redirect: pick([443, 80, 8443]),
      path_redirect: pick(['/moved', '/']),
      prefix_rewrite: pick(['/new', '/']),
      response_code: pick([301, 302, 307, 308]),
      strip_query: fc.boolean(),
    },
    { requiredKeys: [] },
  )
  .map((r) => {
    const out: Record<string, unknown> = { ...r };
    if (out['https_redirect'] !== undefined && out['scheme_redirect'] !== undefined) delete out['scheme_redirect'];
    if (out['path_redirect'] !== undefined && out['prefix_rewrite'] !== undefined) delete out['prefix_rewrite'];
    const changes = ['https_redirect', 'scheme_redirect', 'host_redirect', 'port_redirect', 'path_redirect', 'prefix_rewrite'].some((k) => out[k] !== undefined) || out['strip_query'] === true;
    if (!changes) out['https_redirect'] = true;
    return out;
  });

/** Who may pass: public, a text policy, or a legacy option (kept apart: public routes take no policy). */
const access = fc.oneof(
  { weight: 2, arbitrary: fc.constant<Record<string, unknown>>({ allow_public_unauthenticated_access: true }) },
  { weight: 6, arbitrary: policyText.map((policy) => ({ policy })) },
  { weight: 1, arbitrary: fc.constant({ allow_any_authenticated_user: true }) },
  { weight: 1, arbitrary: fc.tuple(policyText, fc.boolean()).map(([policy, cors]) => ({ policy, ...(cors ? { cors_allow_preflight: true } : {}) })) },
  { weight: 1, arbitrary: someOf(GROUPS, 2).map((g) => ({ allowed_groups: g })) },
);

const headerEdits = fc.record(
  {
    set_request_headers: fc.dictionary(pick(['X-Set', 'x-custom', 'X-Forwarded-Proto', 'X-Svc-Claim-Email', 'x-forwarded-for']), pick(['v', 'override', '']), { minKeys: 1, maxKeys: 2 }),
    remove_request_headers: someOf(['X-Drop', 'x-custom', 'Cookie', 'X-Forwarded-For', 'authorization'], 2),
    pass_identity_headers: fc.boolean(),
    set_response_headers: fc.dictionary(pick(['X-Frame-Options', 'X-Route', 'Strict-Transport-Security']), pick(['DENY', 'r']), { minKeys: 1, maxKeys: 2 }),
    rewrite_response_headers: fc.array(fc.record({ header: pick(['Location', 'location', 'Set-Cookie', 'Link']), prefix: pick(['http://up1/', '', 'https://']), value: pick(['https://a.example.com/', '/', '']) }), { minLength: 1, maxLength: 2 }),
  },
  { requiredKeys: [] },
);

const route = fc
  .record({
    host: pick(ROUTE_HOSTS),
    matcher,
    redirect: sometimes(redirect, 15),
    to: upstreams,
    rewrite: pathRewrite,
    hostRule,
    access,
    edits: headerEdits,
    named: fc.boolean(),
  })
  .map((r) => {
    const out: Record<string, unknown> = { from: `https://${r.host}`, ...r.matcher };
    if (r.redirect !== undefined) out['redirect'] = r.redirect;
    else Object.assign(out, { to: r.to }, r.rewrite, r.hostRule, r.edits);
    Object.assign(out, r.access);
    return { raw: out, named: r.named };
  });

const settings = fc.record(
  {
    xff_num_trusted_hops: fc.constantFrom(0, 0, 1, 2),
    skip_xff_append: fc.boolean(),
    jwt_claims_headers: someOf(['email', 'groups', 'user', 'team', 'org.unit', 'missing', 'X-Custom:team', 'X-Target:email'], 4),
    forward_auth_url: fc.constant(FORWARD_AUTH_URL),
    set_response_headers: fc.oneof(fc.constant({ disable: true }), fc.constant({ 'X-Global': 'g' }), fc.constant({ disable: true, 'X-Only': 'o' })),
  },
  { requiredKeys: [] },
);

/** Paths each regex of the vocabulary matches (and a near miss or two). */
const REGEX_EXAMPLES: Readonly<Record<string, readonly string[]>> = {
  '/api/.*': ['/api/', '/api/x/y', '/api'],
  '/api/v[0-9]+(/.*)?': ['/api/v1', '/api/v22/x', '/api/vx'],
  '/(admin|public)(/.*)?': ['/admin', '/public/p', '/publicx'],
  '.*public.*': ['/x/public', '/publication', '/pub'],
  '/[a-z]+': ['/abc', '/abc/', '/ABC'],
  '/x/?': ['/x', '/x/', '/x/y'],
  '/a\\.b/.*': ['/a.b/c', '/axb/c'],
  '(/api)?/admin/.*': ['/admin/x', '/api/admin/', '/apiadmin/'],
  '/[^/]*': ['/', '/one', '/one/two'],
  '/API.*': ['/API', '/api'],
};

/** The paths a route makes interesting: its matcher value, extended. */
function pathsOfRoute(r: Readonly<Record<string, unknown>>): string[] {
  const out: string[] = [];
  for (const k of ['path', 'prefix']) {
    const v = r[k];
    if (typeof v !== 'string') continue;
    out.push(v, `${v}x`, `${v.endsWith('/') ? v : `${v}/`}v1/y`);
  }
  if (typeof r['regex'] === 'string') out.push(...(REGEX_EXAMPLES[r['regex']] ?? []));
  if (out.length === 0) out.push('/', '/api/v1/x', '/admin/x', '/public/p');
  return out;
}

/** The paths a config makes interesting: its matcher values, extended, plus a few generic ones. */
function pathsOf(routes: readonly Record<string, unknown>[]): string[] {
  const out = new Set<string>(['/', '/api/v1/x', '/admin/x', '/public/p', '/a.b/c']);
  for (const r of routes) {
    for (const k of ['path', 'prefix']) {
      const v = r[k];
      if (typeof v !== 'string') continue;
      out.add(v);
      out.add(`${v}x`);
      out.add(`${v.endsWith('/') ? v : `${v}/`}v1/y`);
    }
  }
  return [...out];
}

/** A config that compiles cleanly: settings and one to five routes. */
export const configArb: fc.Arbitrary<GeneratedConfig> = fc.tuple(settings, fc.array(route, { minLength: 1, maxLength: 5 })).map(([s, rs]) => {
  const routes = rs.map((r, i) => (r.named ? { name: `route-${i}`, ...r.raw } : r.raw));
  const aims = routes.map((r) => ({ host: String(r['from']).slice('https://'.length), paths: pathsOfRoute(r) }));
  return { text: configText(routes, s), paths: pathsOf(routes), hosts: [...new Set(aims.map((a) => a.host))], aims };
});

/** `tcp+https` route authorities: one shares its host with an `https` route's. */
const TCP_AUTHORITIES = ['db.example.com:5432', 'db.example.com:6379', 'a.example.com:22'] as const;
const TCP_UPSTREAMS = ['tcp://db1:5432', 'tcp://db2:5433', 'tcp://10.0.0.7:6379'] as const;

/** A `tcp+https` route: no path matcher, rewrite or redirect (route-tcp-path-matcher), `tcp` upstreams. */
const tcpRoute = fc
  .record({
    authority: pick(TCP_AUTHORITIES),
    to: fc.uniqueArray(pick(TCP_UPSTREAMS), { minLength: 1, maxLength: 2 }),
    weights: fc.option(fc.array(fc.integer({ min: 1, max: 5 }), { minLength: 2, maxLength: 2 }), { nil: undefined }),
    access,
    named: fc.boolean(),
  })
  .map((r) => {
    const to = r.weights === undefined ? r.to : r.to.map((u, i) => `${u},${r.weights![i]!}`);
    return { raw: { from: `tcp+https://${r.authority}`, to: to.length === 1 ? to[0]! : to, ...r.access }, named: r.named };
  });

/**
 * A config for the gate's differential test: `configArb`'s settings and `https` routes, with zero to
 * three `tcp+https` routes inserted among them, so that CONNECT reaches real routes. (`configArb`
 * itself is unchanged: the decision properties keep their distributions.)
 */
export const gateConfigArb: fc.Arbitrary<GeneratedConfig> = fc
  .tuple(settings, fc.array(route, { minLength: 1, maxLength: 4 }), fc.array(fc.tuple(tcpRoute, fc.nat()), { maxLength: 3 }))
  .map(([s, rs, tcps]) => {
    const all = [...rs];
    for (const [t, at] of tcps) all.splice(at % (all.length + 1), 0, t);
    const routes = all.map((r, i) => (r.named ? { name: `route-${i}`, ...r.raw } : r.raw));
    const http = routes.filter((r) => String(r['from']).startsWith('https://'));
    const aims = http.map((r) => ({ host: String(r['from']).slice('https://'.length), paths: pathsOfRoute(r) }));
    const authorities = [...new Set(routes.filter((r) => !http.includes(r)).map((r) => String(r['from']).slice('tcp+https://'.length)))];
    return { text: configText(routes, s), paths: pathsOf(http), hosts: [...new Set(aims.map((a) => a.host))], aims, authorities, routeCount: routes.length };
  });

// ---------------------------------------------------------------------------------------------
// Identities

const claimValue: fc.Arbitrary<unknown> = fc.oneof(
  pick(CLAIM_VALUES),
  fc.constantFrom(3, 1.5, true, false, null),
  fc.array(fc.oneof(pick(CLAIM_VALUES), fc.constantFrom(3, true, null), fc.constant({ nested: 'x' })), { maxLength: 3 }),
  fc.record({ unit: pick(CLAIM_VALUES), team: fc.array(pick(CLAIM_VALUES), { maxLength: 2 }) }, { requiredKeys: [] }),
);

/** A signed-in user, or null (anonymous) about a third of the time. */
export const identityArb: fc.Arbitrary<Identity | null> = fc.option(
  fc
    .record(
      {
        user: pick(USERS),
        email: pick(EMAILS),
        groups: fc.uniqueArray(pick(GROUPS), { maxLength: 3 }),
        claims: fc.dictionary(pick(['team', 'org', 'org.unit', 'level', 'verified', 'roles', 'odd name', 'sub', 'email']), claimValue, { maxKeys: 4 }),
        device: pick(DEVICES),
      },
      { requiredKeys: ['user', 'groups', 'claims'] },
    )
    .map(({ device, email, ...rest }): Identity => ({ ...rest, ...(email !== undefined ? { email } : {}), ...(device !== undefined ? { device: { ...device } } : {}) })),
  { nil: null, freq: 3 },
);

// ---------------------------------------------------------------------------------------------
// Requests

/** Targets that docs/security.md S06-S10 are about, plus encodings the canonical request must handle. */
const TRICKY_TARGETS = [
  '/public/../admin', '/public/%2e%2e/admin', '/./admin', '//admin', '/admin//config', '/admin%2Fsecret', '/admin%5csecret', '/admin%00',
  '/admin%3b', '/admin%23', '/user/profile#x', '/admin?x=/public', '/%61pi/v1', '/api/%7Euser', '/api/%zz', '/api/%C3%A9', '/.svc/sign_in',
  '/.svc', '/.well-known/svc/jwks.json', '/x/%2E%2E/.svc/y', '*', '/a b', '/api/..', '/api/.', '/A%2fB',
] as const;

const QUERIES = ['', '', '?a=1', '?next=/admin&x=%2F', '?', '?q=/../x'] as const;

/** A host the config answers, spelled as a client might: with the default port, in upper case. */
const spelledHost = (cfg: GeneratedConfig): fc.Arbitrary<string> =>
  fc.tuple(pick(cfg.hosts), fc.constantFrom('as-is', 'as-is', 'as-is', 'upper', 'port-443', 'port-80')).map(([h, how]) => {
    if (how === 'upper') return h.toUpperCase();
    if (how.startsWith('port-') && !h.includes(':')) return `${h}:${how.slice(5)}`;
    return h;
  });

/** The Host header (or none, or two), aimed at the config's hosts in various spellings. */
const hostHeader = (cfg: GeneratedConfig): fc.Arbitrary<string[]> =>
  fc.oneof(
    { weight: 12, arbitrary: spelledHost(cfg).map((h) => [h]) },
    { weight: 2, arbitrary: pick([...ROUTE_HOSTS, 'c.example.com', 'unknown.example.com']).map((h) => [h]) },
    { weight: 1, arbitrary: pick([AUTH_HOST, `${AUTH_HOST}:443`, 'fwd.example.com']).map((h) => [h]) },
    { weight: 1, arbitrary: fc.constantFrom<string[]>([], ['a.example.com', 'a.example.com'], ['a.example.com', 'b.example.com'], ['a.example.com:99999'], ['user@a.example.com']) },
  );

const VALID_XFF = ['10.0.0.1', '192.0.2.77', '2001:db8::1', '::ffff:10.1.1.1', ' 198.51.100.2 ', '::ffff:a00:1'] as const;
const INVALID_XFF = ['garbage', '', 'unknown', '10.0.0.1:80', 'fe80::1%eth0', '[2001:db8::1]'] as const;
const xffValue = fc.oneof(
  { weight: 5, arbitrary: fc.array(pick(VALID_XFF), { minLength: 1, maxLength: 3 }) },
  { weight: 1, arbitrary: fc.array(fc.oneof(pick(VALID_XFF), pick(INVALID_XFF)), { minLength: 1, maxLength: 3 }) },
).map((xs) => xs.join(','));

const extraHeaders = fc.record(
  {
    accept: pick(['text/html,application/xhtml+xml', 'application/json', '*/*', 'TEXT/HTML; q=0.9', 'text/htmlx']).map((v) => [v]),
    'x-forwarded-proto': pick(['https', 'http']).map((v) => [v]),
    'x-forwarded-host': fc.constant(['evil.example']),
    'x-forwarded-uri': fc.constant(['/public']),
    forwarded: fc.constant(['for=1.2.3.4;proto=https']),
    'x-real-ip': fc.constant(['1.2.3.4']),
    x_forwarded_for: fc.constant(['6.6.6.6']),
    'x-svc-jwt-assertion': fc.constant(['forged']),
    'x-svc-claim-email': fc.constant(['admin@example.com']),
    x_svc_claim_groups: fc.constant(['admins']),
    'x-envoy-original-path': fc.constant(['/admin']),
    'remote-user': fc.constant(['admin']),
    connection: pick(['keep-alive', 'close, X-Custom', 'Upgrade, HTTP2-Settings', 'x-forwarded-for', 'X-Forwarded-Proto, x-real-ip', 'cookie']).map((v) => [v]),
    upgrade: fc.constant(['h2c']),
    'http2-settings': fc.constant(['AAMAAABkAAQAAP__']),
    te: fc.constant(['trailers']),
    'keep-alive': fc.constant(['timeout=5']),
    cookie: fc.constantFrom(['a=1'], ['a=1', 'b=2']),
    origin: fc.constant(['https://other.example']),
    'access-control-request-method': fc.constant(['PUT']),
    'x-target': fc.constantFrom(['t.internal:9000'], ['bad host'], ['t1', 't2'], ['T.Internal'], ['t.internal:0'], ['[2001:db8::1]:8080'], ['']),
    'x-custom': fc.constantFrom(['c'], ['c1', 'c2']),
    'x-drop': fc.constant(['d']),
    authorization: fc.constant(['Bearer x']),
  },
  { requiredKeys: [] },
);

/** Turns a path into a target: a query, sometimes absolute-form with `host` (or another) as authority. */
const targetOf = (path: fc.Arbitrary<string>, host: fc.Arbitrary<string>): fc.Arbitrary<string> =>
  fc
    .tuple(path, pick(QUERIES), sometimes(fc.tuple(pick(['https', 'http', 'HTTPS']), fc.oneof({ weight: 3, arbitrary: host }, { weight: 1, arbitrary: pick(['auth.example.com', 'unknown.example.com']) })), 8))
    .map(([p, query, abs]) => (abs !== undefined && p.startsWith('/') ? `${abs[0]}://${abs[1]}${p}${query}` : `${p}${query}`));

/** Host headers and targets: mostly aimed at one route (its host, its paths), else anywhere. */
const hostAndTarget = (cfg: GeneratedConfig): fc.Arbitrary<{ host: string[]; target: string }> =>
  fc.oneof(
    {
      weight: 4,
      arbitrary: pick(cfg.aims).chain((aim) => {
        const host = spelledHost({ ...cfg, hosts: [aim.host] });
        return fc.record({ host: host.map((h) => [h]), target: targetOf(fc.oneof({ weight: 5, arbitrary: pick(aim.paths) }, { weight: 1, arbitrary: pick(TRICKY_TARGETS) }), host) });
      }),
    },
    { weight: 1, arbitrary: fc.record({ host: hostHeader(cfg), target: targetOf(fc.oneof(pick(cfg.paths), pick(TRICKY_TARGETS)), spelledHost(cfg)) }) },
  );

/** A request aimed at `cfg`. */
export const requestFor = (cfg: GeneratedConfig): fc.Arbitrary<DecisionRequest> =>
  fc
    .record(
      {
        method: fc.constantFrom('GET', 'GET', 'POST', 'DELETE', 'OPTIONS', 'PUT'),
        aimed: hostAndTarget(cfg),
        scheme: fc.constantFrom<'http' | 'https'>('https', 'https', 'http'),
        headers: extraHeaders,
        xff: sometimes(fc.array(xffValue, { minLength: 1, maxLength: 2 }), 80),
        peer: pick(PEERS),
        nowMs: fc.integer({ min: NOW_MIN_MS, max: NOW_MAX_MS }),
        clientCertificate: fc.record({ fingerprint: pick(FINGERPRINTS), valid: fc.boolean() }),
        upstreamSample: fc.oneof(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), fc.constantFrom(0, 0.25, 0.5, 1 / 3, 0.75, 0.999999)),
      },
      { requiredKeys: ['method', 'aimed', 'scheme', 'headers', 'xff', 'peer', 'nowMs'] },
    )
    .map(({ aimed: { host, target }, headers, xff, ...rest }): DecisionRequest => {
      const all: Record<string, readonly string[]> = { ...(headers as Record<string, readonly string[]>) };
      if (xff !== undefined) all['x-forwarded-for'] = xff;
      if (host.length > 0) all['host'] = host;
      return { ...rest, target, headers: all as RequestHeaders };
    });

/** One config, several requests against it (compiling dominates the cost), and an identity each. */
export interface Scenario {
  readonly config: GeneratedConfig;
  readonly cases: readonly { readonly request: DecisionRequest; readonly identity: Identity | null }[];
}

/** A config with one to `maxRequests` requests aimed at it. */
export const scenarioArb = (maxRequests = 6): fc.Arbitrary<Scenario> =>
  configArb.chain((config) =>
    fc.array(fc.record({ request: requestFor(config), identity: identityArb }), { minLength: 1, maxLength: maxRequests }).map((cases) => ({ config, cases })),
  );

/**
 * Upstream response headers for the response-header property: names in mixed case but unique
 * case-insensitively, as an HTTP client delivers them (two spellings of one name are one header).
 */
export const responseHeadersArb: fc.Arbitrary<Record<string, string | string[]>> = fc
  .uniqueArray(
    fc.tuple(
      pick(['Location', 'location', 'Set-Cookie', 'Link', 'X-Frame-Options', 'content-type', 'X-Route', 'strict-transport-security']),
      fc.oneof(pick(['http://up1/a', 'https://x/', 'text/plain', 'SAMEORIGIN', '']), fc.array(pick(['http://up1/b', 'c=1', '</x>; rel=next']), { minLength: 1, maxLength: 2 })),
    ),
    { maxLength: 4, selector: ([name]) => name.toLowerCase() },
  )
  .map((entries) => Object.fromEntries(entries));

// ---------------------------------------------------------------------------------------------
// Gate entries (rule book §9)

/** CONNECT targets that are not `host:port` (or not quite). */
const MALFORMED_AUTHORITIES = [
  'db.example.com', 'db.example.com:0', 'db.example.com:99999', ':5432', 'user@db.example.com:5432', '/', 'db.example.com:5432/x',
  'db_x.example.com:5432', '-db.example.com:5432', 'db.example.com:054320', 'db.example.com:+22', '[::1]', 'https://db.example.com:5432', 'b.example.com:',
] as const;
/** Well-formed authorities no route answers (or an `https` route's host, which CONNECT never reaches). */
const OTHER_AUTHORITIES = ['a.example.com:443', 'b.example.com:443', 'unknown.example.com:5432', '[::1]:5432', 'auth.example.com:443', 'fwd.example.com:443', 'db.example.com:05432'] as const;

/** Certificate names a connection may have been served: wildcards, route hosts, svc's hosts, strangers. */
const CERTIFICATE_NAMES = ['*.example.com', 'a.example.com', 'b.example.com', 'c.example.com', 'db.example.com', 'auth.example.com', 'fwd.example.com', '*.a.example.com', 'example.com', 'other.test', 'B.Example.com'] as const;

/** A CONNECT target aimed at `cfg`'s `tcp+https` routes, else anywhere, sometimes malformed. */
const authorityFor = (cfg: GeneratedConfig): fc.Arbitrary<string> => {
  const own = cfg.authorities ?? [];
  return fc.oneof(
    { weight: own.length > 0 ? 6 : 0, arbitrary: own.length > 0 ? fc.tuple(pick(own), fc.constantFrom('as-is', 'as-is', 'upper')).map(([a, how]) => (how === 'upper' ? a.toUpperCase() : a)) : fc.constant('db.example.com:5432') },
    { weight: 2, arbitrary: pick(OTHER_AUTHORITIES) },
    { weight: 2, arbitrary: pick(MALFORMED_AUTHORITIES) },
  );
};

/** The listener's view of the connection: plain HTTP now and then, else TLS with some certificate. */
const connectionFor = (cfg: GeneratedConfig): fc.Arbitrary<GateConnectionData> => {
  const scopes = [...Array(cfg.routeCount ?? cfg.aims.length).keys()];
  const tls = fc.record(
    {
      covers: fc.oneof(
        { weight: 3, arbitrary: fc.constant(['*.example.com']) },
        { weight: 3, arbitrary: fc.uniqueArray(pick(CERTIFICATE_NAMES), { minLength: 1, maxLength: 3 }) },
        { weight: 1, arbitrary: fc.constant([...new Set(cfg.hosts.map((h) => h.split(':')[0]!))]) },
      ),
      clientCertificate: fc.record({ fingerprint: pick(FINGERPRINTS), valid: fc.boolean() }),
      global: fc.boolean(),
      routes: fc.subarray(scopes),
    },
    { requiredKeys: ['covers', 'global', 'routes'] },
  );
  return fc.oneof(
    { weight: 1, arbitrary: fc.constant<GateConnectionData>({ tls: null }) },
    {
      weight: 4,
      arbitrary: tls.map(({ covers, clientCertificate, global, routes }): GateConnectionData => ({
        tls: { covers, ...(clientCertificate !== undefined ? { clientCertificate } : {}), requires: global ? ['forward_auth', ...scopes] : routes },
      })),
    },
  );
};

/** One case at the door: an entry (its request and how it came in), its connection, its session. */
export interface GateCase {
  readonly entry: GateEntry;
  readonly connection: GateConnectionData;
  readonly identity: Identity | null;
}

/** An entry aimed at `cfg` on `connection`: a request, an upgrade (websocket) or a CONNECT. */
const gateCaseFor = (cfg: GeneratedConfig): fc.Arbitrary<GateCase> =>
  fc
    .record({
      kind: fc.constantFrom<GateEntry['kind']>('request', 'request', 'request', 'request', 'upgrade', 'upgrade', 'connect', 'connect', 'connect'),
      httpVersion: fc.constantFrom<GateEntry['httpVersion']>('1.1', '1.1', '1.1', '1.1', '1.1', '2.0', '2.0', '2.0', '1.0'),
      request: requestFor(cfg),
      authority: authorityFor(cfg),
      connection: connectionFor(cfg),
      identity: identityArb,
    })
    .map(({ kind, httpVersion, request, authority, connection, identity }): GateCase => {
      // The listener's scheme: `http` exactly on a plain-HTTP listener. The certificate is the connection's.
      const { clientCertificate: _certificate, ...rest } = request;
      const base = { ...rest, scheme: connection.tls === null ? ('http' as const) : ('https' as const) };
      if (kind === 'connect') return { entry: { ...base, kind, httpVersion, method: 'CONNECT', target: authority }, connection, identity };
      const headers = kind === 'upgrade' ? { ...base.headers, upgrade: ['websocket'], connection: ['Upgrade'] } : base.headers;
      return { entry: { ...base, kind, httpVersion, ...(kind === 'upgrade' ? { method: 'GET' } : {}), headers }, connection, identity };
    });


/** One gate config, several entries at its door. */
export interface GateScenario {
  readonly config: GeneratedConfig;
  readonly cases: readonly GateCase[];
}

/** A gate config (`gateConfigArb`) with one to `maxRequests` entries. */
export const gateScenarioArb = (maxRequests = 6): fc.Arbitrary<GateScenario> =>
  gateConfigArb.chain((config) => fc.array(gateCaseFor(config), { minLength: 1, maxLength: maxRequests }).map((cases) => ({ config, cases })));
