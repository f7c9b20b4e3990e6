/**
 * `idp_service_account` (docs/authentication.md "Groups from the directory"): base64 of a JSON object
 * whose fields depend on `idp_provider`. Part of the plan contract, like redis-url.ts: the compiler
 * checks the value with it (compiler/validate/rules/invalid-service-account.ts), and the runtime
 * (runtime/sessions/directory/) reads the same value with it, since the plan keeps it only inside
 * the secret.
 */

/** The providers with a directory, and the fields their service account must hold. */
export const SERVICE_ACCOUNT_FIELDS = {
  gitlab: ['private_token'],
  google: ['client_email', 'private_key', 'impersonate_user'],
  azure: ['client_id', 'client_secret', 'directory_id'],
  okta: ['api_key'],
  github: ['username', 'personal_access_token'],
} as const satisfies Record<string, readonly string[]>;

/** Optional fields (API bases for national or self-hosted clouds, and tests), all URLs. */
export const SERVICE_ACCOUNT_URLS: Readonly<Record<DirectoryProvider, readonly string[]>> = {
  gitlab: ['api_url'],
  google: ['api_url', 'token_uri'],
  azure: ['api_url', 'login_url', 'graph_url'],
  okta: ['api_url'],
  github: ['api_url'],
};

export type DirectoryProvider = keyof typeof SERVICE_ACCOUNT_FIELDS;

export const isDirectoryProvider = (p: string | null | undefined): p is DirectoryProvider => typeof p === 'string' && Object.hasOwn(SERVICE_ACCOUNT_FIELDS, p);

/** A parsed service account: the JSON object's string fields. */
export interface ServiceAccount {
  readonly provider: DirectoryProvider;
  readonly fields: Readonly<Record<string, string>>;
}

export type ServiceAccountResult =
  | { readonly ok: true; readonly account: ServiceAccount }
  | { readonly ok: false; readonly problem: string; readonly field?: string };

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/**
 * Reads a service account for `provider`. Never echoes the value (it is a secret): a problem names
 * the field, never its content.
 */
export function parseServiceAccount(provider: DirectoryProvider, text: string): ServiceAccountResult {
  const t = text.trim();
  if (t === '' || !BASE64.test(t) || (t.includes('=') && t.length % 4 !== 0)) return { ok: false, problem: 'is not valid base64' };
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(t, 'base64').toString('utf8'));
  } catch {
    return { ok: false, problem: 'does not decode to JSON' };
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) return { ok: false, problem: 'does not decode to a JSON object' };
  const obj = json as Record<string, unknown>;
  const fields: Record<string, string> = {};
  for (const [k, v] of Object.entries(obj)) if (typeof v === 'string') fields[k] = v;
  for (const f of SERVICE_ACCOUNT_FIELDS[provider]) {
    const v = obj[f];
    if (v === undefined || v === null || v === '') return { ok: false, problem: `has no \`${f}\``, field: f };
    if (typeof v !== 'string') return { ok: false, problem: `has a \`${f}\` that is not a string`, field: f };
  }
  for (const f of SERVICE_ACCOUNT_URLS[provider]) {
    const v = obj[f];
    if (v === undefined) continue;
    if (typeof v !== 'string' || !/^https?:\/\//.test(v) || !URL.canParse(v)) return { ok: false, problem: `has a \`${f}\` that is not an http(s) URL`, field: f };
  }
  if (provider === 'google' && !fields['private_key']!.includes('PRIVATE KEY-----')) {
    return { ok: false, problem: 'has a `private_key` that is not a PEM private key', field: 'private_key' };
  }
  return { ok: true, account: { provider, fields } };
}
