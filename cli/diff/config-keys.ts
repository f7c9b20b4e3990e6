/**
 * The config key behind each plan settings path and route field, so `svc diff` names what the
 * operator wrote (`cookie_expire`, `timeout`) rather than the plan's field (`cookie.expireMs`,
 * `timeoutMs`), and shows its value in the config's units (`14h`, not 50400000; `:443`, not
 * `{host, port}`).
 *
 * The table is derived from the compiler's settings table (compiler/settings/table.ts: every key
 * with the plan path it lowers to), so a setting added there is named here without more work; the
 * few plan fields no key lowers to directly are in `PLAN_ONLY`; route fields have their own table.
 * test/cli/diff/config-keys.test.ts fails when a plan settings or route field has no entry. A field
 * without one is still diffed, under its plan path: a missing entry never hides a change.
 */
import { SETTINGS, type SettingKind } from '../../compiler/index.ts';
import type { HostPort } from '../../compiler/plan/types.ts';

/** How a value is written in the config: a duration string, a `host:port`, or as in the plan. */
export type ConfigUnit = 'duration' | 'address' | 'plain';

export interface SettingKey {
  /** The plan settings path (`cookie.expireMs`); deeper paths (`headers.response.X-Frame-Options`) fall under it. */
  readonly plan: string;
  /** What the diff prints: the config key (`cookie_expire`), or a key and what part of its value this is. */
  readonly key: string;
  readonly unit: ConfigUnit;
}

/**
 * Plan fields that no config key lowers to one for one: derived from another key, or where the
 * settings table names only the `_file` form. Each names the key the value comes from.
 */
const PLAN_ONLY: Readonly<Record<string, string>> = {
  'mode.allInOne': 'services (all-in-one)',
  'identity.signingAlgorithm': 'signing_key (algorithm)',
  'databroker.storage.connection': 'databroker_storage_connection_string (parsed)',
  'databroker.storage.connectionString': 'databroker_storage_connection_string',
};

function unitOf(kind: SettingKind): ConfigUnit {
  return kind === 'duration' ? 'duration' : kind === 'hostport' ? 'address' : 'plain';
}

/**
 * One entry per plan path: the first key of the settings table that lowers there (the inline form
 * of a cert-or-file pair, `cookie_secret` before `cookie_secret_file`: the diff names the source
 * beside it), except that a list-valued path takes the list key (`authorize_service_urls`).
 */
function buildTable(): ReadonlyMap<string, SettingKey> {
  const candidates = new Map<string, (typeof SETTINGS)[number][]>();
  for (const s of SETTINGS) {
    if (s.deprecated !== undefined || s.plan === 'routes' || s.plan in PLAN_ONLY) continue;
    candidates.set(s.plan, [...(candidates.get(s.plan) ?? []), s]);
  }
  const out = new Map<string, SettingKey>();
  for (const [plan, specs] of candidates) {
    const chosen = specs.find((s) => s.kind === 'list') ?? specs[0]!;
    out.set(plan, { plan, key: chosen.key, unit: unitOf(chosen.kind) });
  }
  for (const [plan, key] of Object.entries(PLAN_ONLY)) out.set(plan, { plan, key, unit: 'plain' });
  return out;
}

/** Every plan settings path with its config key. */
export const SETTING_KEYS: ReadonlyMap<string, SettingKey> = buildTable();

const plain = (key: string): Omit<SettingKey, 'plan'> => ({ key, unit: 'plain' });

/**
 * Route fields (relative to the route, as `svc diff` lists them) and the route keys they come from
 * (compiler/schema/config-schema.ts `ROUTE_FIELDS`). `index` and `policy` are not listed: the diff
 * shows order as `moved` and the policy as text. Inside a value (a health check, a redirect) the
 * plan's own field names remain.
 */
const ROUTE_FIELD_KEYS: Readonly<Record<string, Omit<SettingKey, 'plan'>>> = {
  id: plain('name (route id)'),
  name: plain('name'),
  from: plain('from'),
  match: plain('path/prefix/regex'),
  action: plain('to/redirect'),
  'action.upstreams': plain('to'),
  'action.redirect': plain('redirect'),
  public: plain('allow_public_unauthenticated_access'),
  'rewrite.prefixRewrite': plain('prefix_rewrite'),
  'rewrite.regex': plain('regex_rewrite_pattern/regex_rewrite_substitution'),
  host: plain('preserve_host_header/host_rewrite*'),
  'requestHeaders.set': plain('set_request_headers'),
  'requestHeaders.remove': plain('remove_request_headers'),
  'responseHeaders.set': plain('set_response_headers'),
  'responseHeaders.rewrite': plain('rewrite_response_headers'),
  timeoutMs: { key: 'timeout', unit: 'duration' },
  idleTimeoutMs: { key: 'idle_timeout', unit: 'duration' },
  passIdentityHeaders: plain('pass_identity_headers'),
  'tls.skipVerify': plain('tls_skip_verify'),
  'tls.serverName': plain('tls_server_name'),
  'tls.customCa': plain('tls_custom_ca'),
  'tls.downstreamClientCa': plain('tls_downstream_client_ca'),
  'tls.clientCert': plain('tls_client_cert'),
  'tls.clientKey': plain('tls_client_key'),
  allowWebsockets: plain('allow_websockets'),
  allowSpdy: plain('allow_spdy'),
  allowEncodedPathCharacters: plain('allow_encoded_path_characters'),
  allowPathParameters: plain('allow_path_parameters'),
  pathCase: plain('path_case'),
  allowUnderscoresInHeaders: plain('allow_underscores_in_headers'),
  'lb.policy': plain('lb_policy'),
  'lb.leastRequest': plain('least_request_lb_config'),
  'lb.ringHash': plain('ring_hash_lb_config'),
  'lb.maglev': plain('maglev_lb_config'),
  healthChecks: plain('health_checks'),
  outlierDetection: plain('outlier_detection'),
  hostedcloudServerlessAuthentication: plain('enable_hostedcloud_serverless_authentication'),
  orchestratorServiceAccountToken: plain('orchestrator_service_account_token'),
};

/** Every route field path with its route key. */
export const ROUTE_KEYS: ReadonlyMap<string, SettingKey> = new Map(Object.entries(ROUTE_FIELD_KEYS).map(([plan, k]) => [plan, { plan, ...k }]));

const LAST_SEGMENT = /(\.[^.[\]]+|\[[^\]]*\])$/;

/** The entry a plan path falls under in `table` (the longest table path it starts with), if any. */
export function keyEntryOf(table: ReadonlyMap<string, SettingKey>, planPath: string): SettingKey | undefined {
  for (let p = planPath; p !== ''; p = p.replace(LAST_SEGMENT, '')) {
    const hit = table.get(p);
    if (hit) return hit;
    if (!LAST_SEGMENT.test(p)) break;
  }
  return undefined;
}

/**
 * The config name of a plan path: its key with the rest of the path kept
 * (`tls.certificates[0].key` → `certificates[0].key`); the plan path itself when no entry covers it.
 */
export function configPathOf(table: ReadonlyMap<string, SettingKey>, planPath: string): string {
  const entry = keyEntryOf(table, planPath);
  return entry ? entry.key + planPath.slice(entry.plan.length) : planPath;
}

/**
 * A copy of a plan value (the settings, a route) with every table entry that has a unit written
 * in it (`14h`, `:443`), so the diff compares and shows what the config says. Paths missing from
 * `tree` are left alone.
 */
export function inConfigUnits(table: ReadonlyMap<string, SettingKey>, tree: object): unknown {
  const copy = structuredClone(tree) as Record<string, unknown>;
  for (const e of table.values()) {
    if (e.unit === 'plain') continue;
    const parts = e.plan.split('.');
    let parent: unknown = copy;
    for (const part of parts.slice(0, -1)) parent = parent !== null && typeof parent === 'object' ? (parent as Record<string, unknown>)[part] : undefined;
    const last = parts[parts.length - 1]!;
    if (parent !== null && typeof parent === 'object' && last in parent) {
      const o = parent as Record<string, unknown>;
      o[last] = valueInUnit(e.unit, o[last]);
    }
  }
  return copy;
}

const UNITS: readonly [string, number][] = [
  ['h', 3_600_000],
  ['m', 60_000],
  ['s', 1000],
  ['ms', 1],
];

/** Milliseconds as the config writes a duration: `14h`, `1m30s`, `250ms`, `0`. */
export function formatDuration(ms: number): string {
  if (!Number.isSafeInteger(ms) || ms < 0) return String(ms);
  if (ms === 0) return '0';
  let rest = ms;
  let out = '';
  for (const [unit, size] of UNITS) {
    const n = Math.floor(rest / size);
    if (n > 0) out += `${n}${unit}`;
    rest -= n * size;
  }
  return out;
}

function isHostPort(v: unknown): v is HostPort {
  return v !== null && typeof v === 'object' && typeof (v as HostPort).host === 'string' && typeof (v as HostPort).port === 'number';
}

/** A plan `HostPort` as the config writes it: `:443`, `localhost:8126`, `[::1]:9090`. */
export function formatAddress(v: HostPort): string {
  return `${v.host.includes(':') ? `[${v.host}]` : v.host}:${v.port}`;
}

/** A plan value in a config unit; anything else (null, another shape) unchanged. */
export function valueInUnit(unit: ConfigUnit, v: unknown): unknown {
  if (unit === 'duration' && typeof v === 'number') return formatDuration(v);
  if (unit === 'address' && isHostPort(v)) return formatAddress(v);
  return v;
}
