/**
 * config-keys.ts: every plan settings field and route field the diff can report has the config key
 * it came from (a new plan field without one fails here), every key named is a real config key, and
 * values read back in config units.
 */
import { describe, expect, it } from 'vitest';
import { diffPlans } from '../../../cli/diff/diff.ts';
import { configPathOf, formatAddress, formatDuration, keyEntryOf, ROUTE_KEYS, SETTING_KEYS } from '../../../cli/diff/config-keys.ts';
import { renderDiffText } from '../../../cli/diff/render-text.ts';
import { diffSettings } from '../../../cli/diff/settings.ts';
import { parseDurationMs } from '../../../compiler/ir/values.ts';
import type { PlanSettings } from '../../../compiler/plan/types.ts';
import { ROUTE_FIELDS } from '../../../compiler/schema/config-schema.ts';
import { SETTINGS, SETTINGS_BY_KEY } from '../../../compiler/settings/table.ts';
import { planOf, route } from './helpers.ts';

/** Leaf paths of a plan value as the diff walks it (secrets and PEM documents are leaves). */
function leafPaths(v: unknown, path: string, out: string[] = []): string[] {
  const opaque = (o: object) => 'fingerprint' in o || 'sha256' in o;
  if (Array.isArray(v)) {
    if (v.length === 0) out.push(path);
    v.forEach((x, i) => leafPaths(x, `${path}[${i}]`, out));
  } else if (v !== null && typeof v === 'object' && !opaque(v) && Object.keys(v).length > 0) {
    for (const [k, x] of Object.entries(v)) leafPaths(x, path === '' ? k : `${path}.${k}`, out);
  } else out.push(path);
  return out;
}

function valueAt(tree: unknown, path: string): unknown {
  return path.split('.').reduce<unknown>((o, k) => (o !== null && typeof o === 'object' && k in o ? (o as Record<string, unknown>)[k] : undefined), tree);
}

/** The config keys a label names: `services (all-in-one)` → services, `path/prefix/regex` → three. */
const keysIn = (label: string): string[] => label.split(' ')[0]!.split('/').map((k) => k.replace(/\*$/, ''));

// Settings set so the nullable parts of the plan (addresses, the Redis connection, tracing) hold values.
const rich = planOf(
  [
    route('app.example.com', {
      allow_any_authenticated_user: true,
      prefix: '/api/',
      prefix_rewrite: '/',
      timeout: '10s',
      set_request_headers: { 'X-A': 'b' },
      health_checks: [{ timeout: '1s', interval: '5s', unhealthy_threshold: 2, healthy_threshold: 2, http_health_check: { path: '/healthz' } }],
    }),
    { from: 'https://app.example.com', path: '/old', allow_any_authenticated_user: true, redirect: { host_redirect: 'new.example.com' } },
  ],
  {
    metrics_address: '127.0.0.1:9090',
    http_redirect_addr: ':80',
    tracing_provider: 'jaeger',
    tracing_jaeger_agent_endpoint: 'localhost:6831',
    tracing_jaeger_collector_endpoint: 'http://localhost:14268/api/traces',
    databroker_storage_type: 'redis',
    databroker_storage_connection_string: 'redis://svc:test-only-password@127.0.0.1:6379/0',
    idp_request_params: { prompt: 'login' },
    jwt_claims_headers: { 'X-Email': 'email' },
  },
);

describe('settings keys', () => {
  const settings = rich.body.settings;

  it('name every settings field of a plan', () => {
    const missing = leafPaths(settings, '').filter((p) => keyEntryOf(SETTING_KEYS, p) === undefined);
    expect(missing, 'add the config key of these plan fields (compiler/settings/table.ts or PLAN_ONLY in cli/diff/config-keys.ts)').toEqual([]);
  });

  it('name only plan fields that exist, and only real config keys', () => {
    for (const e of SETTING_KEYS.values()) {
      expect(valueAt(settings, e.plan), e.plan).not.toBeUndefined();
      for (const k of keysIn(e.key)) expect(SETTINGS_BY_KEY.has(k), `${e.plan}: ${k}`).toBe(true);
    }
  });

  it('take the unit of the key: durations and addresses', () => {
    expect(SETTING_KEYS.get('cookie.expireMs')).toEqual({ plan: 'cookie.expireMs', key: 'cookie_expire', unit: 'duration' });
    expect(SETTING_KEYS.get('server.address')).toEqual({ plan: 'server.address', key: 'address', unit: 'address' });
    expect(SETTING_KEYS.get('cookie.secret')?.key).toBe('cookie_secret');
    expect(SETTING_KEYS.get('authorize.serviceUrls')?.key).toBe('authorize_service_urls');
    expect(SETTING_KEYS.get('databroker.storage.connectionString')?.key).toBe('databroker_storage_connection_string');
    for (const s of SETTINGS.filter((x) => x.kind === 'duration')) expect(SETTING_KEYS.get(s.plan)?.unit, s.key).toBe('duration');
  });

  it('keep the rest of a deeper path, and fall back to the plan path rather than hide a change', () => {
    expect(configPathOf(SETTING_KEYS, 'tls.certificates[0].key')).toBe('certificates[0].key');
    expect(configPathOf(SETTING_KEYS, 'headers.response.X-Frame-Options')).toBe('set_response_headers.X-Frame-Options');
    expect(configPathOf(SETTING_KEYS, 'future.field')).toBe('future.field');
    const a = settings;
    const b = { ...settings, future: { field: 1 } } as unknown as PlanSettings;
    expect(diffSettings(a, b)).toEqual([{ path: 'future', key: 'future', change: 'added', redacted: false, old: null, new: { field: 1 } }]);
  });
});

describe('route keys', () => {
  it('name every route field of a plan (forward and redirect routes)', () => {
    for (const r of rich.body.routes) {
      const { index: _i, policy: _p, ...fields } = r;
      const missing = leafPaths(fields, '').filter((p) => keyEntryOf(ROUTE_KEYS, p) === undefined);
      expect(missing, 'add the route key of these plan fields (ROUTE_FIELD_KEYS in cli/diff/config-keys.ts)').toEqual([]);
    }
  });

  it('name only real route keys', () => {
    const routeKeys = new Set(Object.keys(ROUTE_FIELDS));
    for (const e of ROUTE_KEYS.values()) {
      const present = rich.body.routes.some((r) => valueAt(r, e.plan) !== undefined);
      expect(present, e.plan).toBe(true);
      for (const k of keysIn(e.key)) expect(routeKeys.has(k) || [...routeKeys].some((x) => x.startsWith(k)), `${e.plan}: ${k}`).toBe(true);
    }
  });
});

describe('config units', () => {
  it('write durations as the config does, and read back to the same milliseconds', () => {
    expect(formatDuration(50_400_000)).toBe('14h');
    expect(formatDuration(90_000)).toBe('1m30s');
    expect(formatDuration(250)).toBe('250ms');
    expect(formatDuration(0)).toBe('0');
    for (const ms of [1, 999, 1000, 61_001, 3_600_000, 93_784_005]) expect(parseDurationMs(formatDuration(ms))).toBe(ms);
  });

  it('write addresses as host:port', () => {
    expect(formatAddress({ host: '', port: 443 })).toBe(':443');
    expect(formatAddress({ host: 'localhost', port: 8126 })).toBe('localhost:8126');
    expect(formatAddress({ host: '::1', port: 9090 })).toBe('[::1]:9090');
  });

  it('show settings and route fields by config key in config units', () => {
    const a = planOf([route('app.example.com', { allow_any_authenticated_user: true, idle_timeout: '5m' })], { cookie_expire: '14h', metrics_address: '127.0.0.1:9090' });
    const b = planOf([route('app.example.com', { allow_any_authenticated_user: true, idle_timeout: '90s' })], { cookie_expire: '8h', metrics_address: '127.0.0.1:9191' });
    const text = renderDiffText(diffPlans(a, b));
    expect(text).toContain('  ~ cookie_expire: "14h" → "8h"\n');
    expect(text).toContain('  ~ metrics_address: "127.0.0.1:9090" → "127.0.0.1:9191"\n');
    expect(text).toContain('      ~ idle_timeout: "5m" → "1m30s"\n');
    expect(text).not.toMatch(/expireMs|idleTimeoutMs|metrics\.address/);
  });
});
