import { compile, type CompileResult } from '../../compiler/compile.ts';

/** Compiles config text as if it were the file `name`, with `env` and optional extra files. */
export function compileText(text: string, name = 'config.yaml', env: Record<string, string> = {}, files: Record<string, string> = {}): CompileResult {
  return compile({
    configPath: name,
    env,
    readFile: (p) => {
      if (p === name) return { ok: true, data: Buffer.from(text) };
      const f = Object.hasOwn(files, p) ? files[p] : undefined; // a file named `toString` is not Object.prototype's
      return f === undefined ? { ok: false, reason: 'no such file' } : { ok: true, data: Buffer.from(f) };
    },
  });
}

/** Base64 of 32 fixed bytes: a valid test-only secret. */
export const TEST_SECRET = Buffer.alloc(32, 1).toString('base64');

/** The settings every valid test config needs (all-in-one, plain HTTP). */
export const BASE_SETTINGS: Readonly<Record<string, unknown>> = {
  insecure_server: true,
  shared_secret: TEST_SECRET,
  cookie_secret: TEST_SECRET,
  authenticate_service_url: 'https://auth.example.com',
  signout_redirect_url: 'https://example.com/',
  idp_provider: 'oidc',
  idp_provider_url: 'https://idp.example.com',
  idp_client_id: 'client',
  idp_client_secret: 'client-secret',
};
