/**
 * Regression tests for the docs/security.md rows the compiler owns. Each assertion fails if the
 * protection is removed.
 * - S28: config values carrying newlines, `;`, `{`, `}` or `$` expansions never become code: control
 *   characters are rejected at compile time, everything else stays inert data in the JSON plan.
 * - S29: allow-lists match exactly; a regex only where the author wrote one, linted for bare dots.
 * - S10 (compiler side): route regexes are RE2 (no backtracking constructs) and the plan records
 *   them as whole-path matchers; anchoring and query separation are asserted by the runtime tests.
 */
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { BASE_SETTINGS, compileText } from '../support/compile-text.ts';

const ROUTE = { from: 'https://app.example.com', to: 'http://10.0.0.1:8080', allow_any_authenticated_user: true };

function compileWith(settings: Record<string, unknown>, route: Record<string, unknown> = {}) {
  const result = compileText(stringify({ ...BASE_SETTINGS, ...settings, routes: [{ ...ROUTE, ...route }] }));
  const errors = result.diagnostics.filter((d) => d.severity === 'error');
  return { result, errors: errors.map((d) => d.code), warnings: result.diagnostics.filter((d) => d.severity === 'warning').map((d) => d.code) };
}

describe('S28: injection through config values', () => {
  it.each([
    ['a newline in an auth URL', 'SVC3014', { authenticate_service_url: 'https://auth.example.com/\nproxy_pass http://evil;' }, {}],
    ['a carriage return in a global response header', 'SVC3018', { set_response_headers: { 'X-Frame-Options': 'DENY\r\nSet-Cookie: a=b' } }, {}],
    ['a newline in a route request header', 'SVC3018', {}, { set_request_headers: { 'X-Team': 'a\nX-Admin: true' } }],
    ['a NUL in a route prefix', 'SVC3014', {}, { prefix: '/app\u0000/' }],
    ['a newline in a redirect host', 'SVC3014', {}, { to: undefined, allow_any_authenticated_user: undefined, redirect: { host_redirect: 'example.com\n' } }],
    ['a tab in a policy value', 'SVC4015', {}, { allow_any_authenticated_user: undefined, policy: 'allow if email is "a\\tb@example.com"' }],
    ['a newline in a cookie domain', 'SVC3014', { cookie_domain: 'example.com\n' }, {}],
  ])('%s is %s and yields no plan', (_what, code, settings, route) => {
    const { result, errors } = compileWith(settings, route);
    expect(errors).toEqual([code]);
    expect(result.plan).toBeUndefined();
  });

  it('`;`, `{`, `}` and `$` expansions stay literal data in the plan', () => {
    const value = 'a; } location / { proxy_pass http://evil; } ${host} $(id) `id`';
    const { result, errors } = compileWith({}, { set_request_headers: { 'X-Note': value }, set_response_headers: { 'X-Other': value } });
    expect(errors).toEqual([]);
    const route = result.plan!.body.routes[0]!;
    expect(route.requestHeaders.set['X-Note']).toBe(value);
    expect(route.responseHeaders.set['X-Other']).toBe(value);
    // The plan is JSON: the value round-trips byte for byte, with nothing expanded.
    expect(JSON.parse(JSON.stringify(result.plan)).body.routes[0].requestHeaders.set['X-Note']).toBe(value);
  });

  it('a header name that is not an HTTP token is an error', () => {
    expect(compileWith({}, { set_request_headers: { 'X-A: b\r\nX-B': 'v' } }).errors.length).toBeGreaterThan(0);
    expect(compileWith({}, { set_request_headers: { 'X A': 'v' } }).errors.length).toBeGreaterThan(0);
  });
});

describe('S29: allow-lists match exactly', () => {
  it('allowed_users entries are exact user-or-email matches, never patterns', () => {
    const { result } = compileWith({}, { allow_any_authenticated_user: undefined, allowed_users: ['https://app.example.com/cb', 'a.b@example.com'] });
    const text = JSON.stringify(result.plan!.body.routes[0]!.policy);
    expect(text).toContain('"op":"in"');
    expect(text).toContain('"values":["https://app.example.com/cb","a.b@example.com"]');
    expect(text).not.toMatch(/regex|matches|starts_with|ends_with|contains/);
  });

  it('allowed_domains entries are exact domain matches', () => {
    const { result } = compileWith({}, { allow_any_authenticated_user: undefined, allowed_domains: ['example.com'] });
    expect(result.plan!.body.routes[0]!.policy).toEqual({
      rules: [{ action: 'allow', when: { op: 'criterion', name: 'domain', match: { op: 'in', values: ['example.com'] } } }],
    });
  });

  it('a policy `is` compares the whole string', () => {
    const { result } = compileWith({}, { allow_any_authenticated_user: undefined, policy: 'allow if email is "a.b@example.com"' });
    expect(result.plan!.body.routes[0]!.policy.rules[0]!.when).toEqual({ op: 'criterion', name: 'email', match: { op: 'is', value: 'a.b@example.com' } });
  });

  it('a route regex with a bare dot between letters is flagged', () => {
    const { warnings } = compileWith({}, { regex: '^/app.example.com/cb$' });
    expect(warnings).toContain('SVC3525');
    expect(compileWith({}, { regex: '^/app\\.example\\.com/cb$' }).warnings).not.toContain('SVC3525');
  });
});

describe('S10 (compiler side): route regexes', () => {
  it.each([['(a)\\1'], ['(?=admin)/.*'], ['(?<!x)/public']])('backtracking-only construct %s is rejected', (regex) => {
    expect(compileWith({}, { regex }).errors).toContain('SVC3507');
  });

  it('the plan keeps the regex as a whole-path matcher, separate from any query', () => {
    const { result } = compileWith({}, { regex: '/public.*' });
    expect(result.plan!.body.routes[0]!.match).toEqual({ kind: 'regex', regex: '/public.*' });
  });
});
