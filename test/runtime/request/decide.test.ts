/**
 * The decision core end to end over compiled configs: route choice (host table, order, ports),
 * svc's own endpoints, the upstream request (path join, rewrites, Host, headers) and the answers
 * for anonymous and denied requests. The rule book is docs/decisions.md.
 */
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { decide } from '../../../runtime/request/decide.ts';
import type { Decision, DecisionRequest, Identity } from '../../../runtime/core/types.ts';
import { buildIndex, type PlanIndex } from '../../../runtime/plan/index.ts';
import { BASE_SETTINGS, compileText } from '../../support/compile-text.ts';
import { withClaimHeaders } from '../../support/claim-headers.ts';

function indexOf(routes: unknown[], settings: Record<string, unknown> = {}): PlanIndex {
  const res = compileText(stringify({ ...BASE_SETTINGS, ...settings, routes }));
  if (!res.plan) throw new Error(res.diagnostics.map((d) => `${d.code} ${d.message}`).join('\n'));
  return buildIndex(res.plan.body);
}

const alice: Identity = { user: 'alice', email: 'alice@example.com', groups: ['staff'], claims: { dept: 'eng' } };

function request(url: string, headers: Record<string, string | string[]> = {}, over: Partial<DecisionRequest> = {}): DecisionRequest {
  const u = /^(https?):\/\/([^/]+)(.*)$/.exec(url)!;
  const h: Record<string, string[]> = { host: [u[2]!] };
  for (const [k, v] of Object.entries(headers)) h[k.toLowerCase()] = Array.isArray(v) ? v : [v];
  return { method: 'GET', target: u[3] || '/', scheme: u[1] as 'http' | 'https', headers: h, peer: '192.0.2.10', nowMs: 0, ...over };
}

function upstream(d: Decision) {
  if (d.outcome !== 'allow') throw new Error(`expected allow, got ${JSON.stringify(d)}`);
  return d.upstream;
}

const open = { allow_public_unauthenticated_access: true };

describe('route matching', () => {
  const ix = indexOf([
    { name: 'exact', from: 'https://a.example.com', path: '/x', to: 'http://exact', ...open },
    { name: 'prefix', from: 'https://a.example.com', prefix: '/x', to: 'http://prefix', ...open },
    { name: 'regex', from: 'https://a.example.com', regex: '/r/[0-9]+', to: 'http://regex', ...open },
    { name: 'port', from: 'https://a.example.com:8443', to: 'http://port', ...open },
    { name: 'tcp', from: 'tcp+https://a.example.com:6379', to: 'tcp://redis:6379', ...open },
    { name: 'default-port', from: 'https://b.example.com:443', to: 'http://b', ...open },
  ]);
  const routeOf = (url: string) => {
    const d = decide(ix, request(url), null);
    return d.outcome === 'allow' ? d.route.name : d.outcome;
  };

  it('takes the first matching route in listed order', () => {
    expect(routeOf('https://a.example.com/x')).toBe('exact');
    expect(routeOf('https://a.example.com/xy')).toBe('prefix');
    expect(routeOf('https://a.example.com/x/../x')).toBe('exact');
  });

  it('anchors regexes to the whole path and never looks at the query (S10)', () => {
    expect(routeOf('https://a.example.com/r/12')).toBe('regex');
    expect(routeOf('https://a.example.com/r/12/more')).toBe('not_found');
    expect(routeOf('https://a.example.com/admin?x=/r/12')).toBe('not_found');
  });

  it('a default port answers with and without the port; other ports only exactly', () => {
    expect(routeOf('https://A.Example.com:443/x')).toBe('exact');
    expect(routeOf('http://a.example.com:443/x')).toBe('exact');
    expect(routeOf('https://b.example.com/')).toBe('default-port');
    expect(routeOf('https://a.example.com:8443/anything')).toBe('port');
    expect(routeOf('https://a.example.com:9443/x')).toBe('not_found');
  });

  it('tcp+https routes never answer an ordinary request', () => {
    expect(routeOf('https://a.example.com:6379/')).toBe('not_found');
  });

  it("svc's own endpoints come before routes", () => {
    expect(decide(ix, request('https://a.example.com/.svc/signout/'), null)).toMatchObject({ outcome: 'internal', endpoint: { service: 'proxy', path: '/.svc/signout/' } });
    expect(decide(ix, request('https://a.example.com/.well-known/svc/jwks.json'), null)).toMatchObject({ outcome: 'internal' });
    expect(decide(ix, request('https://auth.example.com/oauth2/callback'), null)).toMatchObject({ outcome: 'internal', endpoint: { service: 'authenticate' } });
    expect(routeOf('https://a.example.com/.svcx')).toBe('not_found');
  });

  it('refuses duplicate Host headers and malformed targets with 400', () => {
    expect(decide(ix, request('https://a.example.com/x', { host: ['a.example.com', 'evil.example'] }), null)).toMatchObject({ status: 400, problem: 'host-duplicate' });
    expect(decide(ix, request('https://a.example.com/x%2Fy'), null)).toMatchObject({ status: 400, problem: 'target-forbidden-escape' });
  });
});

describe('answers to anonymous and denied requests', () => {
  const ix = indexOf([{ from: 'https://app.example.com', to: 'http://up', policy: 'allow if domain is "example.com"' }]);
  it('sends a browser to sign in with a return URL built from the canonical request', () => {
    const d = decide(ix, request('https://app.example.com/a/../b?q=1', { accept: 'text/html,*/*' }), null);
    expect(d).toMatchObject({ outcome: 'unauthenticated', status: 302 });
    expect(d.outcome === 'unauthenticated' && d.location).toBe('https://auth.example.com/.svc/sign_in?svc_redirect_uri=' + encodeURIComponent('https://app.example.com/b?q=1'));
  });
  it('answers an API client with 401 and no location', () => {
    expect(decide(ix, request('https://app.example.com/', { accept: 'application/json' }), null)).toMatchObject({ outcome: 'unauthenticated', status: 401, location: null });
  });
  it('denies a signed-in user the policy does not allow', () => {
    expect(decide(ix, request('https://app.example.com/'), { ...alice, email: 'eve@evil.example' })).toMatchObject({ outcome: 'deny', status: 403, reasons: ['domain-unauthorized'] });
  });
  it('leaves out the reasons of an allowed request only when asked to', () => {
    expect(decide(ix, request('https://app.example.com/'), alice)).toMatchObject({ reasons: ['domain-ok'] });
    expect(decide(ix, request('https://app.example.com/'), alice, { reasons: false })).toMatchObject({ outcome: 'allow', reasons: [] });
  });
});

describe('the upstream path', () => {
  const urlOf = (route: Record<string, unknown>, url: string) => upstream(decide(indexOf([{ from: 'https://a.example.com', ...open, ...route }]), request(url), null)).url;

  it('joins the `to` path literally (spec 2.7 rule 2)', () => {
    expect(urlOf({ to: 'http://up/anything' }, 'https://a.example.com/foo')).toBe('http://up/anythingfoo');
    expect(urlOf({ to: 'http://up/anything/' }, 'https://a.example.com/foo')).toBe('http://up/anything/foo');
    expect(urlOf({ to: 'http://up' }, 'https://a.example.com/foo?x=1')).toBe('http://up/foo?x=1');
    expect(urlOf({ to: 'https://up:8443' }, 'https://a.example.com/')).toBe('https://up:8443/');
  });

  it('forwards exactly the path that was matched (S06, S08)', () => {
    expect(urlOf({ to: 'http://up', prefix: '/' }, 'https://a.example.com/public/%2e%2e/admin')).toBe('http://up/admin');
    expect(urlOf({ to: 'http://up', prefix: '/public/' }, 'https://a.example.com//public///a/./b')).toBe('http://up/public/a/b');
  });

  it('prefix_rewrite replaces the matched part', () => {
    expect(urlOf({ to: 'http://up', prefix: '/api/', prefix_rewrite: '/v2/' }, 'https://a.example.com/api/users')).toBe('http://up/v2/users');
    expect(urlOf({ to: 'http://up', path: '/old', prefix_rewrite: '/new' }, 'https://a.example.com/old')).toBe('http://up/new');
    expect(urlOf({ to: 'http://up', prefix_rewrite: '/root/' }, 'https://a.example.com/x')).toBe('http://up/root/x');
  });

  it('regex_rewrite replaces every match, with \\1 groups', () => {
    expect(urlOf({ to: 'http://up', regex_rewrite_pattern: '^/service/([^/]+)(/.*)$', regex_rewrite_substitution: '\\2/instance/\\1' }, 'https://a.example.com/service/foo/v1/api')).toBe('http://up/v1/api/instance/foo');
    expect(urlOf({ to: 'http://up', regex_rewrite_pattern: 'a', regex_rewrite_substitution: 'b' }, 'https://a.example.com/banana')).toBe('http://up/bbnbnb');
  });

  it('chooses the upstream by weight from the sample', () => {
    const ix = indexOf([{ from: 'https://a.example.com', to: ['http://one,1', 'http://two,3'], ...open }]);
    const pick = (s: number) => upstream(decide(ix, request('https://a.example.com/', {}, { upstreamSample: s }), null)).host;
    expect([pick(0), pick(0.24), pick(0.25), pick(0.99)]).toEqual(['one', 'one', 'two', 'two']);
  });
});

describe('the upstream Host', () => {
  const hostOf = (route: Record<string, unknown>, url: string, headers: Record<string, string | string[]> = {}) =>
    upstream(decide(indexOf([{ from: 'https://a.example.com', to: 'http://up:8080', ...open, ...route }]), request(url, headers), null)).host;

  it('defaults to the upstream host with its port', () => expect(hostOf({}, 'https://a.example.com/')).toBe('up:8080'));
  it('preserve_host_header keeps the canonical host', () => expect(hostOf({ preserve_host_header: true }, 'https://A.EXAMPLE.com:443/')).toBe('a.example.com'));
  it('host_rewrite sets a literal', () => expect(hostOf({ host_rewrite: 'internal.example' }, 'https://a.example.com/')).toBe('internal.example'));
  it('host_rewrite_header takes one valid value, else the upstream host', () => {
    expect(hostOf({ host_rewrite_header: 'X-Target' }, 'https://a.example.com/', { 'x-target': 'b.internal' })).toBe('b.internal');
    expect(hostOf({ host_rewrite_header: 'X-Target' }, 'https://a.example.com/', { 'x-target': ['b.internal', 'c.internal'] })).toBe('up:8080');
    expect(hostOf({ host_rewrite_header: 'X-Target' }, 'https://a.example.com/', { 'x-target': 'evil/../x' })).toBe('up:8080');
  });
  it('host_path_regex_rewrite derives the host from the path', () => {
    const route = { host_path_regex_rewrite_pattern: '^/([a-z]+)/.*$', host_path_regex_rewrite_substitution: '\\1.internal' };
    expect(hostOf(route, 'https://a.example.com/blue/x')).toBe('blue.internal');
    expect(hostOf(route, 'https://a.example.com/')).toBe('up:8080');
  });
});

describe('the upstream headers', () => {
  // With the claim headers the identity step adds after the decision (test/support/claim-headers.ts).
  const headersOf = (route: Record<string, unknown>, headers: Record<string, string | string[]>, settings: Record<string, unknown> = {}, identity: Identity | null = null, peer = '192.0.2.10') => {
    const ix = indexOf([{ from: 'https://a.example.com', to: 'http://up', ...open, ...route }], settings);
    return upstream(withClaimHeaders(ix, decide(ix, request('https://a.example.com/', headers, { peer }), identity), identity)).headers;
  };

  it('drops hop-by-hop headers and the ones Connection names', () => {
    const h = headersOf({}, { connection: 'keep-alive, X-Secret', 'x-secret': '1', 'keep-alive': '5', te: 'trailers', upgrade: 'h2c', 'http2-settings': 'AAA', accept: 'a' });
    expect(Object.keys(h).sort()).toEqual(['accept', 'host', 'x-forwarded-for', 'x-forwarded-proto']);
  });

  it('reads Connection: keep-alive or close alone as the full list does (a header named close is dropped)', () => {
    for (const connection of ['keep-alive', ' Keep-Alive\t', 'close', 'CLOSE ', 'close, x-secret', 'keep-alive\u00a0']) {
      const h = headersOf({}, { connection, close: '1', 'keep-alive': '5', 'x-secret': '1', accept: 'a' });
      const listed = connection.split(',').map((t) => t.trim().toLowerCase());
      expect(Object.keys(h).sort(), connection).toEqual(['accept', 'host', 'x-forwarded-for', 'x-forwarded-proto', ...['close', 'x-secret'].filter((n) => !listed.includes(n))].sort());
    }
  });

  it('strips client identity and internal headers, whatever their spelling (S16, S18)', () => {
    const h = headersOf({}, { 'x-svc-jwt-assertion': 'forged', 'x_svc_claim_email': 'ceo@example.com', 'x-envoy-original-path': '/admin', 'remote-user': 'admin' }, { jwt_claims_headers: { 'Remote-User': 'email' } });
    expect(h).toEqual({ host: 'up', 'x-forwarded-for': '192.0.2.10', 'x-forwarded-proto': 'https' });
  });

  it('ignores X-Forwarded-* from an untrusted client (S13, S14)', () => {
    const h = headersOf({}, { 'x-forwarded-for': '1.2.3.4', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'evil.example', forwarded: 'for=1.2.3.4', 'x-real-ip': '1.2.3.4' }, {}, null, '::ffff:198.51.100.7');
    expect(h).toEqual({ host: 'up', 'x-forwarded-for': '198.51.100.7', 'x-forwarded-proto': 'https' });
  });

  it('keeps the trusted tail of X-Forwarded-For with trusted hops', () => {
    const h = headersOf({}, { 'x-forwarded-for': ['6.6.6.6, 1.2.3.4', '10.0.0.2'], 'x-forwarded-proto': 'http' }, { xff_num_trusted_hops: 2 });
    expect(h['x-forwarded-for']).toBe('1.2.3.4, 10.0.0.2, 192.0.2.10');
    expect(h['x-forwarded-proto']).toBe('http');
    expect(headersOf({}, {}, { skip_xff_append: true })['x-forwarded-for']).toBeUndefined();
  });

  it('refuses an unparsable client address with trusted hops (S15)', () => {
    const ix = indexOf([{ from: 'https://a.example.com', to: 'http://up', policy: 'allow if source_ip not_in ["10.0.0.0/8"]' }], { xff_num_trusted_hops: 1 });
    expect(decide(ix, request('https://a.example.com/', { 'x-forwarded-for': 'a' }), alice)).toMatchObject({ status: 400, problem: 'client-address-invalid' });
    expect(decide(ix, request('https://a.example.com/'), alice)).toMatchObject({ status: 400, problem: 'client-address-invalid' });
    expect(decide(ix, request('https://a.example.com/', { 'x-forwarded-for': '10.1.1.1' }), alice)).toMatchObject({ outcome: 'deny' });
  });

  it('applies remove_request_headers, then set_request_headers, then identity headers', () => {
    const h = headersOf(
      { remove_request_headers: ['Cookie'], set_request_headers: { 'X-App': 'on', 'X-Dept': 'forged' }, pass_identity_headers: true },
      { cookie: ['a=1', 'b=2'] },
      { jwt_claims_headers: { 'X-Dept': 'dept', 'X-Groups': 'groups', 'X-Email': 'email', 'X-None': 'nope' } },
      alice,
    );
    expect(h).toMatchObject({ 'x-app': 'on', 'x-dept': 'eng', 'x-groups': 'staff', 'x-email': 'alice@example.com' });
    expect(h).not.toHaveProperty('cookie');
    expect(h).not.toHaveProperty('x-none');
  });

  it('joins repeated values, cookies with a semicolon', () => {
    expect(headersOf({}, { cookie: ['a=1', 'b=2'], accept: ['a', 'b'] })).toMatchObject({ cookie: 'a=1; b=2', accept: 'a, b' });
  });
});

describe('redirect routes', () => {
  const locationOf = (redirect: Record<string, unknown>, url: string, extra: Record<string, unknown> = {}) => {
    const d = decide(indexOf([{ from: 'https://a.example.com', prefix: '/old/', redirect, ...open, ...extra }]), request(url), null);
    return d.outcome === 'redirect' ? `${d.status} ${d.location}` : d.outcome;
  };
  it('replaces what the route asks for and keeps the rest', () => {
    expect(locationOf({ host_redirect: 'b.example.com' }, 'https://a.example.com/old/x?q=1')).toBe('301 https://b.example.com/old/x?q=1');
    expect(locationOf({ prefix_rewrite: '/new/', strip_query: true, response_code: 308 }, 'https://a.example.com/old/x?q=1')).toBe('308 https://a.example.com/new/x');
    expect(locationOf({ path_redirect: '/landing', port_redirect: 8443 }, 'https://a.example.com/old/x')).toBe('301 https://a.example.com:8443/landing');
    expect(locationOf({ scheme_redirect: 'http', port_redirect: 80 }, 'https://a.example.com/old/')).toBe('301 http://a.example.com/old/');
  });
  it('checks the policy before redirecting', () => {
    const d = decide(indexOf([{ from: 'https://a.example.com', redirect: { host_redirect: 'b.example.com' }, policy: 'allow if authenticated_user' }]), request('https://a.example.com/'), null);
    expect(d.outcome).toBe('unauthenticated');
  });
});

describe('S07: encoded separators are refused unless the route opts in', () => {
  const ix = indexOf([
    { name: 'raw', from: 'https://a.example.com', prefix: '/files/', to: 'http://store', allow_encoded_path_characters: true, allow_public_unauthenticated_access: true },
    { name: 'plain', from: 'https://a.example.com', to: 'http://app', allow_public_unauthenticated_access: true },
    { name: 'other', from: 'https://b.example.com', to: 'http://b', allow_public_unauthenticated_access: true },
  ]);
  it('matches and forwards the raw form on an opted-in route', () => {
    const d = decide(ix, request('https://a.example.com/files/a%2fb/../c%3B?x'), null);
    expect(d).toMatchObject({ outcome: 'allow', route: { name: 'raw' } });
    expect(upstream(d).url).toBe('http://store/files/c%3B?x');
    expect(upstream(decide(ix, request('https://a.example.com/files/dir%2F..%2Fsecret'), null)).url).toBe('http://store/files/dir%2F..%2Fsecret');
  });
  it('still refuses the target for a route, endpoint or host without the option', () => {
    for (const url of ['https://a.example.com/admin%2Fsecret', 'https://a.example.com/.svc/%2F', 'https://b.example.com/files/a%2Fb', 'https://a.example.com/fil%2Fes/x']) {
      expect(decide(ix, request(url), null), url).toMatchObject({ status: 400, problem: 'target-forbidden-escape' });
    }
  });
});

describe('regex literal prefixes (a precheck, never a change of meaning)', () => {
  it('extracts only text every whole match must start with', async () => {
    const { literalPrefix } = await import('../../../runtime/plan/rewrite.ts');
    expect(literalPrefix('/items/[0-9]+')).toBe('/items/');
    expect(literalPrefix('^/a\\.b/c')).toBe('/a.b/c');
    expect(literalPrefix('/ab*')).toBe('/a');
    expect(literalPrefix('/a|/b')).toBe('');
    expect(literalPrefix('(?i)/admin')).toBe('');
    expect(literalPrefix('/x{2}')).toBe('/');
    expect(literalPrefix('.*')).toBe('');
  });
});
