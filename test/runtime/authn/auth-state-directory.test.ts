/**
 * `idp_service_account` is read with the plan (runtime/authn/auth-state.ts), as the client secret
 * is: a service account missing from the environment, or changed there since the plan was compiled,
 * refuses the generation at start and on reload, instead of failing every directory read later
 * (docs/authentication.md "Groups from the directory").
 */
import { stringify } from 'yaml';
import { afterEach, describe, expect, it } from 'vitest';
import { buildAuthState } from '../../../runtime/authn/auth-state.ts';
import { ephemeralSigningKey } from '../../../runtime/authn/signing-key.ts';
import { SecretError } from '../../../runtime/plan/secrets.ts';
import { BASE_SETTINGS, compileText } from '../../support/compile-text.ts';

const account = Buffer.from(JSON.stringify({ api_key: 'test-only-okta-key' })).toString('base64');
const other = Buffer.from(JSON.stringify({ api_key: 'another-test-only-key' })).toString('base64');
const ROUTES = [{ from: 'https://app.example.com', to: 'http://10.0.0.1', policy: 'allow if groups has "staff"' }];
const plan = () => {
  const r = compileText(stringify({ ...BASE_SETTINGS, idp_provider: 'okta', idp_provider_url: 'https://test.okta.example', routes: ROUTES }), 'config.yaml', { IDP_SERVICE_ACCOUNT: account });
  if (!r.plan) throw new Error(r.diagnostics.map((d) => d.message).join('\n'));
  return r.plan;
};
const key = ephemeralSigningKey();
const build = () => buildAuthState(plan().body, 'http', undefined, () => key);

const saved = process.env['IDP_SERVICE_ACCOUNT'];
afterEach(() => {
  if (saved === undefined) delete process.env['IDP_SERVICE_ACCOUNT'];
  else process.env['IDP_SERVICE_ACCOUNT'] = saved;
});

describe('the service account at start', () => {
  it('is refused when missing, or changed since the plan was compiled', () => {
    delete process.env['IDP_SERVICE_ACCOUNT'];
    expect(build).toThrow(SecretError);
    expect(build).toThrow(/idp_service_account: environment variable IDP_SERVICE_ACCOUNT is not set/);
    process.env['IDP_SERVICE_ACCOUNT'] = other;
    expect(build).toThrow(/idp_service_account: the value at env:IDP_SERVICE_ACCOUNT changed since the plan was compiled/);
  });

  it('is accepted as compiled', () => {
    process.env['IDP_SERVICE_ACCOUNT'] = account;
    expect(build().body.settings.idp.serviceAccount).toMatchObject({ ref: 'env:IDP_SERVICE_ACCOUNT' });
  });
});
