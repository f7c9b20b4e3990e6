/**
 * `invalid-service-account` (SVC3045): an `idp_service_account` that is not base64 of a JSON object
 * with the fields its `idp_provider` needs compiled, and the directory sync then failed at every
 * run. The rule refuses it inline and from the environment, located at the setting, naming the
 * missing field and never the value.
 */
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { BASE_SETTINGS, compileText } from '../../../support/compile-text.ts';

const b64 = (o: unknown) => Buffer.from(typeof o === 'string' ? o : JSON.stringify(o)).toString('base64');
const ROUTES = [{ from: 'https://app.example.com', to: 'http://10.0.0.1', policy: 'allow if groups has "admins"' }];
const KEY = '-----BEGIN PRIVATE KEY-----\nTEST ONLY\n-----END PRIVATE KEY-----\n';

const VALID: Record<string, Record<string, string>> = {
  gitlab: { private_token: 'glpat-test-only' },
  google: { type: 'service_account', client_email: 'svc@test.iam.gserviceaccount.com', private_key: KEY, token_uri: 'https://oauth2.googleapis.com/token', impersonate_user: 'admin@example.com' },
  azure: { client_id: 'test-client', client_secret: 'test-only-secret', directory_id: 'test-tenant' },
  okta: { api_key: 'test-only-key' },
  github: { username: 'svc-bot', personal_access_token: 'ghp_test_only' },
};
const REQUIRED: Record<string, string[]> = {
  gitlab: ['private_token'],
  google: ['client_email', 'private_key', 'impersonate_user'],
  azure: ['client_id', 'client_secret', 'directory_id'],
  okta: ['api_key'],
  github: ['username', 'personal_access_token'],
};

function report(provider: string, settings: Record<string, unknown>, env: Record<string, string> = {}) {
  const res = compileText(stringify({ ...BASE_SETTINGS, idp_provider: provider, idp_provider_url: 'https://idp.example.com', ...settings, routes: ROUTES }), 'config.yaml', env);
  const diags = res.diagnostics.filter((d) => d.name === 'invalid-service-account');
  return { res, diags, messages: diags.map((d) => d.message) };
}

describe('invalid-service-account', () => {
  it.each(Object.keys(VALID))('accepts a complete %s account', (provider) => {
    expect(report(provider, { idp_service_account: b64(VALID[provider]) }).diags).toEqual([]);
  });

  it.each(Object.entries(REQUIRED).flatMap(([p, fs]) => fs.map((f) => [p, f] as const)))('%s without `%s` is an error naming the field, at the setting', (provider, field) => {
    const account = { ...VALID[provider] };
    delete account[field];
    const { res, diags, messages } = report(provider, { idp_service_account: b64(account) });
    expect(messages).toEqual([`\`idp_service_account\` for \`${provider}\` has no \`${field}\``]);
    expect(diags[0]!.severity).toBe('error');
    expect(diags[0]!.code).toBe('SVC3045');
    expect(diags[0]!.path).toBe('idp_service_account');
    expect(diags[0]!.span?.source.name).toBe('config.yaml');
    expect(res.plan).toBeUndefined();
    for (const [k, v] of Object.entries(account)) if (/key|token|secret/.test(k)) expect(messages[0]).not.toContain(v);
  });

  it('refuses what is not base64, not JSON, not an object, a field of the wrong type, a bad API base', () => {
    expect(report('gitlab', { idp_service_account: '{"private_token":"x"}' }).messages).toEqual(['`idp_service_account` for `gitlab` is not valid base64']);
    expect(report('okta', { idp_service_account: b64('api_key=x') }).messages).toEqual(['`idp_service_account` for `okta` does not decode to JSON']);
    expect(report('okta', { idp_service_account: b64(['api_key']) }).messages).toEqual(['`idp_service_account` for `okta` does not decode to a JSON object']);
    expect(report('okta', { idp_service_account: b64({ api_key: 7 }) }).messages).toEqual(['`idp_service_account` for `okta` has a `api_key` that is not a string']);
    expect(report('azure', { idp_service_account: b64({ ...VALID['azure'], graph_url: 'graph.example' }) }).messages).toEqual(['`idp_service_account` for `azure` has a `graph_url` that is not an http(s) URL']);
    expect(report('google', { idp_service_account: b64({ ...VALID['google'], private_key: 'nope' }) }).messages).toEqual(['`idp_service_account` for `google` has a `private_key` that is not a PEM private key']);
  });

  it('checks a value from the environment, located there', () => {
    const { diags } = report('gitlab', {}, { IDP_SERVICE_ACCOUNT: b64({ token: 'x' }) });
    expect(diags.map((d) => d.message)).toEqual(['`idp_service_account` for `gitlab` has no `private_token`']);
    expect(diags[0]!.span?.source.name).toBe('env:IDP_SERVICE_ACCOUNT');
  });

  it('leaves the generic oidc provider to svc run (no directory there)', () => {
    expect(report('oidc', { idp_service_account: 'not base64!' }).diags).toEqual([]);
  });
});
