/**
 * runtime/plan/capabilities.ts: every field of the plan schema is classified, a field said to be
 * honoured is read by the runtime, and each refused or partly honoured setting is found, named and
 * located in a plan that uses it (and in no plan that does not).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { PlanEnvelope } from '../../../compiler/plan/types.ts';
import { ROUTE_FIELDS } from '../../../compiler/schema/config-schema.ts';
import { SETTINGS } from '../../../compiler/settings/table.ts';
import { assertSupported, CAPABILITIES, capabilityOf, errorLine, noteLine, partialUses, refusal, settingUses, UNSUPPORTED_SETTING, UnsupportedSettingsError } from '../../../runtime/plan/capabilities.ts';
import { BASE_SETTINGS, compileText } from '../../support/compile-text.ts';
import { makeCa, type Issued } from '../tls/pki.ts';

const ROOT = join(import.meta.dirname, '../../..');
type Schema = Record<string, unknown>;
const SCHEMA = JSON.parse(readFileSync(join(ROOT, 'schemas/plan.schema.json'), 'utf8')) as Schema & { $defs: Record<string, Schema>; properties: { body: Schema } };
/** Value types: a secret, PEM, address or policy is one setting, not fields of its own. */
const VALUE_TYPES = new Set(['hostPort', 'secret', 'pem', 'policy']);

/** Every field path of the plan body: `settings.server.address`, `routes[].tls.customCa`, … */
function bodyPaths(): string[] {
  const out = new Set<string>();
  const walk = (s: Schema, path: string): void => {
    const ref = s['$ref'];
    if (typeof ref === 'string') {
      const name = ref.split('/').pop()!;
      if (!VALUE_TYPES.has(name)) walk(SCHEMA.$defs[name]!, path);
      return;
    }
    for (const k of ['anyOf', 'oneOf'] as const) for (const v of (s[k] as Schema[] | undefined) ?? []) walk(v, path);
    if (s['items']) walk(s['items'] as Schema, `${path}[]`);
    for (const [k, v] of Object.entries((s['properties'] as Record<string, Schema> | undefined) ?? {})) {
      const p = path === '' ? k : `${path}.${k}`;
      out.add(p);
      walk(v, p);
    }
  };
  walk(SCHEMA.properties.body, '');
  return [...out];
}

/** The sources `svc run` serves with: runtime/, and the CLI modules of `svc run` (its logs). */
function runSources(): string {
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const e of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const rel = `${dir}/${e.name}`;
      if (e.isDirectory()) walk(rel);
      else if (e.name.endsWith('.ts') && rel !== 'runtime/plan/capabilities.ts') files.push(rel);
    }
  };
  walk('runtime');
  files.push('cli/run-command.ts');
  return files.map((f) => readFileSync(join(ROOT, f), 'utf8')).join('\n');
}

/** Whether the sources read property `name`: `x.name`, or `{ …, name, … } =` destructuring. */
function reads(sources: string, name: string): boolean {
  return new RegExp(`\\.${name}\\b`).test(sources) || new RegExp(`\\{[^{}]*\\b${name}\\b[^{}]*\\}\\s*=`).test(sources);
}

const lastName = (path: string) => path.split('.').pop()!.replace('[]', '');

describe('every plan field is classified', () => {
  const paths = bodyPaths();

  it('the walk sees the whole schema (settings and route fields)', () => {
    expect(paths).toContain('settings.metrics.address');
    expect(paths).toContain('settings.databroker.storage.connection.hosts');
    expect(paths).toContain('routes[].lb.ringHash.hashFunction');
    expect(paths).toContain('routes[].healthChecks[].check.expectedStatuses[].start');
    expect(paths.length).toBeGreaterThan(200);
  });

  it('each field is honoured, compiled into another, honoured partly, or refused', () => {
    // A container (`settings`, `settings.server`, `routes`) is classified by its fields.
    const container = (p: string) => paths.some((q) => q.startsWith(`${p}.`) || q.startsWith(`${p}[`));
    const unclassified = paths.filter((p) => capabilityOf(p) === undefined && !container(p));
    expect(unclassified).toEqual([]);
  });

  it('a field said to be honoured (fully or partly) is read by the runtime', () => {
    const sources = runSources();
    const unread = paths.filter((p) => {
      const c = capabilityOf(p);
      return c !== undefined && (c.support === 'honoured' || c.support === 'partial') && !reads(sources, lastName(p));
    });
    expect(unread).toEqual([]);
  });

  it('the check can fail: a field nothing reads is not "read"', () => {
    const sources = runSources();
    expect(reads(sources, 'bindConfigFreebind')).toBe(false);
    expect(reads(sources, 'adminProfilePath')).toBe(false);
    expect(reads(sources, 'timeoutReadMs')).toBe(true);
    expect(reads(sources, 'hashFunction')).toBe(true); // destructured in ring-hash.ts
  });

  it('a compiled field is folded into honoured fields', () => {
    for (const c of CAPABILITIES) if (c.support === 'compiled') for (const v of c.via) expect(capabilityOf(v)?.support, `${c.paths.join()} via ${v}`).toBe('honoured');
  });

  it('every classified path exists in the schema (no stale entries)', () => {
    for (const c of CAPABILITIES) for (const p of c.paths) expect(paths, p).toContain(p);
  });

  it('every setting of the config is named by the classification of its plan field', () => {
    for (const s of SETTINGS) {
      if (s.key === 'routes' || s.key === 'policy') continue;
      const c = capabilityOf(`settings.${s.plan}`);
      expect(c?.keys, `${s.key} → settings.${s.plan}`).toContain(s.key);
    }
  });

  it('every route field of the config is named by a route classification', () => {
    const named = new Set(CAPABILITIES.filter((c) => c.paths.some((p) => p.startsWith('routes[]'))).flatMap((c) => c.keys));
    expect(Object.keys(ROUTE_FIELDS).filter((k) => !named.has(k))).toEqual([]);
  });

  it('docs/running.md names every refused and partly honoured setting', () => {
    const doc = readFileSync(join(ROOT, 'docs/running.md'), 'utf8');
    for (const c of CAPABILITIES) if (c.support === 'refused' || c.support === 'partial') expect(doc, c.keys[0]).toContain(`\`${c.keys[0]}\``);
  });
});

const route = { from: 'https://app.example.com', to: 'http://127.0.0.1:9', allow_public_unauthenticated_access: true };

function plan(settings: Record<string, unknown>, routes: unknown[] = [route], env: Record<string, string> = {}, files: Record<string, string> = {}): PlanEnvelope {
  const r = compileText(stringify({ ...BASE_SETTINGS, ...settings, routes }), 'config.yaml', env, files);
  if (!r.plan) throw new Error(r.diagnostics.filter((d) => d.severity === 'error').map((d) => `${d.code} ${d.message}`).join('\n'));
  return r.plan;
}

describe('uses of refused and partly honoured settings', () => {
  let pki: Issued;
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  beforeAll(async () => {
    pki = await makeCa('capabilities test');
  });

  it('a plan of honoured settings uses none', () => {
    const p = plan({ address: '127.0.0.1:8443', log_level: 'debug', proxy_log_level: 'error', svc_debug: true, services: 'all', timeout_read: '10s', set_response_headers: { 'X-A': 'b' } });
    expect(settingUses(p)).toEqual([]);
    expect(refusal(p)).toBeUndefined();
  });

  /** For each refused setting: settings (and files) that use it. */
  const REFUSED: Record<string, () => { settings: Record<string, unknown>; routes?: unknown[]; files?: Record<string, string> }> = {
    idp_service_account: () => ({ settings: { idp_service_account: 'c2VydmljZS1hY2NvdW50' } }),
    dp_admin_address: () => ({ settings: { dp_admin_address: ':9901' } }),
    dp_admin_access_log_path: () => ({ settings: { dp_admin_access_log_path: '/var/log/admin.log' } }),
    dp_admin_profile_path: () => ({ settings: { dp_admin_profile_path: '/tmp/profile' } }),
    dp_bind_config_freebind: () => ({ settings: { dp_bind_config_freebind: true } }),
    dp_bind_config_source_address: () => ({ settings: { dp_bind_config_source_address: '10.0.0.1' } }),
    enable_hostedcloud_serverless_authentication: () => ({ settings: {}, routes: [{ ...route, to: ['https://a.run.example', 'https://b.run.example'], enable_hostedcloud_serverless_authentication: true }] }),
    // A device route on a host outside the relying party id (example.com): the device page cannot serve it.
    policy: () => ({ settings: { services: 'proxy', shared_secret: 'c2hhcmVkIHNlY3JldCBvZiBjYXBhYmlsaXRpZXMgdGU=', authorize_service_url: 'https://authz.internal', databroker_service_url: 'https://db.internal', authenticate_service_url: 'https://authenticate.example.com' }, routes: [{ from: 'https://app.other.org', to: route.to, policy: 'allow if groups has "x" or not device approved' }] }),
  };

  it('every refused setting has a case here', () => {
    for (const c of CAPABILITIES) if (c.support === 'refused') expect(Object.keys(REFUSED), c.keys[0]).toContain(c.keys[0]);
  });

  it.each(Object.keys(REFUSED))('%s: refused, named and located', (key) => {
    const c = REFUSED[key]!();
    const p = plan(c.settings, c.routes, {}, c.files);
    const mine = settingUses(p).filter((u) => u.key === key || u.key === `${key}_file`);
    expect(mine).toHaveLength(1);
    const u = mine[0]!;
    expect(u.support).toBe('refused');
    const at = p.sourceMap.settings[u.key] ?? p.sourceMap.routes[0]!.fields[u.key];
    expect(at).toMatch(/^config\.yaml:\d+:\d+$/);
    expect(u.at).toBe(at);
    expect(refusal(p)!.split('\n')).toContain(`${at}: error ${UNSUPPORTED_SETTING} ${u.key}: ${u.route !== undefined ? `route ${u.route}: ` : ''}${u.reason}`);
    expect(noteLine(u)).toMatch(new RegExp(`^${at}: note: ${u.key}.* is not supported by svc run yet: `));
  });

  it('a device route is honoured in every mode under the relying party id (the authenticate host\'s registrable domain), refused elsewhere', () => {
    const device = { from: 'https://app.example.com', to: 'http://127.0.0.1:9', policy: 'allow if device approved' };
    const auth = { authenticate_service_url: 'https://authenticate.example.com' };
    expect(refusal(plan(auth, [device]))).toBeUndefined();
    // The registrable domain, not the parent: auth.corp.example.com serves app.example.com.
    expect(refusal(plan({ authenticate_service_url: 'https://auth.corp.example.com' }, [device]))).toBeUndefined();
    expect(refusal(plan({ authenticate_service_url: 'https://auth.corp.example.co.uk' }, [{ ...device, from: 'https://app.example.co.uk' }]))).toBeUndefined();
    const outside = refusal(plan(auth, [{ ...device, from: 'https://app.other.org' }]));
    expect(outside).toContain('`device` criterion needs the device page, served only on https route hosts');
    expect(outside).toMatch(/^config\.yaml:\d+:\d+: error SVC_ERR_UNSUPPORTED_SETTING policy: route /m);
    // A co.uk sibling is another registrable domain.
    expect(refusal(plan({ authenticate_service_url: 'https://auth.corp.example.co.uk' }, [{ ...device, from: 'https://app.other.co.uk' }]))).toContain('served only on https route hosts');
    // Split mode: the proxy reaches the devices over the data broker's gRPC interface.
    const split = { shared_secret: 'c2hhcmVkIHNlY3JldCBvZiBjYXBhYmlsaXRpZXMgdGU=', authorize_service_url: 'https://authz.internal', databroker_service_url: 'https://db.internal', ...auth };
    for (const services of ['proxy', 'authorize', 'authenticate', 'databroker']) expect(refusal(plan({ ...split, services }, [device])), services).toBeUndefined();
    // All-in-one with a data broker elsewhere.
    expect(refusal(plan({ ...auth, shared_secret: split.shared_secret, databroker_service_url: 'https://db.internal' }, [device]))).toBeUndefined();
  });

  it('S65: a device route is refused, located, when the authenticate host has no registrable domain', () => {
    const device = { from: 'https://app.example.com', to: 'http://127.0.0.1:9', policy: 'allow if device approved' };
    for (const url of ['https://127.0.0.1:8443', 'https://[::1]:8443', 'https://localhost:8443', 'https://co.uk']) {
      const r = refusal(plan({ authenticate_service_url: url }, [device]));
      expect(r, url).toMatch(/^config\.yaml:\d+:\d+: error SVC_ERR_UNSUPPORTED_SETTING policy: route .*the `device` criterion needs a WebAuthn relying party id/m);
      expect(r, url).toContain('its host has none (an IP address, `localhost`, a bare public suffix)');
    }
  });

  it('every role of a split deployment is honoured, with the authorize service URLs of the proxy role', () => {
    const split = { shared_secret: 'c2hhcmVkIHNlY3JldCBvZiBjYXBhYmlsaXRpZXMgdGU=', authorize_service_urls: ['https://authz1.internal', 'https://authz2.internal'], authorize_internal_service_url: 'https://authz.internal', databroker_service_url: 'https://db.internal' };
    for (const services of ['proxy', 'authorize', 'authenticate', 'databroker']) {
      const p = plan({ ...split, services });
      expect(settingUses(p).filter((u) => u.support === 'refused'), services).toEqual([]);
      expect(refusal(p), services).toBeUndefined();
    }
  });

  it('a setting from the environment is located by its variable', () => {
    const p = plan({}, [route], { DP_BIND_CONFIG_SOURCE_ADDRESS: '10.0.0.1', DP_ADMIN_ADDRESS: ':9901', DP_ADMIN_PROFILE_PATH: '/tmp/profile' });
    expect(refusal(p)!.split('\n')).toEqual([
      expect.stringMatching(/^env:DP_ADMIN_ADDRESS: error SVC_ERR_UNSUPPORTED_SETTING dp_admin_address: data-plane bootstrap options are not implemented/),
      expect.stringMatching(/^env:DP_ADMIN_PROFILE_PATH: error SVC_ERR_UNSUPPORTED_SETTING dp_admin_profile_path: /),
      expect.stringMatching(/^env:DP_BIND_CONFIG_SOURCE_ADDRESS: error SVC_ERR_UNSUPPORTED_SETTING dp_bind_config_source_address: /),
    ]);
  });

  it('the data broker over gRPC is honoured: the role, grpc_address/insecure/client_timeout/client_dns_roundrobin, the data broker URLs and certificate name', () => {
    for (const settings of [
      { services: 'databroker', grpc_address: ':5443', grpc_insecure: false },
      { databroker_service_urls: ['https://db1.internal', 'https://db2.internal'], databroker_internal_service_url: 'https://db.internal', grpc_insecure: false, grpc_client_timeout: '5s', grpc_client_dns_roundrobin: false, override_certificate_name: 'db.internal' },
      { grpc_address: '127.0.0.1:7443', grpc_insecure: true, grpc_client_dns_roundrobin: true },
    ]) {
      const p = plan(settings);
      // (insecure_server makes codec_type partly honoured in the data broker role's defaults: unrelated.)
      expect(settingUses(p).filter((u) => u.key !== 'codec_type'), JSON.stringify(settings)).toEqual([]);
      expect(refusal(p)).toBeUndefined();
    }
  });

  it('idp_service_account is honoured for the providers with a directory, refused for oidc', () => {
    const account = (o: Record<string, string>) => b64(JSON.stringify(o));
    const key = '-----BEGIN PRIVATE KEY-----\nTEST ONLY\n-----END PRIVATE KEY-----\n';
    const honoured: Record<string, Record<string, unknown>> = {
      gitlab: { idp_provider: 'gitlab', idp_service_account: account({ private_token: 'test-only' }) },
      google: { idp_provider: 'google', idp_service_account: account({ client_email: 'a@b.iam.gserviceaccount.com', private_key: key, impersonate_user: 'admin@example.com' }) },
      azure: { idp_provider: 'azure', idp_service_account: account({ client_id: 'c', client_secret: 's', directory_id: 'd' }) },
      okta: { idp_provider: 'okta', idp_provider_url: 'https://test.okta.example', idp_service_account: account({ api_key: 'test-only' }) },
      github: { idp_provider: 'github', idp_service_account: account({ username: 'u', personal_access_token: 'test-only' }) },
    };
    for (const [provider, settings] of Object.entries(honoured)) {
      const p = plan(settings);
      expect(settingUses(p).filter((u) => u.key === 'idp_service_account'), provider).toEqual([]);
      expect(refusal(p), provider).toBeUndefined();
    }
    expect(refusal(plan({ idp_provider: 'oidc', idp_service_account: account({}) }))).toMatch(/SVC_ERR_UNSUPPORTED_SETTING idp_service_account: svc reads a directory only for idp_provider `gitlab`, `google`, `azure`, `okta` and `github`/);
  });

  it('Redis storage is honoured: every databroker_storage_* setting', () => {
    const p = plan({ databroker_storage_type: 'redis', databroker_storage_connection_string: 'rediss+sentinel://:pw@s1:26379,s2:26379/m/1?dial_timeout=1s', databroker_storage_tls_skip_verify: true });
    expect(settingUses(p)).toEqual([]);
    expect(refusal(p)).toBeUndefined();
  });

  it('assertSupported (what a cluster worker checks before a swap) throws the same lines', () => {
    const p = plan({ dp_admin_address: ':9901', dp_admin_profile_path: '/tmp/profile' });
    expect(() => assertSupported(p)).toThrow(UnsupportedSettingsError);
    expect(() => assertSupported(p)).toThrow(refusal(p)!);
    expect(() => assertSupported(plan({}))).not.toThrow();
  });

  it('errors come in source order, one line per setting', () => {
    const p = plan({ dp_admin_address: ':9901', dp_admin_profile_path: '/tmp/profile', dp_bind_config_source_address: '10.0.0.1' });
    expect(refusal(p)!.split('\n').map((l) => /^config\.yaml:(\d+):/.exec(l)?.[1])).toEqual(['10', '11', '12']);
  });

  it('a plan without a source map still names the setting, without a place', () => {
    const p = plan({ dp_admin_address: ':9901' });
    const bare = { body: p.body, sourceMap: { settings: {}, routes: [] } };
    expect(refusal(bare)).toBe(`error ${UNSUPPORTED_SETTING} dp_admin_address: data-plane bootstrap options are not implemented: svc run proxies in its own process, with no separate data plane to configure`);
  });

  it('defaults that mean "off" are not uses (all-in-one gRPC defaults, memory storage)', () => {
    expect(settingUses(plan({ databroker_storage_type: 'memory', services: 'all' }))).toEqual([]);
  });

  /** For each partly honoured setting: settings and routes that use it. */
  const wsRoute = (extra: Record<string, unknown>) => ({ from: 'https://ws.example.com', to: 'https://127.0.0.1:9', allow_public_unauthenticated_access: true, allow_websockets: true, ...extra });
  const PARTIAL: Record<string, () => { settings: Record<string, unknown>; routes?: unknown[]; files?: Record<string, string> }> = {
    http_redirect_addr: () => ({ settings: { http_redirect_addr: ':80' } }),
    codec_type: () => ({ settings: { codec_type: 'auto' } }),
    dns_lookup_family: () => ({ settings: { dns_lookup_family: 'V4_ONLY' } }),
    tracing_jaeger_agent_endpoint: () => ({ settings: { tracing_provider: 'jaeger', tracing_jaeger_collector_endpoint: 'http://jaeger.internal:14268/api/traces', tracing_jaeger_agent_endpoint: 'jaeger.internal:6831' } }),
  };

  it('every partly honoured setting has a case here', () => {
    for (const c of CAPABILITIES) if (c.support === 'partial') expect(Object.keys(PARTIAL), c.keys[0]).toContain(c.keys[0]);
  });

  it.each(Object.keys(PARTIAL))('%s: honoured partly, said with its place, not refused', (key) => {
    const c = PARTIAL[key]!();
    const p = plan(c.settings, c.routes, {}, c.files);
    expect(refusal(p)).toBeUndefined();
    const uses = settingUses(p);
    expect(uses.map((u) => u.key.replace(/_file$/, ''))).toEqual([key]);
    expect(uses[0]!.support).toBe('partial');
    expect(uses[0]!.at).toMatch(/^config\.yaml:\d+:\d+$/);
    expect(partialUses(p)).toEqual([{ level: 'warn', msg: 'setting honoured only partly', setting: uses[0]!.key, ...(uses[0]!.route ? { route: uses[0]!.route } : {}), at: uses[0]!.at, detail: uses[0]!.reason }]);
    expect(noteLine(uses[0]!)).toContain('is honoured only partly by svc run: ');
  });

  it('the same settings where they are fully honoured are not uses', () => {
    const p = plan({ dns_lookup_family: 'AUTO' }, []);
    expect(settingUses(p)).toEqual([]);
  });

  it("upgrades use the route's upstream TLS settings (the gate): custom CA, certificate_authority and client certificates are uses of nothing partial", () => {
    const p = plan(
      { certificate_authority_file: 'ca.crt' },
      [wsRoute({ tls_custom_ca_file: 'ca.crt', tls_client_cert_file: 'c.crt', tls_client_key_file: 'c.key' })],
      {},
      { 'ca.crt': pki.certPem, 'c.crt': pki.certPem, 'c.key': pki.keyPem },
    );
    expect(settingUses(p)).toEqual([]);
  });

  it('errorLine and noteLine of a route field name the route', () => {
    const p = plan({}, [{ ...route, name: 'app', to: ['https://a.run.example', 'https://b.run.example'], enable_hostedcloud_serverless_authentication: true }]);
    const [u] = settingUses(p);
    expect(errorLine(u!)).toMatch(/^config\.yaml:\d+:\d+: error SVC_ERR_UNSUPPORTED_SETTING enable_hostedcloud_serverless_authentication: route app: one ID token audience per route/);
    expect(noteLine(u!)).toMatch(/^config\.yaml:\d+:\d+: note: enable_hostedcloud_serverless_authentication \(route app\) is not supported by svc run yet: /);
  });
});
