/**
 * `metrics-basic-auth-empty-credential` (SVC3041, docs/security.md S42): a `metrics_basic_auth` that
 * decodes to `user:` / `:password` / `:` compiled, and `Basic Og==` then opened `/metrics`. The
 * rule refuses it in each form the setting comes in (inline, environment, `_file`), located at the
 * setting, and leaves values lowering already refused to lowering (one report each).
 */
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { BASE_SETTINGS, compileText } from '../../../support/compile-text.ts';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const ROUTES = [{ from: 'https://app.example.com', to: 'http://10.0.0.1', policy: 'allow if email is "alice@example.com"' }];

/** `name path` of the settings diagnostics, inline-secret left out. */
function report(settings: Record<string, unknown>, env: Record<string, string> = {}, files: Record<string, string> = {}) {
  const res = compileText(stringify({ ...BASE_SETTINGS, metrics_address: '127.0.0.1:9090', ...settings, routes: ROUTES }), 'config.yaml', env, files);
  return { res, names: res.diagnostics.filter((d) => d.code.startsWith('SVC3') && d.name !== 'inline-secret').map((d) => `${d.name} ${d.path ?? '-'}`) };
}

describe('metrics-basic-auth-empty-credential', () => {
  it.each([
    ['prometheus:', 'password'],
    [':pw', 'user name'],
    [':', 'user name and password'],
  ])('refuses %j inline, at the setting, naming what is empty', (pair, empty) => {
    const { res, names } = report({ metrics_basic_auth: b64(pair) });
    expect(names).toEqual(['metrics-basic-auth-empty-credential metrics_basic_auth']);
    const d = res.diagnostics.find((x) => x.code === 'SVC3041')!;
    expect(d.severity).toBe('error');
    expect(d.message).toBe(`\`metrics_basic_auth\` decodes to \`username:password\` with an empty ${empty}`);
    expect(d.message).not.toContain(b64(pair));
    expect(d.span?.source.name).toBe('config.yaml');
    expect(res.plan).toBeUndefined();
  });

  it('refuses it from the environment and from a file', () => {
    expect(report({}, { METRICS_BASIC_AUTH: b64('prometheus:') }).names).toEqual(['metrics-basic-auth-empty-credential metrics_basic_auth']);
    expect(report({ metrics_basic_auth_file: 'run/metrics' }, {}, { 'run/metrics': `${b64(':')}\n` }).names).toEqual(['metrics-basic-auth-empty-credential metrics_basic_auth_file']);
  });

  it('accepts a full pair; a colon in the password is part of the password', () => {
    expect(report({ metrics_basic_auth: b64('prometheus:s3cret') }).names).toEqual([]);
    expect(report({ metrics_basic_auth: b64('prometheus::') }).names).toEqual([]);
    expect(report({ metrics_basic_auth_file: 'run/metrics' }, {}, { 'run/metrics': b64('a:b') }).names).toEqual([]);
  });

  it('leaves to lowering what lowering refuses: no colon, bad base64, an unreadable file, both forms', () => {
    expect(report({ metrics_basic_auth: b64('prometheus') }).names).toEqual(['metrics-basic-auth-without-colon metrics_basic_auth']);
    expect(report({ metrics_basic_auth: 'not base64!' }).names).toEqual(['invalid-base64 metrics_basic_auth']);
    expect(report({ metrics_basic_auth_file: 'missing' }).names).toEqual(['file-unreadable metrics_basic_auth_file']);
    expect(report({ metrics_basic_auth: b64(':'), metrics_basic_auth_file: 'run/metrics' }, {}, { 'run/metrics': b64(':') }).names).toEqual(['mutually-exclusive-settings metrics_basic_auth_file']);
  });
});
