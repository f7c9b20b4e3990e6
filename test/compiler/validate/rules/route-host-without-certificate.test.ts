/**
 * `route-host-without-certificate` (SVC3542): with TLS served from configured certificates only, a
 * route host none of them covers was answered with a generated self-signed certificate and nothing
 * said so. The rule warns at the route's `from`, once per host; it stays quiet without TLS
 * (`insecure_server`), with `autocert` (which obtains that host's certificate), for covered hosts
 * (exact, or a wildcard one label deep) and when a certificate did not lower (its own error).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { BASE_SETTINGS, compileText } from '../../../support/compile-text.ts';

// TEST ONLY certificate (app.example.com, *.apps.example.com) and its key, from the golden case.
const CASE = join(import.meta.dirname, '../../../../fixtures/cases/route-host-without-certificate');
const FILES = { 'c.pem': readFileSync(join(CASE, 'test-only-cert.pem'), 'utf8'), 'k.pem': readFileSync(join(CASE, 'test-only-key.pem'), 'utf8') };
const TLS = { insecure_server: undefined, certificate_file: 'c.pem', certificate_key_file: 'k.pem' };
const POLICY = 'allow if email is "alice@example.com"';

/** `path host` of each SVC3542 for routes from `hosts` under BASE_SETTINGS plus `settings`. */
function warned(settings: Record<string, unknown>, hosts: readonly string[], files: Record<string, string> = FILES): string[] {
  const config: Record<string, unknown> = { ...BASE_SETTINGS, ...settings, routes: hosts.map((h) => ({ from: `https://${h}`, to: 'http://10.0.0.1', policy: POLICY })) };
  for (const [k, v] of Object.entries(config)) if (v === undefined) delete config[k];
  return compileText(stringify(config), 'config.yaml', {}, files)
    .diagnostics.filter((d) => d.code === 'SVC3542')
    .map((d) => `${d.path} ${/`([^`]+)`/.exec(d.message)?.[1]}`);
}

describe('route-host-without-certificate', () => {
  it('warns at the from of a host no configured certificate covers, once per host', () => {
    expect(warned(TLS, ['app.example.com', 'other.example.com', 'OTHER.example.com.'])).toEqual(['routes[1].from other.example.com']);
  });

  it('takes a wildcard name to cover exactly one label', () => {
    expect(warned(TLS, ['one.apps.example.com', 'x.y.apps.example.com', 'apps.example.com'])).toEqual([
      'routes[1].from x.y.apps.example.com',
      'routes[2].from apps.example.com',
    ]);
  });

  it('is a warning with the three ways out in its help', () => {
    const config = stringify({ ...BASE_SETTINGS, insecure_server: false, certificate_file: 'c.pem', certificate_key_file: 'k.pem', routes: [{ from: 'https://other.example.com', to: 'http://10.0.0.1', policy: POLICY }] });
    const res = compileText(config, 'config.yaml', {}, FILES);
    const d = res.diagnostics.find((x) => x.code === 'SVC3542')!;
    expect(d.severity).toBe('warning');
    expect(d.span?.source.name).toBe('config.yaml');
    expect(d.help).toContain('add a certificate covering `other.example.com`');
    expect(d.help).toContain('`autocert`');
    expect(d.help).toContain('`insecure_server: true`');
    expect(res.plan).toBeDefined();
  });

  it('stays quiet without TLS, with autocert, for IP hosts, and when a certificate did not lower', () => {
    expect(warned({ insecure_server: true }, ['other.example.com'])).toEqual([]);
    expect(warned({ ...TLS, autocert: true, autocert_dir: '/var/lib/svc' }, ['other.example.com'])).toEqual([]);
    expect(warned(TLS, ['10.0.0.5', '[2001:db8::1]'])).toEqual([]);
    expect(warned({ insecure_server: undefined, certificate_file: 'c.pem', certificate_key_file: 'k.pem', certificates: [{ cert: 'missing.pem', key: 'missing-key.pem' }] }, ['other.example.com'])).toEqual([]);
  });
});
