/**
 * Secrets from files (`cookie_secret_file`, `shared_secret_file`, `idp_client_secret_file`,
 * `signing_key_file`, `metrics_basic_auth_file`, `databroker_storage_connection_string_file`), as
 * operators mount them in containers: the plan holds `{ref: "file:PATH", fingerprint}` and never
 * the value; one trailing line break is ignored; a missing, empty or invalid file is a located error;
 * a file and its inline form together are an error; `svc diff` sees a changed file by fingerprint.
 */
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { diffPlans } from '../../../cli/diff/diff.ts';
import { renderDiffText } from '../../../cli/diff/render-text.ts';
import { lineCol } from '../../../compiler/source/source-file.ts';
import { fingerprint } from '../../../compiler/ir/material.ts';
import { BASE_SETTINGS, TEST_SECRET, compileText } from '../../support/compile-text.ts';

const OTHER_SECRET = Buffer.alloc(32, 9).toString('base64');
const PEM = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string; // TEST KEY ONLY
const REDIS = 'redis://svc:test-only-redis-password@redis.internal:6379/2';
const routes = [{ from: 'https://app.example.com', to: 'http://127.0.0.1:9000', allow_any_authenticated_user: true }];
const { shared_secret: _s, cookie_secret: _c, idp_client_secret: _i, ...base } = BASE_SETTINGS;

/** The six secret files, each ending in a line break as `echo` and secret mounts write them. */
const FILES: Record<string, string> = {
  'run/cookie': `${TEST_SECRET}\n`,
  'run/shared': `${OTHER_SECRET}\r\n`,
  'run/client': 'test-only-client-secret\n',
  'run/signing.pem': PEM,
  'run/metrics': `${Buffer.from('prom:test-only-metrics-password').toString('base64')}\n`,
  'run/redis': `${REDIS}\n`,
};
const FILE_SETTINGS = {
  cookie_secret_file: 'run/cookie',
  shared_secret_file: 'run/shared',
  idp_client_secret_file: 'run/client',
  signing_key_file: 'run/signing.pem',
  metrics_address: ':9090',
  metrics_basic_auth_file: 'run/metrics',
  databroker_storage_type: 'redis',
  databroker_storage_connection_string_file: 'run/redis',
};

function compileWith(settings: Record<string, unknown>, files: Record<string, string> = FILES) {
  return compileText(stringify({ ...base, ...settings, routes }), 'config.yaml', {}, files);
}

/** The error diagnostics as `code key file:line:col`. */
function located(settings: Record<string, unknown>, files: Record<string, string> = FILES): string[] {
  return compileWith(settings, files)
    .diagnostics.filter((d) => d.severity === 'error')
    .map((d) => {
      const pos = d.span ? lineCol(d.span.source, d.span.start) : undefined;
      return `${d.code} ${d.path ?? ''} ${d.span?.source.name ?? '-'}:${pos?.line ?? 0}:${pos?.column ?? 0}`;
    });
}

/** Where the value of top-level `key` starts in the config `compileWith(FILE_SETTINGS)` writes. */
function at(key: string): string {
  const lines = stringify({ ...base, ...FILE_SETTINGS, routes }).split('\n');
  const line = lines.findIndex((l) => l.startsWith(`${key}: `));
  return `config.yaml:${line + 1}:${key.length + 3}`;
}

describe('secret settings from files', () => {
  it('puts a reference and the fingerprint of the file in the plan, never the value', () => {
    const r = compileWith(FILE_SETTINGS);
    expect(r.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    const s = r.plan!.body.settings;
    const ref = (path: string) => ({ ref: `file:${path}`, fingerprint: fingerprint(FILES[path]!) });
    expect(s.cookie.secret).toEqual(ref('run/cookie'));
    expect(s.mode.sharedSecret).toEqual(ref('run/shared'));
    expect(s.idp.clientSecret).toEqual(ref('run/client'));
    expect(s.identity.signingKey).toEqual(ref('run/signing.pem'));
    expect(s.identity.signingAlgorithm).toBe('ES256');
    expect(s.metrics.basicAuth).toEqual(ref('run/metrics'));
    expect(s.databroker.storage.connectionString).toEqual(ref('run/redis'));
    expect(s.databroker.storage.connection).toMatchObject({ kind: 'redis', hosts: [{ host: 'redis.internal', port: 6379 }], db: 2, username: 'svc' });
    // None of the values is anywhere in the plan, and no inline-secret warning is given.
    const text = JSON.stringify(r.plan);
    for (const v of [TEST_SECRET, OTHER_SECRET, 'test-only-client-secret', 'BEGIN PRIVATE KEY', 'test-only-metrics-password', 'test-only-redis-password']) expect(text).not.toContain(v);
    expect(r.diagnostics.map((d) => d.code)).not.toContain('SVC3006');
    // The files are inputs, watched for reload.
    expect(r.plan!.inputs).toEqual(expect.arrayContaining(Object.keys(FILES)));
  });

  it('satisfies the required-setting checks like the inline forms', () => {
    const r = compileWith({ cookie_secret_file: 'run/cookie', shared_secret_file: 'run/shared', idp_client_secret_file: 'run/client' });
    expect(r.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
  });

  it('ignores exactly one trailing line break (LF or CRLF)', () => {
    const with32 = (content: string) => located({ ...FILE_SETTINGS }, { ...FILES, 'run/cookie': content });
    expect(with32(TEST_SECRET)).toEqual([]);
    expect(with32(`${TEST_SECRET}\n`)).toEqual([]);
    expect(with32(`${TEST_SECRET}\r\n`)).toEqual([]);
    // A second line break is part of the value: a control character in a secret.
    expect(with32(`${TEST_SECRET}\n\n`)).toEqual([`SVC3022 cookie_secret_file ${at('cookie_secret_file')}`]);
    expect(located({ ...FILE_SETTINGS }, { ...FILES, 'run/client': 'line one\nline two\n' })).toEqual([`SVC3022 idp_client_secret_file ${at('idp_client_secret_file')}`]);
  });

  it('reports a missing, empty or invalid file at its `_file` key', () => {
    expect(located({ ...FILE_SETTINGS, cookie_secret_file: 'run/nope' })).toEqual([`SVC3007 cookie_secret_file ${at('cookie_secret_file')}`]);
    expect(located({ ...FILE_SETTINGS }, { ...FILES, 'run/client': '\n' })).toEqual([`SVC3022 idp_client_secret_file ${at('idp_client_secret_file')}`]);
    expect(located({ ...FILE_SETTINGS }, { ...FILES, 'run/cookie': 'not base64!\n' })).toEqual([`SVC3004 cookie_secret_file ${at('cookie_secret_file')}`]);
    expect(located({ ...FILE_SETTINGS }, { ...FILES, 'run/shared': `${Buffer.alloc(16).toString('base64')}\n` })).toEqual([`SVC3005 shared_secret_file ${at('shared_secret_file')}`]);
    expect(located({ ...FILE_SETTINGS }, { ...FILES, 'run/signing.pem': 'not a key\n' })).toEqual([`SVC3009 signing_key_file ${at('signing_key_file')}`]);
    expect(located({ ...FILE_SETTINGS }, { ...FILES, 'run/redis': 'http://redis.internal\n' })).toEqual([`SVC3013 databroker_storage_connection_string_file ${at('databroker_storage_connection_string_file')}`]);
  });

  it('refuses a secret given both inline and as a file', () => {
    for (const [inline, value] of [['cookie_secret', TEST_SECRET], ['shared_secret', TEST_SECRET], ['idp_client_secret', 'x'], ['signing_key', Buffer.from(PEM).toString('base64')], ['metrics_basic_auth', 'eDp5'], ['databroker_storage_connection_string', REDIS]] as const) {
      const codes = compileWith({ ...FILE_SETTINGS, [inline]: value }).diagnostics.filter((d) => d.severity === 'error');
      expect(codes.map((d) => [d.code, d.path]), inline).toEqual([['SVC3011', `${inline}_file`]]);
    }
  });

  it('reads the `_file` forms from the environment too', () => {
    const env = { COOKIE_SECRET_FILE: 'run/cookie', SHARED_SECRET_FILE: 'run/shared', IDP_CLIENT_SECRET_FILE: 'run/client' };
    const r = compileText(stringify({ ...base, routes }), 'config.yaml', env, FILES);
    expect(r.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    expect(r.plan!.body.settings.cookie.secret).toEqual({ ref: 'file:run/cookie', fingerprint: fingerprint(FILES['run/cookie']!) });
  });

  it('lets `svc diff` say a secret file changed, by fingerprint, without printing it', () => {
    const a = compileWith(FILE_SETTINGS).plan!;
    const b = compileWith(FILE_SETTINGS, { ...FILES, 'run/cookie': `${OTHER_SECRET}\n` }).plan!;
    const d = diffPlans(a, b);
    expect(d.settings.map((c) => c.path)).toEqual(['cookie.secret']);
    const text = renderDiffText(d);
    expect(text).toContain('~ cookie_secret: secret changed (file:run/cookie)');
    expect(text).not.toContain(OTHER_SECRET);
    expect(text).not.toContain(TEST_SECRET);
  });
});
