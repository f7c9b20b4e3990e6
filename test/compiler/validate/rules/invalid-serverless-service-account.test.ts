/**
 * `invalid-serverless-service-account` (SVC3046): a `hostedcloud_serverless_authentication_service_account`
 * that is not base64 of a service-account key file (`client_email`, a PEM `private_key`, an http(s)
 * `token_uri` when given) compiled, and svc run refused it only when it started. The rule refuses
 * it inline and from the environment, located at the setting, naming the field and never the value.
 */
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { BASE_SETTINGS, compileText } from '../../../support/compile-text.ts';
import { parseServiceAccountKey } from '../../../../runtime/authn/serverless-token.ts';

const KEY = 'hostedcloud_serverless_authentication_service_account';
const b64 = (o: unknown) => Buffer.from(typeof o === 'string' ? o : JSON.stringify(o)).toString('base64');
const PEM = '-----BEGIN PRIVATE KEY-----\nTEST ONLY\n-----END PRIVATE KEY-----\n';
const VALID = { type: 'service_account', client_email: 'svc@test-only.iam.gserviceaccount.com', private_key: PEM, private_key_id: 'test-only', token_uri: 'https://oauth2.googleapis.com/token' };
const ROUTES = [{ from: 'https://app.example.com', to: 'https://app-abc.run.example', allow_public_unauthenticated_access: true, enable_hostedcloud_serverless_authentication: true }];

function report(settings: Record<string, unknown>, env: Record<string, string> = {}) {
  const res = compileText(stringify({ ...BASE_SETTINGS, ...settings, routes: ROUTES }), 'config.yaml', env);
  const diags = res.diagnostics.filter((d) => d.name === 'invalid-serverless-service-account');
  return { res, diags, messages: diags.map((d) => d.message) };
}

describe('invalid-serverless-service-account', () => {
  it('accepts a key file, with or without token_uri', () => {
    expect(report({ [KEY]: b64(VALID) }).diags).toEqual([]);
    const { token_uri: _t, ...noUri } = VALID;
    expect(report({ [KEY]: b64(noUri) }).diags).toEqual([]);
    expect(report({}).diags).toEqual([]);
  });

  it.each(['client_email', 'private_key'])('a key file without `%s` is an error naming the field, at the setting, never the value', (field) => {
    const account: Record<string, string> = { ...VALID };
    delete account[field];
    const { res, diags, messages } = report({ [KEY]: b64(account) });
    expect(messages).toEqual([`\`${KEY}\` has no \`${field}\``]);
    expect(diags[0]!.severity).toBe('error');
    expect(diags[0]!.code).toBe('SVC3046');
    expect(diags[0]!.path).toBe(KEY);
    expect(diags[0]!.span?.source.name).toBe('config.yaml');
    expect(res.plan).toBeUndefined();
    for (const v of [PEM, 'TEST ONLY', VALID.client_email]) expect(messages[0]).not.toContain(v);
  });

  it('refuses what is not base64, not JSON, not an object, a key that is not PEM, a token_uri that is not a URL', () => {
    expect(report({ [KEY]: JSON.stringify(VALID) }).messages).toEqual([`\`${KEY}\` is not valid base64`]);
    expect(report({ [KEY]: b64('client_email=x') }).messages).toEqual([`\`${KEY}\` does not decode to JSON`]);
    expect(report({ [KEY]: b64([VALID]) }).messages).toEqual([`\`${KEY}\` does not decode to a JSON object`]);
    expect(report({ [KEY]: b64({ ...VALID, private_key: 'MIIEvQIBADANBgkqhkiG9w0BAQEFAASC' }) }).messages).toEqual([`\`${KEY}\` has a \`private_key\` that is not a PEM private key`]);
    expect(report({ [KEY]: b64({ ...VALID, client_email: 7 }) }).messages).toEqual([`\`${KEY}\` has a \`client_email\` that is not a string`]);
    expect(report({ [KEY]: b64({ ...VALID, token_uri: 'oauth2.googleapis.com/token' }) }).messages).toEqual([`\`${KEY}\` has a \`token_uri\` that is not an http(s) URL`]);
  });

  it('checks a value from the environment, located there', () => {
    const { diags } = report({}, { HOSTEDCLOUD_SERVERLESS_AUTHENTICATION_SERVICE_ACCOUNT: b64({ client_email: 'x@y' }) });
    expect(diags.map((d) => d.message)).toEqual([`\`${KEY}\` has no \`private_key\``]);
    expect(diags[0]!.span?.source.name).toBe('env:HOSTEDCLOUD_SERVERLESS_AUTHENTICATION_SERVICE_ACCOUNT');
  });

  it('svc run reads a key file with the same rule (a plan compiled elsewhere is refused at start alike)', () => {
    expect(() => parseServiceAccountKey(JSON.stringify({ ...VALID, private_key: 'not pem' }), KEY)).toThrow(`${KEY} has a \`private_key\` that is not a PEM private key`);
    expect(() => parseServiceAccountKey(JSON.stringify({ ...VALID, token_uri: 'nope' }), KEY)).toThrow(/token_uri` that is not an http\(s\) URL/);
    expect(parseServiceAccountKey(JSON.stringify(VALID), KEY).client_email).toBe(VALID.client_email);
  });
});
