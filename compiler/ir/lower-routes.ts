/**
 * Stage 5 (routes): lowers each route (docs/configuration.md "Route fields") into the plan's typed form. Lowering is lenient
 * about cross-field mistakes (several host rewrites, several path matchers, ...): it picks one and
 * the validate stage reports the mistake, so every error is reported once, by its own rule.
 * Value syntax (URLs, durations, PEM) is reported here.
 */
import { hash } from 'node:crypto';
import * as D from '../diagnostics/codes/settings.ts';
import { legacyRules } from '../policy/legacy.ts';
import { lowerPolicyNode } from '../policy/lower-document.ts';
import type { PolicyIR, Rule } from '../policy/ir.ts';
import type { HealthCheck, HostRule, OutlierDetection, PathMatch, PemSource, PlanSettings, Route, Upstream } from '../plan/types.ts';
import type { Span } from '../source/source-file.ts';
import { headerMap } from './headers.ts';
import { spanAt, type LowerCtx } from './lower-ctx.ts';
import { fingerprint, keySource, pemSource, readNamedFile, secretFromValue } from './material.ts';
import { hasControlChar, lowerDuration, parseDurationMs } from './values.ts';

type Raw = Record<string, unknown>;

/** `to` entries may end with `,<weight>`. */
/** `Host` and `:` pseudo-headers in `set_request_headers` are the route-sets-host-header rule's to report. */
function isHostOrPseudoHeader(name: string): boolean {
  return name.startsWith(':') || name.trim().toLowerCase() === 'host';
}

export function splitWeight(entry: string): { url: string; weight: string | undefined } {
  if (!entry.includes(',')) return { url: entry.trim(), weight: undefined };
  const m = /^(.*),\s*([^,]*)$/.exec(entry);
  return m ? { url: m[1]!.trim(), weight: m[2]!.trim() } : { url: entry.trim(), weight: undefined };
}

/** The list of `to` entries of a raw route (`to` is a string or a list). */
export function toEntries(route: Raw): string[] {
  const to = route['to'];
  return typeof to === 'string' ? [to] : Array.isArray(to) ? to.filter((t): t is string => typeof t === 'string') : [];
}

/** A route's `from` as lowering reads it. */
export interface ParsedFrom {
  readonly url: URL;
  readonly scheme: string;
  readonly host: string;
  readonly port: number | null;
}

/** Parses `from` leniently: scheme, lower-cased host, explicit port. Undefined when it does not parse. */
export function parseFrom(from: string): ParsedFrom | undefined {
  let u: URL;
  try {
    u = new URL(from);
  } catch {
    return undefined;
  }
  const scheme = u.protocol.slice(0, -1).toLowerCase();
  const host = u.hostname.toLowerCase();
  if (host === '') return undefined;
  return { url: u, scheme, host, port: u.port === '' ? null : Number(u.port) };
}

/** The path matcher a raw route asks for (the first of `path`, `prefix`, `regex`). */
export function pathMatchOf(route: Raw): PathMatch {
  if (typeof route['path'] === 'string') return { kind: 'path', path: route['path'] };
  if (typeof route['prefix'] === 'string') return { kind: 'prefix', prefix: route['prefix'] };
  if (typeof route['regex'] === 'string') return { kind: 'regex', regex: route['regex'] };
  return { kind: 'any' };
}

function matchText(m: PathMatch): string {
  switch (m.kind) {
    case 'any':
      return '';
    case 'path':
      return `path=${m.path}`;
    case 'prefix':
      return `prefix=${m.prefix}`;
    case 'regex':
      return `regex=${m.regex}`;
  }
}

function routeId(name: string | null, from: string, m: PathMatch, taken: Set<string>, index: number): string {
  let id = name ?? `r-${hash('sha256', `${from}\0${matchText(m)}`).slice(0, 12)}`;
  if (taken.has(id)) id = `${id}-${index}`;
  taken.add(id);
  return id;
}

function hostRuleOf(r: Raw): HostRule {
  if (r['preserve_host_header'] === true) return { kind: 'preserve' };
  if (typeof r['host_rewrite'] === 'string') return { kind: 'literal', host: r['host_rewrite'] };
  if (typeof r['host_rewrite_header'] === 'string') return { kind: 'header', header: r['host_rewrite_header'] };
  if (typeof r['host_path_regex_rewrite_pattern'] === 'string')
    return { kind: 'path_regex', pattern: r['host_path_regex_rewrite_pattern'], substitution: String(r['host_path_regex_rewrite_substitution'] ?? '') };
  return { kind: 'upstream' };
}

/** A header map with its keys inserted in sorted order (the order of the plan's canonical JSON). */
function sortedHeaders(headers: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of Object.keys(headers).sort()) {
    // An own `__proto__` member stays data: define it, never set the prototype.
    if (name === '__proto__') Object.defineProperty(out, name, { value: headers[name], enumerable: true, writable: true, configurable: true });
    else out[name] = headers[name]!;
  }
  return out;
}

/** The global response headers in sorted order, made once per settings object and shared by its routes. */
const sortedGlobalHeaders = new WeakMap<object, Record<string, string>>();

/**
 * A route's response headers: the global ones, each replaced by a route header of the same name
 * (case-insensitively), keys in sorted order. Routes without headers of their own share one map.
 */
function responseHeaders(global: Readonly<Record<string, string>>, own: Readonly<Record<string, string>>): Record<string, string> {
  if (Object.keys(own).length === 0) {
    let shared = sortedGlobalHeaders.get(global);
    if (shared === undefined) sortedGlobalHeaders.set(global, (shared = sortedHeaders(global)));
    return shared;
  }
  const response: Record<string, string> = { ...global };
  for (const [k, v] of Object.entries(own)) {
    for (const existing of Object.keys(response)) if (existing.toLowerCase() === k.toLowerCase()) delete response[existing];
    response[k] = v;
  }
  return sortedHeaders(response);
}

/** Lowers every route; routes with schema errors were dropped before. */
export function lowerRoutes(routes: readonly Raw[], paths: readonly string[], indexes: readonly number[], settings: PlanSettings, cx: LowerCtx): Route[] {
  const taken = new Set<string>();
  // Routes share their `from` (several paths of one host): each is parsed once.
  const froms = new Map<string, ParsedFrom | undefined>();
  const fromOf = (text: string): ParsedFrom | undefined => {
    if (!froms.has(text)) froms.set(text, parseFrom(text));
    return froms.get(text);
  };
  const fields = new RouteFields(cx);
  const out: Route[] = [];
  routes.forEach((r, i) => {
    const route = lowerRoute(r, paths[i]!, indexes[i]!, settings, cx, taken, fromOf, fields);
    if (route) out.push(route);
  });
  return out;
}

/**
 * Reads the fields of one route at a time: one reader serves a whole lowering run, so no closures
 * are made per route. `begin` points it at the next route.
 */
class RouteFields {
  private r: Raw = {};
  private path = '';

  constructor(private readonly cx: LowerCtx) {}

  begin(r: Raw, path: string): this {
    this.r = r;
    this.path = path;
    return this;
  }

  /** The span of a field's value, falling back to the route's. */
  at(field: string): Span | undefined {
    return spanAt(this.cx, `${this.path}.${field}`) ?? spanAt(this.cx, this.path);
  }

  /** A string field; null when absent, not a string, or holding a control character (reported). */
  str(field: string): string | null {
    const v = this.r[field];
    if (typeof v !== 'string') return null;
    if (hasControlChar(v)) {
      this.cx.r.report(D.ControlCharacter, this.at(field), { key: `${this.path}.${field}` }, `${this.path}.${field}`);
      return null;
    }
    return v;
  }

  bool(field: string): boolean {
    return this.r[field] === true;
  }

  /** A duration field in ms as `lowerDuration` lowers it, its span looked up only to report it. */
  duration(field: string): number | undefined {
    const v = this.r[field];
    if (v === 0) return 0;
    const ms = typeof v === 'string' ? parseDurationMs(v) : undefined;
    return ms ?? lowerDuration(v, `${this.path}.${field}`, this.at(field), this.cx.r);
  }

  /** A non-empty string field by its config path (`routes[0].tls_custom_ca`), for material.ts. */
  readonly get = (key: string): { value: string; at: Span | undefined } | undefined => {
    const field = key.slice(this.path.length + 1);
    const v = this.str(field);
    return v === null || v === '' ? undefined : { value: v, at: this.at(field) };
  };

  /** Whether the route gives either field of a pair: one it does not give lowers to nothing, its keys not even joined. */
  givesEither(a: string, b: string): boolean {
    return this.r[a] !== undefined || this.r[b] !== undefined;
  }

  /** A certificate given inline or as a file. */
  pem(f: string, file: string): PemSource | null {
    return this.givesEither(f, file) ? (pemSource(`${this.path}.${f}`, `${this.path}.${file}`, 'certificate', this.cx, this.get)?.source ?? null) : null;
  }
}

function lowerRoute(
  r: Raw, path: string, index: number, settings: PlanSettings, cx: LowerCtx, taken: Set<string>, fromOf: (text: string) => ParsedFrom | undefined, fields: RouteFields,
): Route | undefined {
  const rf = fields.begin(r, path);

  const fromText = rf.str('from');
  if (fromText === null) return undefined;
  const from = fromOf(fromText);
  if (!from) {
    cx.r.report(D.InvalidUrl, rf.at('from'), { key: `${path}.from`, value: fromText, problem: /^[a-z][a-z0-9+.-]*:/i.test(fromText) ? 'has no host name' : 'has no scheme' }, `${path}.from`);
    return undefined;
  }
  const match = pathMatchOf(r);
  const name = rf.str('name');

  // Upstreams (weights are validated by a rule; here an absent or bad weight is 1).
  const upstreams: Upstream[] = [];
  toEntries(r).forEach((entry, j) => {
    const { url, weight } = splitWeight(entry);
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      cx.r.report(D.InvalidUrl, spanAt(cx, `${path}.to[${j}]`) ?? rf.at('to'), { key: `${path}.to`, value: url, problem: /^[a-z][a-z0-9+.-]*:/i.test(url) ? 'does not parse' : 'has no scheme' }, `${path}.to`);
      return;
    }
    const scheme = u.protocol.slice(0, -1).toLowerCase();
    if (u.hostname === '') {
      cx.r.report(D.InvalidUrl, spanAt(cx, `${path}.to[${j}]`) ?? rf.at('to'), { key: `${path}.to`, value: url, problem: 'has no host name' }, `${path}.to`);
      return;
    }
    const w = weight !== undefined && /^\d+$/.test(weight) ? Number(weight) : 1;
    const defaultPort = scheme === 'https' ? 443 : scheme === 'http' ? 80 : 0;
    upstreams.push({
      host: u.hostname.toLowerCase(),
      path: scheme === 'tcp' ? '' : u.pathname,
      port: u.port === '' ? defaultPort : Number(u.port),
      scheme: scheme as Upstream['scheme'],
      url: u.href,
      weight: w,
    });
  });

  const redirectRaw = r['redirect'] as Raw | undefined;
  const action: Route['action'] = redirectRaw
    ? {
        kind: 'redirect',
        redirect: {
          host: (redirectRaw['host_redirect'] as string | undefined) ?? null,
          httpsRedirect: redirectRaw['https_redirect'] === true,
          path: (redirectRaw['path_redirect'] as string | undefined) ?? null,
          port: (redirectRaw['port_redirect'] as number | undefined) ?? null,
          prefixRewrite: (redirectRaw['prefix_rewrite'] as string | undefined) ?? null,
          responseCode: (redirectRaw['response_code'] as number | undefined) ?? 301,
          scheme: (redirectRaw['scheme_redirect'] as string | undefined) ?? null,
          stripQuery: redirectRaw['strip_query'] === true,
        },
      }
    : { kind: 'forward', upstreams };

  // Policy: the route's `policy` (either surface) plus the deprecated list-style options.
  const rules: Rule[] = [];
  const policyLoc = r['policy'] === undefined ? undefined : cx.index.get(`${path}.policy`);
  if (policyLoc) {
    const ir = lowerPolicyNode(policyLoc.node, cx.r, `${path}.policy`);
    if (ir) rules.push(...ir.rules);
  }
  const claims = r['allowed_idp_claims'];
  rules.push(
    ...legacyRules({
      ...(Array.isArray(r['allowed_users']) ? { allowedUsers: r['allowed_users'] as string[] } : {}),
      ...(Array.isArray(r['allowed_domains']) ? { allowedDomains: r['allowed_domains'] as string[] } : {}),
      ...(Array.isArray(r['allowed_groups']) ? { allowedGroups: r['allowed_groups'] as string[] } : {}),
      ...(claims && typeof claims === 'object' ? { allowedIdpClaims: claims as Record<string, unknown> } : {}),
      ...(rf.bool('allow_public_unauthenticated_access') ? { allowPublicUnauthenticatedAccess: true } : {}),
      ...(rf.bool('allow_any_authenticated_user') ? { allowAnyAuthenticatedUser: true } : {}),
      ...(rf.bool('cors_allow_preflight') ? { corsAllowPreflight: true } : {}),
    }),
  );
  const policy: PolicyIR = { rules };

  // Timeouts: `timeout` defaults to `default_upstream_timeout`, but to 0 (none) when only `idle_timeout` is set.
  const timeoutRaw = r['timeout'];
  const idleRaw = r['idle_timeout'];
  const timeoutMs =
    timeoutRaw !== undefined
      ? (rf.duration('timeout') ?? settings.server.defaultUpstreamTimeoutMs)
      : idleRaw !== undefined
        ? 0
        : settings.server.defaultUpstreamTimeoutMs;
  const idleTimeoutMs = idleRaw !== undefined ? (rf.duration('idle_timeout') ?? 300_000) : 300_000;

  const setReq = headerMap((r['set_request_headers'] as Record<string, string> | undefined) ?? {}, `${path}.set_request_headers`, cx, isHostOrPseudoHeader);
  const setRes = headerMap((r['set_response_headers'] as Record<string, string> | undefined) ?? {}, `${path}.set_response_headers`, cx);
  const response = responseHeaders(settings.headers.response, setRes);

  const lbPolicy = (r['lb_policy'] as Route['lb']['policy'] | undefined) ?? 'ROUND_ROBIN';
  const lr = r['least_request_lb_config'] as Raw | undefined;
  const rh = r['ring_hash_lb_config'] as Raw | undefined;
  const mg = r['maglev_lb_config'] as Raw | undefined;

  const clientKey = rf.givesEither('tls_client_key', 'tls_client_key_file') ? keySource(`${path}.tls_client_key`, `${path}.tls_client_key_file`, cx, rf.get) : null;
  const token = r['orchestrator_service_account_token'] === undefined ? undefined : rf.get(`${path}.orchestrator_service_account_token`);
  const tokenFile = r['orchestrator_service_account_token_file'] === undefined ? undefined : rf.get(`${path}.orchestrator_service_account_token_file`);

  // Values whose lowering reports or reads files, in the order their fields were always lowered
  // (diagnostics at one place keep that order).
  const id = routeId(name, `${from.scheme}://${from.host}${from.port === null ? '' : `:${from.port}`}`, match, taken, index);
  const prefixRewrite = rf.str('prefix_rewrite');
  const serverName = rf.str('tls_server_name');
  const customCa = rf.pem('tls_custom_ca', 'tls_custom_ca_file');
  const downstreamClientCa = rf.pem('tls_downstream_client_ca', 'tls_downstream_client_ca_file');
  const clientCert = rf.pem('tls_client_cert', 'tls_client_cert_file');
  const healthChecks = ((r['health_checks'] as Raw[] | undefined) ?? []).map((h, j) => lowerHealthCheck(h, `${path}.health_checks[${j}]`, cx));
  const outlierDetection = r['outlier_detection'] ? lowerOutlier(r['outlier_detection'] as Raw, `${path}.outlier_detection`, cx) : null;
  const orchestratorServiceAccountToken = token
    ? secretFromValue(token.value, `${path}.orchestrator_service_account_token`, token.at, cx)
    : tokenFile
      ? { fingerprint: fileFingerprint(tokenFile.value, cx, tokenFile.at, `${path}.orchestrator_service_account_token_file`), ref: `file:${tokenFile.value}` }
      : null;

  // Keys in sorted order, here and in every object of the route: the plan's canonical JSON is then
  // the route as it is (compiler/plan/canonical-json.ts), with no sorted copy to make.
  return {
    action,
    allowEncodedPathCharacters: rf.bool('allow_encoded_path_characters'),
    allowPathParameters: rf.bool('allow_path_parameters'),
    allowSpdy: rf.bool('allow_spdy'),
    allowUnderscoresInHeaders: rf.bool('allow_underscores_in_headers'),
    allowWebsockets: rf.bool('allow_websockets'),
    from: { host: from.host, port: from.port, scheme: from.scheme === 'tcp+https' ? 'tcp+https' : 'https', url: fromText },
    healthChecks,
    host: hostRuleOf(r),
    hostedcloudServerlessAuthentication: rf.bool('enable_hostedcloud_serverless_authentication'),
    id,
    idleTimeoutMs,
    index,
    lb: {
      leastRequest: lr ? { activeRequestBias: (lr['active_request_bias'] as number | undefined) ?? 1, choiceCount: (lr['choice_count'] as number | undefined) ?? 2 } : null,
      maglev: mg ? { tableSize: (mg['table_size'] as number | undefined) ?? 65537 } : null,
      policy: lbPolicy,
      ringHash: rh
        ? {
            hashFunction: (rh['hash_function'] as 'XX_HASH' | 'MURMUR_HASH_2' | undefined) ?? 'XX_HASH',
            maximumRingSize: (rh['maximum_ring_size'] as number | undefined) ?? 8388608,
            minimumRingSize: (rh['minimum_ring_size'] as number | undefined) ?? 1024,
          }
        : null,
    },
    match,
    name,
    orchestratorServiceAccountToken,
    outlierDetection,
    passIdentityHeaders: rf.bool('pass_identity_headers'),
    pathCase: (r['path_case'] as Route['pathCase'] | undefined) ?? 'sensitive',
    policy,
    public: rf.bool('allow_public_unauthenticated_access'),
    requestHeaders: { remove: ((r['remove_request_headers'] as string[] | undefined) ?? []).slice(), set: setReq },
    responseHeaders: {
      rewrite: ((r['rewrite_response_headers'] as Raw[] | undefined) ?? []).map((h) => ({
        header: String(h['header']),
        prefix: String(h['prefix'] ?? ''),
        value: String(h['value']),
      })),
      set: response,
    },
    rewrite: {
      prefixRewrite,
      regex:
        typeof r['regex_rewrite_pattern'] === 'string'
          ? { pattern: r['regex_rewrite_pattern'], substitution: String(r['regex_rewrite_substitution'] ?? '') }
          : null,
    },
    timeoutMs,
    tls: {
      clientCert,
      clientKey: clientKey?.secret ?? null,
      customCa,
      downstreamClientCa,
      serverName,
      skipVerify: rf.bool('tls_skip_verify'),
    },
  };
}

function fileFingerprint(file: string, cx: LowerCtx, at: Span | undefined, key: string): string {
  const data = readNamedFile(file, key, at, cx);
  return data ? fingerprint(data) : fingerprint('');
}

function ms(v: unknown, key: string, cx: LowerCtx, fallback: number): number {
  return v === undefined ? fallback : (lowerDuration(v, key, spanAt(cx, key), cx.r) ?? fallback);
}

function lowerHealthCheck(h: Raw, path: string, cx: LowerCtx): HealthCheck {
  const http = h['http_health_check'] as Raw | undefined;
  const tcp = h['tcp_health_check'] as Raw | undefined;
  const grpc = h['grpc_health_check'] as Raw | undefined;
  let check: HealthCheck['check'];
  if (http)
    check = {
      codec: (http['codec_client_type'] as 'HTTP1' | 'HTTP2' | undefined) ?? 'HTTP1',
      expectedStatuses: ((http['expected_statuses'] as { start: number; end: number }[] | undefined) ?? [{ start: 200, end: 300 }]).map((s) => ({ end: s.end, start: s.start })),
      host: (http['host'] as string | undefined) ?? null,
      kind: 'http',
      path: (http['path'] as string | undefined) ?? '/',
    };
  else if (grpc) check = { authority: (grpc['authority'] as string | undefined) ?? null, kind: 'grpc', serviceName: (grpc['service_name'] as string | undefined) ?? null };
  else
    check = {
      kind: 'tcp',
      receive: ((tcp?.['receive'] as Raw[] | undefined) ?? []).map((x) => String(x['text'] ?? '')),
      send: ((tcp?.['send'] as Raw | undefined)?.['text'] as string | undefined) ?? null,
    };
  // Durations in the order they were always lowered (their diagnostics keep that order).
  const timeoutMs = ms(h['timeout'], `${path}.timeout`, cx, 5000);
  const intervalMs = ms(h['interval'], `${path}.interval`, cx, 10_000);
  const initialJitterMs = ms(h['initial_jitter'], `${path}.initial_jitter`, cx, 0);
  const intervalJitterMs = ms(h['interval_jitter'], `${path}.interval_jitter`, cx, 0);
  return {
    check,
    healthyThreshold: (h['healthy_threshold'] as number | undefined) ?? 2,
    initialJitterMs,
    intervalJitterMs,
    intervalMs,
    timeoutMs,
    unhealthyThreshold: (h['unhealthy_threshold'] as number | undefined) ?? 3,
  };
}

function lowerOutlier(o: Raw, path: string, cx: LowerCtx): OutlierDetection {
  // Durations in the order they were always lowered (their diagnostics keep that order).
  const intervalMs = ms(o['interval'], `${path}.interval`, cx, 10_000);
  const baseEjectionTimeMs = ms(o['base_ejection_time'], `${path}.base_ejection_time`, cx, 30_000);
  const maxEjectionTimeMs = ms(o['max_ejection_time'], `${path}.max_ejection_time`, cx, 300_000);
  return {
    baseEjectionTimeMs,
    consecutive5xx: (o['consecutive_5xx'] as number | undefined) ?? 5,
    consecutiveGatewayFailure: (o['consecutive_gateway_failure'] as number | undefined) ?? null,
    enforcingConsecutive5xx: (o['enforcing_consecutive_5xx'] as number | undefined) ?? 100,
    intervalMs,
    maxEjectionPercent: (o['max_ejection_percent'] as number | undefined) ?? 10,
    maxEjectionTimeMs,
  };
}
