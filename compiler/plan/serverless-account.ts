/**
 * `hostedcloud_serverless_authentication_service_account` (docs/authentication.md "Serverless
 * upstreams"): base64 of a cloud service-account key file, the JSON object whose `client_email` and
 * `private_key` (PEM) sign the assertion exchanged at its `token_uri` for an ID token. Part of the
 * plan contract, like service-account.ts: the compiler checks the value with it
 * (compiler/validate/rules/invalid-serverless-service-account.ts, SVC3046) and the runtime reads the
 * key with it (runtime/authn/serverless-token.ts), since the plan keeps the value only inside the
 * secret. `token_uri` may be left out (the runtime then uses Google's endpoint); when given it must
 * be an http(s) URL. A problem names the field, never the value (it is a secret).
 */

export type ServerlessKeyProblem = { readonly problem: string; readonly field?: string };

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** What is wrong with a decoded key file (`key`, the parsed JSON), or undefined when it can be used. */
export function serverlessKeyProblem(key: unknown): ServerlessKeyProblem | undefined {
  if (key === null || typeof key !== 'object' || Array.isArray(key)) return { problem: 'does not decode to a JSON object' };
  const k = key as Record<string, unknown>;
  for (const field of ['client_email', 'private_key'] as const) {
    const v = k[field];
    if (v === undefined || v === null || v === '') return { problem: `has no \`${field}\``, field };
    if (typeof v !== 'string') return { problem: `has a \`${field}\` that is not a string`, field };
  }
  if (!/-----BEGIN (RSA )?PRIVATE KEY-----/.test(k['private_key'] as string)) return { problem: 'has a `private_key` that is not a PEM private key', field: 'private_key' };
  const uri = k['token_uri'];
  if (uri !== undefined && (typeof uri !== 'string' || !/^https?:\/\//.test(uri) || !URL.canParse(uri))) return { problem: 'has a `token_uri` that is not an http(s) URL', field: 'token_uri' };
  return undefined;
}

/** What is wrong with the setting's value (base64 of the key file), or undefined when it can be used. */
export function serverlessAccountProblem(text: string): ServerlessKeyProblem | undefined {
  const t = text.trim();
  if (t === '' || !BASE64.test(t) || (t.includes('=') && t.length % 4 !== 0)) return { problem: 'is not valid base64' };
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(t, 'base64').toString('utf8'));
  } catch {
    return { problem: 'does not decode to JSON' };
  }
  return serverlessKeyProblem(json);
}
