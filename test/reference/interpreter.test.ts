/**
 * The reference interpreter against hand-computed answers, a handful per section of
 * docs/decisions.md, so the reference is trusted on its own before it judges the runtime.
 */
import { describe, expect, it } from 'vitest';
import type { Route } from '../../compiler/plan/types.ts';
import type { Decision, Identity } from '../../runtime/core/types.ts';
import { decideReference, responseHeadersReference, substituteAll } from './interpreter.ts';
import { compileBody, configText, makeRequest } from './support.ts';

const alice: Identity = { user: 'u-alice', email: 'alice@example.com', groups: ['admins'], claims: { team: ['blue', 'red'], org: { unit: 'eng' } } };

const ANY_USER = 'allow if authenticated_user';

function upstreamOf(d: Decision) {
  if (d.outcome !== 'allow') throw new Error(`expected allow, got ${JSON.stringify(d)}`);
  return d.upstream;
}

describe('§1 canonical request', () => {
  const body = compileBody(configText([{ from: 'https://a.example.com', to: 'http://up', prefix: '/public', allow_public_unauthenticated_access: true }]));

  it('refuses a second Host header', () => {
    const d = decideReference(body, makeRequest({ headers: { host: ['a.example.com', 'b.example.com'] } }), null);
    expect(d).toEqual({ outcome: 'bad_request', status: 400, problem: 'host-duplicate', reasons: ['host-duplicate'] });
  });

  it('refuses encoded slashes and raw fragments with their reason', () => {
    expect(decideReference(body, makeRequest({ host: 'a.example.com', target: '/public%2F..%2Fadmin' }), null)).toMatchObject({ status: 400, problem: 'target-forbidden-escape' });
    expect(decideReference(body, makeRequest({ host: 'a.example.com', target: '/public#x' }), null)).toMatchObject({ status: 400, problem: 'target-fragment' });
  });

  it('matches and forwards the normalized path (dot segments, %2e, merged slashes)', () => {
    const d = decideReference(body, makeRequest({ host: 'A.Example.COM:443', target: '/x/%2e%2e//public/./p?q=/../a' }), null);
    expect(upstreamOf(d).url).toBe('http://up/public/p?q=/../a');
    expect(decideReference(body, makeRequest({ host: 'a.example.com', target: '/public/../admin' }), null)).toMatchObject({ outcome: 'not_found' });
  });

  it('takes the host from an absolute-form target, and refuses a Host naming another', () => {
    const d = decideReference(body, makeRequest({ host: 'A.example.com', target: 'https://a.example.com/public' }), null);
    expect(d).toMatchObject({ outcome: 'allow', route: { index: 0 } });
    expect(decideReference(body, makeRequest({ host: 'other.example.com', target: 'https://a.example.com/public' }), null)).toMatchObject({ status: 400, problem: 'host-conflict' });
  });
});

describe('§2 svc’s own endpoints', () => {
  const body = compileBody(configText([{ from: 'https://a.example.com', to: 'http://up', allow_public_unauthenticated_access: true }], { forward_auth_url: 'https://fwd.example.com' }));

  it('answers /.svc/ and /.well-known/svc/ on any host, before routes', () => {
    expect(decideReference(body, makeRequest({ host: 'a.example.com', target: '/.svc/sign_in?x=1' }), null)).toEqual({
      outcome: 'internal',
      status: 200,
      endpoint: { service: 'proxy', path: '/.svc/sign_in' },
      reasons: ['internal'],
    });
    expect(decideReference(body, makeRequest({ host: 'nowhere.example.com', target: '/x/../.well-known/svc/jwks.json' }), null)).toMatchObject({
      outcome: 'internal',
      endpoint: { service: 'proxy', path: '/.well-known/svc/jwks.json' },
    });
  });

  it('answers every path of the authenticate and forward-auth hosts', () => {
    expect(decideReference(body, makeRequest({ host: 'auth.example.com', target: '/anything' }), null)).toMatchObject({ outcome: 'internal', endpoint: { service: 'authenticate', path: '/anything' } });
    expect(decideReference(body, makeRequest({ host: 'FWD.example.com:443', target: '/verify' }), null)).toMatchObject({ outcome: 'internal', endpoint: { service: 'forward_auth' } });
  });

  it('does not treat look-alike paths as its own', () => {
    expect(decideReference(body, makeRequest({ host: 'a.example.com', target: '/.svcx' }), null)).toMatchObject({ outcome: 'allow' });
  });
});

describe('§3 route matching', () => {
  const body = compileBody(
    configText([
      { from: 'https://a.example.com', to: 'http://exact', path: '/api', allow_public_unauthenticated_access: true },
      { from: 'https://a.example.com', to: 'http://regex', regex: '/api/v[0-9]+', allow_public_unauthenticated_access: true },
      { from: 'https://a.example.com', to: 'http://prefix', prefix: '/api', allow_public_unauthenticated_access: true },
      { from: 'https://a.example.com:8443', to: 'http://alt', allow_public_unauthenticated_access: true },
    ]),
  );
  const via = (host: string, target: string) => {
    const d = decideReference(body, makeRequest({ host, target }), null);
    return d.outcome === 'allow' ? new URL(d.upstream.url).host : d.outcome;
  };

  it('takes the first route in listed order whose matcher holds', () => {
    expect(via('a.example.com', '/api')).toBe('exact');
    expect(via('a.example.com', '/api/v2')).toBe('regex');
    expect(via('a.example.com', '/api/v2/x')).toBe('prefix'); // regexes match the whole path
    expect(via('a.example.com', '/apix')).toBe('prefix'); // plain string prefix
  });

  it('answers a default-port route on the bare host and :443, another port only exactly', () => {
    expect(via('a.example.com:443', '/api')).toBe('exact');
    expect(via('a.example.com:8443', '/api')).toBe('alt');
    expect(via('a.example.com:9443', '/api')).toBe('not_found');
  });

  it('answers 404 no-route when nothing matches', () => {
    expect(decideReference(body, makeRequest({ host: 'b.example.com', target: '/' }), null)).toEqual({ outcome: 'not_found', status: 404, reasons: ['no-route'] });
  });

  it('never matches a regex against the query (S10)', () => {
    const b = compileBody(configText([{ from: 'https://a.example.com', to: 'http://up', regex: '.*public', allow_public_unauthenticated_access: true }]));
    expect(decideReference(b, makeRequest({ host: 'a.example.com', target: '/admin?x=/public' }), null)).toMatchObject({ outcome: 'not_found' });
  });
});

describe('§4 policy and its answer', () => {
  const body = compileBody(
    configText([
      { from: 'https://a.example.com', name: 'app', to: 'http://up', policy: 'allow if groups has "admins"\ndeny if http_method is "DELETE"' },
      { from: 'https://b.example.com', to: 'http://up', allow_public_unauthenticated_access: true },
    ]),
  );

  it('allows with the reasons of the allow rule and names the route', () => {
    expect(decideReference(body, makeRequest({ host: 'a.example.com' }), alice)).toMatchObject({ outcome: 'allow', status: 200, route: { index: 0, id: 'app', name: 'app' }, reasons: ['groups-ok'] });
  });

  it('denies 403 when a deny rule holds', () => {
    expect(decideReference(body, makeRequest({ host: 'a.example.com', method: 'DELETE' }), alice)).toMatchObject({ outcome: 'deny', status: 403, reasons: ['http-method-ok'] });
  });

  it('sends a browser to sign in with the request’s https URL, an API client gets 401', () => {
    const browser = decideReference(body, makeRequest({ host: 'a.example.com', target: '/p?a=1&b=2', scheme: 'http', headers: { accept: ['text/html,application/xhtml+xml;q=0.9'] } }), null);
    expect(browser).toMatchObject({
      outcome: 'unauthenticated',
      status: 302,
      reasons: ['user-unauthenticated'],
      location: `https://auth.example.com/.svc/sign_in?svc_redirect_uri=${encodeURIComponent('https://a.example.com/p?a=1&b=2')}`,
    });
    expect(decideReference(body, makeRequest({ host: 'a.example.com', headers: { accept: ['application/json'] } }), null)).toMatchObject({ status: 401, location: null });
  });

  it('allows a public route without looking at the identity', () => {
    expect(decideReference(body, makeRequest({ host: 'b.example.com' }), null)).toMatchObject({ outcome: 'allow', reasons: ['public-route'] });
  });
});

describe('§5 the client address', () => {
  const routes = [{ from: 'https://a.example.com', to: 'http://up', policy: 'allow if source_ip in ["10.0.0.0/8"]' }];
  const zero = compileBody(configText(routes));
  const two = compileBody(configText(routes, { xff_num_trusted_hops: 2 }));

  it('uses the TCP peer with 0 trusted hops, ignoring X-Forwarded-For', () => {
    expect(decideReference(zero, makeRequest({ host: 'a.example.com', peer: '::ffff:10.0.0.1', headers: { 'x-forwarded-for': ['1.1.1.1'] } }), null)).toMatchObject({ outcome: 'allow' });
    expect(decideReference(zero, makeRequest({ host: 'a.example.com', peer: '1.1.1.1', headers: { 'x-forwarded-for': ['10.0.0.1'] } }), null)).toMatchObject({ outcome: 'deny' });
  });

  it('uses the N-th address from the right of every X-Forwarded-For header', () => {
    const d = decideReference(two, makeRequest({ host: 'a.example.com', headers: { 'x-forwarded-for': ['garbage, 10.0.0.7', ' 192.0.2.1 '] } }), null);
    expect(d).toMatchObject({ outcome: 'allow' });
  });

  it('refuses too few entries or an entry that is not an address (S15)', () => {
    const bad = { outcome: 'bad_request', status: 400, problem: 'client-address-invalid', reasons: ['client-address-invalid'] };
    expect(decideReference(two, makeRequest({ host: 'a.example.com', headers: { 'x-forwarded-for': ['10.0.0.7'] } }), null)).toEqual(bad);
    expect(decideReference(two, makeRequest({ host: 'a.example.com', headers: { 'x-forwarded-for': ['a, 10.0.0.7'] } }), null)).toEqual(bad);
    expect(decideReference(two, makeRequest({ host: 'a.example.com' }), null)).toEqual(bad);
  });
});

describe('§6 the upstream request', () => {
  it('chooses the upstream by cumulative weight', () => {
    const body = compileBody(configText([{ from: 'https://a.example.com', to: ['http://one,1', 'http://two,3'], allow_public_unauthenticated_access: true }]));
    const host = (s: number) => new URL(upstreamOf(decideReference(body, makeRequest({ host: 'a.example.com', upstreamSample: s }), null)).url).host;
    expect([host(0), host(0.24), host(0.25), host(0.99)]).toEqual(['one', 'one', 'two', 'two']);
  });

  it('rewrites the path: prefix_rewrite, then the to path joins literally', () => {
    const body = compileBody(
      configText([
        { from: 'https://a.example.com', to: 'http://up:8080/anything', prefix: '/api', prefix_rewrite: '/v1', allow_public_unauthenticated_access: true },
        { from: 'https://a.example.com', to: 'http://up/base/', path: '/exact', prefix_rewrite: '/swapped', allow_public_unauthenticated_access: true },
        { from: 'https://a.example.com', to: 'https://up:443', allow_public_unauthenticated_access: true },
      ]),
    );
    const url = (target: string) => upstreamOf(decideReference(body, makeRequest({ host: 'a.example.com', target }), null)).url;
    expect(url('/api/x?y=1')).toBe('http://up:8080/anythingv1/x?y=1'); // `/anything` + `/v1/x`, literally
    expect(url('/exact')).toBe('http://up/base/swapped');
    expect(url('/foo')).toBe('https://up/foo');
  });

  it('applies the regex rewrite with \\1 groups and adds a missing leading slash', () => {
    const body = compileBody(configText([{ from: 'https://a.example.com', to: 'http://up/anything', regex_rewrite_pattern: '^/user/([a-z]+)', regex_rewrite_substitution: 'u-\\1$0', allow_public_unauthenticated_access: true }]));
    expect(upstreamOf(decideReference(body, makeRequest({ host: 'a.example.com', target: '/user/bob/x' }), null)).url).toBe('http://up/anythingu-bob$0/x');
    expect(substituteAll('(a)(b)?', '[\\1\\2\\\\\\n]', 'xax')).toBe('x[a\\\\n]x');
  });

  it('picks the Host by the route’s host rule', () => {
    const base = { to: 'http://up:8080', allow_public_unauthenticated_access: true };
    const body = compileBody(
      configText([
        { from: 'https://p.example.com', ...base, preserve_host_header: true },
        { from: 'https://l.example.com', ...base, host_rewrite: 'literal.internal' },
        { from: 'https://h.example.com', ...base, host_rewrite_header: 'X-Target' },
        { from: 'https://r.example.com', ...base, host_path_regex_rewrite_pattern: '^/([a-z]+)/.*$', host_path_regex_rewrite_substitution: '\\1.internal' },
        { from: 'https://u.example.com', ...base },
      ]),
    );
    const host = (h: string, target = '/', headers: Record<string, string[]> = {}) => upstreamOf(decideReference(body, makeRequest({ host: h, target, headers }), null)).host;
    expect(host('P.example.com:8443'.replace(':8443', ''))).toBe('p.example.com');
    expect(host('l.example.com')).toBe('literal.internal');
    expect(host('h.example.com', '/', { 'x-target': ['t.internal:9000'] })).toBe('t.internal:9000');
    expect(host('h.example.com', '/', { 'x-target': ['a', 'b'] })).toBe('up:8080');
    expect(host('h.example.com', '/', { 'x-target': ['bad host'] })).toBe('up:8080');
    expect(host('r.example.com', '/svc/x')).toBe('svc.internal');
    expect(host('r.example.com', '/nomatch')).toBe('up:8080');
    expect(host('u.example.com')).toBe('up:8080');
  });

  it('builds the headers: hop-by-hop, reserved names and forwarded headers removed, edits, identity, host', () => {
    const body = compileBody(
      configText(
        [
          {
            from: 'https://a.example.com',
            to: 'http://up',
            policy: ANY_USER,
            pass_identity_headers: true,
            remove_request_headers: ['X-Drop'],
            set_request_headers: { 'X-Set': 'v', 'X-Forwarded-Proto': 'wss' },
          },
        ],
        { jwt_claims_headers: ['email', 'groups', 'team', 'missing', 'X-Unit:org.unit'] },
      ),
    );
    const d = decideReference(
      body,
      makeRequest({
        host: 'a.example.com',
        peer: '::ffff:198.51.100.4',
        headers: {
          connection: ['keep-alive, X-Secret'],
          'x-secret': ['s'],
          te: ['trailers'],
          'x-svc-jwt-assertion': ['forged'],
          'x_svc_claim_email': ['forged'],
          'x-unit': ['forged'],
          'x-svc-claim-missing': ['forged'],
          'x-envoy-original-path': ['/admin'],
          'x-forwarded-for': ['1.2.3.4'],
          'x-forwarded-host': ['evil.example'],
          forwarded: ['for=1.2.3.4'],
          'x-real-ip': ['1.2.3.4'],
          'x-drop': ['d'],
          cookie: ['a=1', 'b=2'],
          'x-multi': ['1', '2'],
        },
      }),
      alice,
    );
    expect(upstreamOf(d)).toEqual({
      url: 'http://up/',
      host: 'up',
      assertion: true,
      headers: {
        cookie: 'a=1; b=2',
        'x-multi': '1, 2',
        'x-forwarded-for': '198.51.100.4',
        'x-forwarded-proto': 'wss',
        'x-set': 'v',
        'x-svc-claim-email': 'alice@example.com',
        'x-svc-claim-groups': 'admins',
        'x-svc-claim-team': 'blue,red',
        'x-unit': 'eng',
        host: 'up',
      },
    });
  });

  it('keeps trusted forwarded headers and the last N X-Forwarded-For entries', () => {
    const body = compileBody(configText([{ from: 'https://a.example.com', to: 'http://up', allow_public_unauthenticated_access: true }], { xff_num_trusted_hops: 1 }));
    const headers = upstreamOf(
      decideReference(body, makeRequest({ host: 'a.example.com', scheme: 'http', peer: '10.0.0.2', headers: { 'x-forwarded-for': ['6.6.6.6, 192.0.2.1'], 'x-forwarded-proto': ['https'], x_forwarded_for: ['5.5.5.5'] } }), null),
    ).headers;
    expect(headers).toEqual({ 'x-forwarded-for': '192.0.2.1, 10.0.0.2', 'x-forwarded-proto': 'https', host: 'up' });
  });

  it('appends nothing with skip_xff_append and sends no identity to an anonymous request', () => {
    const body = compileBody(configText([{ from: 'https://a.example.com', to: 'http://up', allow_public_unauthenticated_access: true, pass_identity_headers: true }], { skip_xff_append: true, jwt_claims_headers: ['email'] }));
    expect(upstreamOf(decideReference(body, makeRequest({ host: 'a.example.com' }), null))).toEqual({ url: 'http://up/', host: 'up', assertion: false, headers: { 'x-forwarded-proto': 'https', host: 'up' } });
  });
});

describe('§7 redirect routes', () => {
  const body = compileBody(
    configText([
      { from: 'https://a.example.com', prefix: '/old', redirect: { prefix_rewrite: '/new' }, allow_public_unauthenticated_access: true },
      { from: 'https://a.example.com:8443', redirect: { https_redirect: true, host_redirect: 'b.example.com', strip_query: true, response_code: 308 }, allow_public_unauthenticated_access: true },
      { from: 'https://c.example.com', redirect: { scheme_redirect: 'http', port_redirect: 80, path_redirect: '/fixed' }, policy: ANY_USER },
    ]),
  );

  it('replaces the matched prefix and keeps the query', () => {
    expect(decideReference(body, makeRequest({ host: 'a.example.com', target: '/old/x?q=1' }), null)).toEqual({
      outcome: 'redirect',
      status: 301,
      route: { index: 0, id: expect.any(String) as string, name: null },
      reasons: ['public-route'],
      location: 'https://a.example.com/new/x?q=1',
    });
  });

  it('keeps a non-default request port, replaces the host, strips the query', () => {
    expect(decideReference(body, makeRequest({ host: 'a.example.com:8443', target: '/p?q=1' }), null)).toMatchObject({ status: 308, location: 'https://b.example.com:8443/p' });
  });

  it('checks the policy first, and drops the new scheme’s default port', () => {
    expect(decideReference(body, makeRequest({ host: 'c.example.com', target: '/x' }), null)).toMatchObject({ outcome: 'unauthenticated', status: 401 });
    expect(decideReference(body, makeRequest({ host: 'c.example.com', target: '/x?q' }), alice)).toMatchObject({ outcome: 'redirect', location: 'http://c.example.com/fixed?q' });
  });
});

describe('§8 response headers', () => {
  const body = compileBody(
    configText(
      [
        {
          from: 'https://a.example.com',
          to: 'http://up',
          allow_public_unauthenticated_access: true,
          set_response_headers: { 'X-Frame-Options': 'DENY' },
          rewrite_response_headers: [{ header: 'Location', prefix: 'http://up/', value: 'https://a.example.com/' }],
        },
      ],
      { set_response_headers: { 'X-Global': 'g' } },
    ),
  );
  const route: Route = body.routes[0]!;

  it('rewrites leading prefixes of every value, then sets the merged headers by lower-case name', () => {
    const out = responseHeadersReference(route, { Location: ['http://up/a', 'https://other/b'], 'x-frame-options': 'SAMEORIGIN', 'Content-Type': 'text/plain' });
    expect(out).toEqual({
      location: ['https://a.example.com/a', 'https://other/b'],
      'x-frame-options': 'DENY',
      'content-type': 'text/plain',
      'x-content-type-options': 'nosniff',
      'x-xss-protection': '1; mode=block',
      'strict-transport-security': 'max-age=31536000; includeSubDomains; preload',
      'x-global': 'g',
    });
  });
});
