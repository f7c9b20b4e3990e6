/**
 * `jwt_claims_headers` in every written form gives the same claim headers: a list, a map,
 * and the comma-separated string the established proxy's examples use, in YAML, JSON, TOML, a
 * .properties file and the environment; and a bad header name in the comma form is still located.
 */
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { BASE_SETTINGS, compileText } from '../../support/compile-text.ts';

const ROUTES = [{ from: 'https://app.example.com', to: 'http://10.0.0.1', allow_any_authenticated_user: true }];
const WANT = { 'X-Svc-Claim-email': 'email', 'X-Svc-Claim-groups': 'groups', 'X-Team': 'team' };

function claimHeaders(r: ReturnType<typeof compileText>): unknown {
  const errors = r.diagnostics.filter((d) => d.severity === 'error');
  expect(errors.map((d) => `${d.code} ${d.message}`)).toEqual([]);
  return r.plan!.body.settings.identity.claimHeaders;
}

describe('jwt_claims_headers', () => {
  it('the comma form means the list, in every source', () => {
    const comma = 'email, groups,,X-Team:team';
    const yaml = compileText(stringify({ ...BASE_SETTINGS, jwt_claims_headers: comma, routes: ROUTES }));
    const list = compileText(stringify({ ...BASE_SETTINGS, jwt_claims_headers: ['email', 'groups', 'X-Team:team'], routes: ROUTES }));
    const json = compileText(JSON.stringify({ ...BASE_SETTINGS, jwt_claims_headers: comma, routes: ROUTES }), 'config.json');
    const env = compileText(stringify({ ...BASE_SETTINGS, routes: ROUTES }), 'config.yaml', { JWT_CLAIMS_HEADERS: comma });
    const envJson = compileText(stringify({ ...BASE_SETTINGS, routes: ROUTES }), 'config.yaml', { JWT_CLAIMS_HEADERS: '{"X-Svc-Claim-email":"email","X-Svc-Claim-groups":"groups","X-Team":"team"}' });
    for (const r of [yaml, list, json, env, envJson]) expect(claimHeaders(r)).toEqual(WANT);
    expect(yaml.plan!.checksum).toBe(list.plan!.checksum);
  });

  it('reads the comma form from TOML and .properties files too', () => {
    const props = ['jwt_claims_headers=email, groups,,X-Team:team', ...Object.entries(BASE_SETTINGS).map(([k, v]) => `${k}=${String(v)}`)].join('\n');
    const env = { ROUTES: JSON.stringify(ROUTES) };
    expect(claimHeaders(compileText(props, 'config.properties', env))).toEqual(WANT);
    const toml = ['jwt_claims_headers = "email, groups,,X-Team:team"', ...Object.entries(BASE_SETTINGS).map(([k, v]) => `${k} = ${JSON.stringify(v)}`)].join('\n');
    expect(claimHeaders(compileText(toml, 'config.toml', env))).toEqual(WANT);
  });

  it('locates a bad header name written in the comma form at the setting', () => {
    const r = compileText(stringify({ ...BASE_SETTINGS, jwt_claims_headers: 'email,Bad Header:x', routes: ROUTES }));
    const d = r.diagnostics.find((x) => x.severity === 'error');
    expect(d?.name).toBe('invalid-header-name');
    expect(d?.span).toBeDefined();
  });
});
