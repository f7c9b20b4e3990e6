/**
 * `autocert_dir`'s default (docs/autocert.md "Storage directory"): an installation may name its own
 * with `SVC_DEFAULT_AUTOCERT_DIR` (svc's container image: `/data/autocert`, its volume). That default
 * comes before the XDG data home and `HOME`, gives way to `autocert_dir` / `AUTOCERT_DIR`, and is not
 * an operator's setting: without `autocert` it draws no SVC3025 "has no effect", where
 * `AUTOCERT_DIR` does.
 */
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { BASE_SETTINGS, compileText } from '../../support/compile-text.ts';

const ROUTES = [{ from: 'https://app.example.com', to: 'http://10.0.0.1:8080', policy: 'allow if email is "alice@example.com"' }];

function compileWith(settings: Record<string, unknown>, env: Record<string, string>) {
  // BASE_SETTINGS serves plain HTTP (`insecure_server`), which autocert refuses.
  const result = compileText(stringify({ ...BASE_SETTINGS, insecure_server: false, ...settings, routes: ROUTES }), 'config.yaml', env);
  // BASE_SETTINGS writes its test secrets inline: those warnings are not about autocert.
  return { result, codes: result.diagnostics.filter((d) => d.name !== 'inline-secret').map((d) => d.code) };
}

describe('autocert_dir default', () => {
  it('the installation default comes first, before XDG_DATA_HOME and HOME', () => {
    const { result } = compileWith({ autocert: true }, { SVC_DEFAULT_AUTOCERT_DIR: '/data/autocert', XDG_DATA_HOME: '/var/lib', HOME: '/home/svc' });
    expect(result.plan!.body.settings.autocert.dir).toBe('/data/autocert');
    expect(compileWith({ autocert: true }, { XDG_DATA_HOME: '/var/lib', HOME: '/home/svc' }).result.plan!.body.settings.autocert.dir).toBe('/var/lib/svc');
  });

  it('autocert_dir and AUTOCERT_DIR override it', () => {
    expect(compileWith({ autocert: true, autocert_dir: '/srv/certs' }, { SVC_DEFAULT_AUTOCERT_DIR: '/data/autocert' }).result.plan!.body.settings.autocert.dir).toBe('/srv/certs');
    expect(compileWith({ autocert: true }, { SVC_DEFAULT_AUTOCERT_DIR: '/data/autocert', AUTOCERT_DIR: '/srv/env' }).result.plan!.body.settings.autocert.dir).toBe('/srv/env');
  });

  it('without autocert: no SVC3025 for the installation default, SVC3025 for AUTOCERT_DIR', () => {
    expect(compileWith({}, { SVC_DEFAULT_AUTOCERT_DIR: '/data/autocert' }).codes).not.toContain('SVC3025');
    expect(compileWith({}, { AUTOCERT_DIR: '/data/autocert' }).codes).toContain('SVC3025');
  });
});
