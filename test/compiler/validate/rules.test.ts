/**
 * The validation rules (stage 7): the rule list matches the files (one rule per file, named after
 * its diagnostic), and a table of configs shows what each rule reports, where, and what it leaves
 * alone (no double reports with lowering, no reports on valid configs). The golden fixtures
 * (fixtures/cases/<diagnostic>/) show each diagnostic once more with its rendered location.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { REGISTRY } from '../../../compiler/diagnostics/codes.ts';
import { RULES } from '../../../compiler/validate/rules/index.ts';
import { BASE_SETTINGS, compileText, TEST_SECRET } from '../../support/compile-text.ts';

const RULES_DIR = join(import.meta.dirname, '../../../compiler/validate/rules');
const NOT_RULES = new Set(['index.ts', 'helpers.ts']);

describe('the rule list', () => {
  it('has one rule per file, each named after a diagnostic it reports', async () => {
    const files = readdirSync(RULES_DIR).filter((f) => f.endsWith('.ts') && !NOT_RULES.has(f)).sort();
    const listed = new Set(RULES);
    for (const f of files) {
      const mod = (await import(join(RULES_DIR, f))) as Record<string, unknown>;
      const rules = Object.values(mod).filter((v): v is (typeof RULES)[number] => listed.has(v as (typeof RULES)[number]));
      expect(rules, `${f} exports exactly one listed rule`).toHaveLength(1);
      expect(rules[0]!.reports.map((d) => d.name), f).toContain(f.replace(/\.ts$/, ''));
    }
    expect(RULES).toHaveLength(files.length);
  });

  it('reports only registered diagnostics', () => {
    const codes = new Set(REGISTRY.map((d) => d.code));
    for (const rule of RULES) for (const d of rule.reports) expect(codes.has(d.code), d.name).toBe(true);
  });
});

const POLICY = 'allow if email is "alice@example.com"';

/** Compiles BASE_SETTINGS plus `settings` with `routes` and lists `name path` of the SVC3xxx diagnostics (inline-secret left out). */
function report(settings: Record<string, unknown>, routes: Record<string, unknown>[] = [{ from: 'https://app.example.com', to: 'http://10.0.0.1', policy: POLICY }]): string[] {
  const config: Record<string, unknown> = { ...BASE_SETTINGS, routes };
  for (const [k, v] of Object.entries(settings)) {
    if (v === undefined) delete config[k];
    else config[k] = v;
  }
  return compileText(stringify(config))
    .diagnostics.filter((d) => d.code.startsWith('SVC3') && d.name !== 'inline-secret')
    .map((d) => `${d.name} ${d.path ?? '-'}`);
}

const route = (extra: Record<string, unknown>) => [{ from: 'https://app.example.com', to: 'http://10.0.0.1', policy: POLICY, ...extra }];

describe('route rules', () => {
  it('stay quiet on a valid route', () => {
    expect(report({})).toEqual([]);
    expect(report({}, route({ prefix: '/api/', prefix_rewrite: '/', regex_rewrite_pattern: '^/v1/(.*)$', regex_rewrite_substitution: '/\\1', timeout: '10s' }))).toEqual([]);
  });

  it.each([
    ['https://app.example.com/', []],
    ['https://app.example.com/x', ['route-from-has-path routes[0].from']],
    ['https://app.example.com?a=1', ['route-from-has-path routes[0].from']],
    ['https://app.example.com#f', ['route-from-has-path routes[0].from']],
    ['http://app.example.com', ['route-from-scheme routes[0].from']],
    ['tcp+https://db.example.com', ['route-tcp-without-port routes[0].from', 'route-to-scheme routes[0].to']],
  ])('from %s', (from, expected) => {
    expect(report({}, [{ from, to: 'http://10.0.0.1', policy: POLICY }])).toEqual(expected);
  });

  it('checks `to` schemes against `from`', () => {
    expect(report({}, [{ from: 'tcp+https://db.example.com:5432', to: 'tcp://10.0.0.1:5432', policy: POLICY }])).toEqual([]);
    expect(report({}, [{ from: 'tcp+https://db.example.com:5432', to: 'https://10.0.0.1', policy: POLICY }])).toEqual(['route-to-scheme routes[0].to']);
    expect(report({}, route({ to: ['http://10.0.0.1', 'ftp://10.0.0.2'], outlier_detection: { consecutive_5xx: 5, max_ejection_percent: 50 } }))).toEqual(['route-to-scheme routes[0].to[1]']);
  });

  it('reports a URL that does not parse once (lowering), not again', () => {
    expect(report({}, route({ to: '10.0.0.1:8080' }))).toEqual(['invalid-url routes[0].to']);
  });

  it('needs exactly one of `to` and `redirect`', () => {
    expect(report({}, [{ from: 'https://app.example.com', policy: POLICY }])).toEqual(['route-no-action routes[0]']);
    expect(report({}, [{ from: 'https://app.example.com', to: [], policy: POLICY }])).toEqual(['route-no-action routes[0]']);
    expect(report({}, route({ redirect: { host_redirect: 'b.example.com' } }))).toEqual(['route-to-and-redirect routes[0].redirect']);
  });

  it('checks redirects', () => {
    const red = (redirect: Record<string, unknown>) => report({}, [{ from: 'https://app.example.com', policy: POLICY, redirect }]);
    expect(red({ https_redirect: true })).toEqual([]);
    expect(red({ strip_query: true, response_code: 302 })).toEqual([]);
    expect(red({})).toEqual(['route-redirect-empty routes[0].redirect']);
    expect(red({ https_redirect: false, response_code: 308 })).toEqual(['route-redirect-empty routes[0].redirect']);
    expect(red({ scheme_redirect: 'https', https_redirect: true })).toEqual(['route-redirect-conflict routes[0].redirect.https_redirect']);
    expect(red({ path_redirect: 'new', prefix_rewrite: '/v2' })).toEqual(['route-path-not-absolute routes[0].redirect.path_redirect', 'route-redirect-conflict routes[0].redirect.prefix_rewrite']);
  });

  it('allows one path matcher, absolute', () => {
    expect(report({}, route({ prefix: '/a', regex: '/b', path: '/c' }))).toEqual(['route-multiple-path-matchers routes[0].regex']);
    expect(report({}, route({ path: 'a' }))).toEqual(['route-path-not-absolute routes[0].path']);
    expect(report({}, route({ prefix: '' }))).toEqual(['route-path-not-absolute routes[0].prefix']);
    expect(report({}, route({ prefix: '/a', prefix_rewrite: 'b' }))).toEqual(['route-path-not-absolute routes[0].prefix_rewrite']);
    expect(report({}, route({ prefix_rewrite: '/b' }))).toEqual(['route-prefix-rewrite-without-match routes[0].prefix_rewrite']);
  });

  it('rejects HTTP-only fields on TCP routes, once each', () => {
    const tcp = { from: 'tcp+https://db.example.com:5432', to: 'tcp://10.0.0.1:5432', policy: POLICY };
    expect(report({}, [{ ...tcp, prefix: '/a', prefix_rewrite: '/b' }])).toEqual(['route-tcp-path-matcher routes[0].prefix', 'route-tcp-path-matcher routes[0].prefix_rewrite']);
  });

  it('checks regexes (RE2) and lints unescaped dots in valid ones only', () => {
    expect(report({}, route({ regex: '^/a/(?=b)' }))).toEqual(['route-invalid-regex routes[0].regex']);
    expect(report({}, route({ regex: '^/a/(?=b).json' }))).toEqual(['route-invalid-regex routes[0].regex']);
    expect(report({}, route({ host_path_regex_rewrite_pattern: '(a)\\1', host_path_regex_rewrite_substitution: 'x' }))).toEqual(['route-invalid-regex routes[0].host_path_regex_rewrite_pattern']);
    expect(report({}, route({ regex: '^/a/b.json$' }))).toEqual(['regex-unescaped-dot routes[0].regex']);
    expect(report({}, route({ regex: '^/a/b\\.json$' }))).toEqual([]);
  });

  it('needs both halves of pairs', () => {
    expect(report({}, route({ regex_rewrite_substitution: '/x' }))).toEqual(['route-incomplete-pair routes[0].regex_rewrite_substitution']);
    expect(report({}, route({ regex_rewrite_pattern: '^/x', regex_rewrite_substitution: '' }))).toEqual([]);
    expect(report({}, route({ host_path_regex_rewrite_pattern: '^/(.*)/' }))).toEqual(['route-incomplete-pair routes[0].host_path_regex_rewrite_pattern']);
  });

  it('allows one way of choosing the upstream Host; the path-regex pair counts once', () => {
    expect(report({}, route({ host_path_regex_rewrite_pattern: '^/(.*)/', host_path_regex_rewrite_substitution: '\\1' }))).toEqual([]);
    expect(report({}, route({ host_rewrite: 'a', host_rewrite_header: 'X-Host' }))).toEqual(['route-multiple-host-rewrites routes[0].host_rewrite_header']);
    expect(report({}, route({ preserve_host_header: false, host_rewrite: 'a' }))).toEqual([]);
    expect(report({}, route({ host_rewrite: 'a', host_path_regex_rewrite_pattern: '^/(.*)/', host_path_regex_rewrite_substitution: '\\1' }))).toEqual([
      'route-multiple-host-rewrites routes[0].host_path_regex_rewrite_pattern',
    ]);
  });

  it('compares route timeouts with non-zero global timeouts', () => {
    expect(report({}, route({ timeout: '30s' }))).toEqual([]);
    expect(report({}, route({ timeout: '31s' }))).toEqual(['route-timeout-exceeds-global routes[0].timeout']);
    expect(report({}, route({ timeout: '0' }))).toEqual(['route-timeout-exceeds-global routes[0].timeout']);
    expect(report({ timeout_read: '0' }, route({ timeout: '0' }))).toEqual([]);
    expect(report({ timeout_read: '0', timeout_write: '10s' }, route({ timeout: '20s' }))).toEqual(['route-timeout-exceeds-global routes[0].timeout']);
    expect(report({}, route({ timeout: '1h', allow_websockets: true }))).toEqual([]);
    expect(report({}, route({ idle_timeout: '1m' }))).toEqual([]);
    expect(report({}, route({ timeout: 'soon' }))).toEqual(['invalid-duration routes[0].timeout']);
  });

  it('names the tightest global timeout exceeded', () => {
    const res = compileText(stringify({ ...BASE_SETTINGS, timeout_read: '1m', timeout_write: '45s', routes: route({ timeout: '2m' }) }));
    expect(res.diagnostics.find((d) => d.name === 'route-timeout-exceeds-global')?.message).toBe('route `timeout` `2m` exceeds `timeout_write` `45s`');
  });

  it('keeps Host and pseudo-headers out of set_request_headers', () => {
    expect(report({}, route({ set_request_headers: { hOsT: 'x', 'X-A': 'b' } }))).toEqual(['route-sets-host-header routes[0].set_request_headers.hOsT']);
  });

  it('rejects allow-lists on public routes', () => {
    expect(report({}, [{ from: 'https://a.example.com', to: 'http://10.0.0.1', allow_public_unauthenticated_access: true, cors_allow_preflight: true }])).toEqual([]);
    expect(report({}, [{ from: 'https://a.example.com', to: 'http://10.0.0.1', allow_public_unauthenticated_access: true, allow_any_authenticated_user: true }])).toEqual([
      'route-public-with-policy routes[0].allow_any_authenticated_user',
    ]);
    expect(report({}, [{ from: 'https://a.example.com', to: 'http://10.0.0.1', allow_public_unauthenticated_access: true, allowed_domains: ['example.com'] }])).toEqual([
      'route-public-with-policy routes[0].allowed_domains',
      'route-deprecated-option routes[0].allowed_domains',
    ]);
  });

  it('rejects allow-lists beside allow_any_authenticated_user, once, at the first list written', () => {
    const any = (extra: Record<string, unknown>) => report({}, [{ from: 'https://a.example.com', to: 'http://10.0.0.1', allow_any_authenticated_user: true, ...extra }]).filter((d) => !d.startsWith('route-deprecated-option'));
    expect(any({})).toEqual([]);
    expect(any({ policy: POLICY })).toEqual([]); // deny rules beside it still mean something
    expect(any({ allowed_idp_claims: {} })).toEqual([]);
    expect(any({ allowed_users: [] })).toEqual([]);
    expect(any({ allowed_groups: ['admins'], allowed_users: ['a@example.com'] })).toEqual(['route-any-user-with-allow-list routes[0].allowed_groups']);
    expect(any({ allowed_idp_claims: { dept: ['eng'] } })).toEqual(['route-any-user-with-allow-list routes[0].allowed_idp_claims']);
    expect(any({ allow_any_authenticated_user: false, allowed_domains: ['example.com'] })).toEqual([]);
    // A public route is reported once, by route-public-with-policy.
    expect(any({ allow_public_unauthenticated_access: true, allowed_domains: ['example.com'] })).toEqual(['route-public-with-policy routes[0].allow_any_authenticated_user']);
  });

  it('checks weights', () => {
    const to = (...urls: string[]) => report({}, route({ to: urls, outlier_detection: { consecutive_5xx: 5, max_ejection_percent: 50 } }));
    expect(to('http://a,1', 'http://b,3')).toEqual([]);
    expect(to('http://a', 'http://b')).toEqual([]);
    expect(to('http://a,2', 'http://b')).toEqual(['route-weights routes[0].to[1]']);
    expect(to('http://a,0', 'http://b,1')).toEqual(['route-weights routes[0].to[0]']);
    expect(to('http://a,1.5', 'http://b,x')).toEqual(['route-weights routes[0].to[0]', 'route-weights routes[0].to[1]']);
  });

  it('warns about several upstreams without health checks or outlier detection', () => {
    expect(report({}, route({ to: ['http://a', 'http://b'] }))).toEqual(['route-multiple-upstreams-unchecked routes[0].to']);
    expect(report({}, route({ to: ['http://a', 'http://b'], health_checks: [{ tcp_health_check: {} }] }))).toEqual([]);
  });

  it('checks health-check kinds and load-balancer configs', () => {
    expect(report({}, route({ health_checks: [{ timeout: '1s' }] }))).toEqual(['route-health-check-kind routes[0].health_checks[0]']);
    expect(report({}, route({ health_checks: [{ grpc_health_check: {}, http_health_check: { path: '/' } }] }))).toEqual([
      'route-health-check-kind routes[0].health_checks[0].http_health_check',
    ]);
    expect(report({}, route({ lb_policy: 'MAGLEV', maglev_lb_config: { table_size: 65537 } }))).toEqual([]);
    expect(report({}, route({ lb_policy: 'MAGLEV', least_request_lb_config: { choice_count: 2 } }))).toEqual(['route-lb-config-mismatch routes[0].least_request_lb_config']);
  });

  it('reports duplicate names at every later use', () => {
    const r = (name: string, host: string) => ({ name, from: `https://${host}.example.com`, to: 'http://10.0.0.1', policy: POLICY });
    expect(report({}, [r('x', 'a'), r('y', 'b'), r('x', 'c'), r('x', 'd')])).toEqual(['route-duplicate-name routes[2].name', 'route-duplicate-name routes[3].name']);
  });

  it('warns about deprecated options (one per field), missing policies and tls_skip_verify', () => {
    expect(report({}, [{ from: 'https://a.example.com', to: 'http://10.0.0.1', allowed_users: ['a@example.com'], allowed_domains: ['example.com'] }])).toEqual([
      'route-deprecated-option routes[0].allowed_users',
      'route-deprecated-option routes[0].allowed_domains',
    ]);
    expect(report({}, [{ from: 'https://a.example.com', to: 'http://10.0.0.1' }])).toEqual(['route-without-policy routes[0].from']);
    expect(report({}, [{ from: 'https://a.example.com', to: 'http://10.0.0.1', allow_any_authenticated_user: true }])).toEqual([]);
    expect(report({}, route({ to: 'https://10.0.0.1', tls_skip_verify: true }))).toEqual(['route-tls-skip-verify routes[0].tls_skip_verify']);
  });

  it('reports control characters in fields lowering reads raw, once', () => {
    expect(report({}, route({ prefix: '/a\n' }))).toEqual(['control-character routes[0].prefix']);
    expect(report({}, route({ to: 'http://10.0.0.1/\t' }))).toEqual(['control-character routes[0].to']);
    expect(report({}, route({ prefix: '/a', prefix_rewrite: '/b\n' }))).toEqual(['control-character routes[0].prefix_rewrite']);
    expect(report({}, [{ from: 'https://a.example.com/\n', to: 'http://10.0.0.1', policy: POLICY }])).toEqual(['control-character routes[0].from']);
  });
});

describe('settings rules', () => {
  it('need certificates, insecure_server or autocert', () => {
    expect(report({ insecure_server: undefined })).toEqual(['no-certificates -']);
    expect(report({ insecure_server: false })).toEqual(['no-certificates insecure_server']);
    expect(report({ insecure_server: undefined, autocert: true, autocert_dir: '/var/lib/svc' })).toEqual([]);
    expect(report({ insecure_server: undefined, autocert: true })).toEqual(['missing-required-setting autocert_dir']);
    expect(report({ insecure_server: undefined, certificate_file: 'missing.pem', certificate_key_file: 'missing-key.pem' })).toEqual([
      'file-unreadable certificate_file',
      'file-unreadable certificate_key_file',
    ]);
  });

  it('need the settings the selected services need', () => {
    expect(report({ shared_secret: undefined })).toEqual(['missing-required-setting shared_secret']);
    expect(report({ idp_client_id: '' })).toEqual(['missing-required-setting idp_client_id']);
    expect(report({ idp_provider: 'github', idp_provider_url: undefined })).toEqual([]);
    expect(report({ idp_provider_url: undefined })).toEqual(['missing-required-setting idp_provider_url']);
    const proxy = { services: 'proxy', idp_provider: undefined, idp_provider_url: undefined, idp_client_id: undefined, idp_client_secret: undefined };
    expect(report({ ...proxy, authorize_service_urls: ['https://authz.internal'], databroker_service_url: 'https://db.internal' })).toEqual([]);
    expect(report({ ...proxy, cookie_secret: undefined })).toEqual([
      'missing-required-setting cookie_secret',
      'missing-required-setting authorize_service_url',
      'missing-required-setting databroker_service_url',
    ]);
    expect(report({ services: 'databroker', cookie_secret: undefined, authenticate_service_url: undefined, signout_redirect_url: undefined })).toEqual([]);
  });

  it('give one command that produces a good value where the established proxy generated one, and that command works', () => {
    const help = (settings: Record<string, unknown>, key: string) =>
      compileText(stringify({ ...BASE_SETTINGS, ...settings, routes: [{ from: 'https://a.example.com', to: 'http://10.0.0.1', allow_any_authenticated_user: true }] })).diagnostics.find(
        (d) => d.name === 'missing-required-setting' && d.path === key,
      )?.help;
    const command = (h: string | undefined) => /`export (\w+)=(.*?)` \(/.exec(h ?? '');
    for (const key of ['shared_secret', 'cookie_secret', 'signout_redirect_url']) {
      const m = command(help({ [key]: undefined }, key));
      expect(m?.[1], key).toBe(key.toUpperCase());
      // The command, run by a shell, gives a value the compiler takes.
      const value = execFileSync('sh', ['-c', `printf %s ${m![2]}`], { encoding: 'utf8' });
      const r = compileText(stringify({ ...BASE_SETTINGS, [key]: undefined, routes: [{ from: 'https://a.example.com', to: 'http://10.0.0.1', allow_any_authenticated_user: true }] }), 'config.yaml', { [key.toUpperCase()]: value });
      expect(r.diagnostics.filter((d) => d.severity === 'error').map((d) => d.code), key).toEqual([]);
    }
    expect(help({ idp_client_id: undefined }, 'idp_client_id')).not.toMatch(/export/);
  });

  it('do not report a required key that is present but failed its schema check', () => {
    expect(report({ idp_client_id: 42 })).toEqual([]);
  });

  it('refuse an identity-manager interval or timeout below 1s, located at the key', () => {
    expect(report({ idp_refresh_directory_interval: '1s', idp_refresh_directory_timeout: '1s' })).toEqual([]);
    expect(report({ idp_refresh_directory_interval: '0' })).toEqual(['directory-refresh-out-of-range idp_refresh_directory_interval']);
    expect(report({ idp_refresh_directory_interval: '500ms', idp_refresh_directory_timeout: '0s' })).toEqual([
      'directory-refresh-out-of-range idp_refresh_directory_interval',
      'directory-refresh-out-of-range idp_refresh_directory_timeout',
    ]);
    const d = compileText(stringify({ ...BASE_SETTINGS, idp_refresh_directory_interval: '0', routes: [] })).diagnostics.find((x) => x.code === 'SVC3035');
    expect(d?.severity).toBe('error');
    // Located at the value of the key in the config text.
    expect(d?.span?.source.text.slice(d.span.start, d.span.end)).toMatch(/^['"]?0['"]?$/);
  });

  it('check tracing providers, dependent and ineffective settings', () => {
    expect(report({ tracing_provider: 'jaeger', tracing_jaeger_agent_endpoint: 'localhost:6831' })).toEqual(['tracing-endpoint-missing tracing_jaeger_collector_endpoint']);
    expect(report({ tracing_provider: 'zipkin', tracing_zipkin_endpoint: 'https://zipkin.internal/api/v2/spans' })).toEqual([]);
    expect(report({ tracing_zipkin_endpoint: 'https://zipkin.internal/api/v2/spans' })).toEqual(['setting-without-effect tracing_zipkin_endpoint']);
    expect(report({ autocert: true, autocert_dir: '/var/lib/svc', autocert_eab_mac_key: 'a2V5' })).toEqual([
      'mutually-exclusive-settings autocert',
      'dependent-setting-missing autocert_eab_mac_key',
    ]);
    expect(report({ metrics_address: ':9090', metrics_client_ca_file: 'ca.pem' })).toEqual(['file-unreadable metrics_client_ca_file', 'dependent-setting-missing metrics_client_ca_file']);
    expect(report({ databroker_storage_connection_string: 'redis://localhost:6379' })).toEqual(['setting-without-effect databroker_storage_connection_string']);
  });

  it('warn about a wildcard route host autocert does not cover, unless a configured certificate does', () => {
    const autocert = { insecure_server: undefined, autocert: true, autocert_dir: '/var/lib/svc' };
    const wild = [{ from: 'https://*.apps.example.com', to: 'http://10.0.0.1', policy: POLICY }, ...route({})];
    // A wildcard `from` is refused now (it would never match); the autocert warning stays beside it.
    expect(report(autocert, wild)).toEqual(['autocert-wildcard-host routes[0].from', 'route-from-wildcard-host routes[0].from']);
    expect(report({}, wild)).toEqual(['route-from-wildcard-host routes[0].from']);
    // TEST ONLY certificate and key for *.apps.example.com, made here.
    const dir = mkdtempSync(join(tmpdir(), 'svc-wild-'));
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1', '-subj', '/CN=*.apps.example.com', '-addext', 'subjectAltName=DNS:*.apps.example.com', '-keyout', join(dir, 'k.pem'), '-out', join(dir, 'c.pem')], { stdio: 'ignore' });
    const files = { 'c.pem': readFileSync(join(dir, 'c.pem'), 'utf8'), 'k.pem': readFileSync(join(dir, 'k.pem'), 'utf8') };
    rmSync(dir, { recursive: true });
    const config = stringify({ ...BASE_SETTINGS, insecure_server: undefined, autocert: true, autocert_dir: '/var/lib/svc', certificate_file: 'c.pem', certificate_key_file: 'k.pem', routes: wild });
    const names = compileText(config, 'config.yaml', {}, files).diagnostics.filter((d) => d.code.startsWith('SVC3') && d.name !== 'inline-secret').map((d) => d.name);
    expect(names).toEqual(['route-from-wildcard-host']);
  });

  it('check values', () => {
    expect(report({ cookie_name: 'my cookie' })).toEqual(['invalid-value cookie_name']);
    expect(report({ cookie_name: '_svc-session' })).toEqual([]);
    expect(report({ cookie_domain: '.example.com' })).toEqual([]);
    expect(report({ tracing_provider: 'apm', tracing_sample_rate: 1.5 })).toEqual(['invalid-value tracing_sample_rate']);
    expect(report({ cookie_expire: '0' })).toEqual(['invalid-value cookie_expire']);
    expect(report({ authenticate_callback_path: '/cb?x=1' })).toEqual(['invalid-value authenticate_callback_path']);
    expect(report({ programmatic_redirect_domain_whitelist: ['localhost', '*.example.com'] })).toEqual(['invalid-value programmatic_redirect_domain_whitelist[1]']);
  });

  it('warn about insecure settings', () => {
    expect(report({ cookie_secure: false, cookie_http_only: false, svc_debug: true, databroker_storage_tls_skip_verify: true })).toEqual([
      'insecure-setting cookie_secure',
      'insecure-setting cookie_http_only',
      'insecure-setting svc_debug',
      'insecure-setting databroker_storage_tls_skip_verify',
    ]);
    expect(report({ grpc_insecure: true })).toEqual([]);
  });

  it('warn about group policies without a service account, except for oidc', () => {
    const groups = [{ from: 'https://a.example.com', to: 'http://10.0.0.1', policy: 'allow if groups has "admins"' }];
    expect(report({}, groups)).toEqual([]);
    expect(report({ idp_provider: 'okta', idp_provider_url: undefined }, groups)).toEqual(['groups-without-service-account routes[0].policy']);
    expect(report({ idp_provider: 'okta', idp_provider_url: undefined, idp_service_account: Buffer.from('{"api_key":"test-only"}').toString('base64') }, groups)).toEqual([]);
  });
});

describe('upstream-layer rules', () => {
  it('refuses a Maglev table size that is not prime', () => {
    const r = (size: number) => report({}, route({ to: ['http://10.0.0.1', 'http://10.0.0.2'], lb_policy: 'MAGLEV', maglev_lb_config: { table_size: size }, outlier_detection: { consecutive_5xx: 5, max_ejection_percent: 50 } }));
    expect(r(65537)).toEqual([]);
    expect(r(65536)).toEqual(['route-maglev-table-size routes[0].maglev_lb_config.table_size']);
  });
  it('warns when outlier detection could never eject an upstream', () => {
    const r = (n: number, percent?: number) => report({}, route({ to: Array.from({ length: n }, (_, i) => `http://10.0.0.${i + 1}`), outlier_detection: { consecutive_5xx: 5, ...(percent !== undefined ? { max_ejection_percent: percent } : {}) } }));
    expect(r(10)).toEqual([]);
    expect(r(9)).toEqual(['route-outlier-never-ejects routes[0].outlier_detection']);
    expect(r(3, 34)).toEqual([]);
    expect(r(3, 33)).toEqual(['route-outlier-never-ejects routes[0].outlier_detection.max_ejection_percent']);
  });
});
