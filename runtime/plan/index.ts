/**
 * The runtime's index of a plan: everything derived from it once, at load, so that a request does
 * no parsing or compiling (docs/architecture.md §2 invariant 6: the plan itself is never mutated).
 *
 * - a host table: canonical host → the routes answering it, in listed order, so matching cost does
 *   not grow with routes on other hosts;
 * - per route: the compiled path matcher, policy program, rewrites, host rule and header edits;
 * - svc's own hosts (authenticate, forward-auth) and the reserved header names.
 */
import type { PlanBody, Route } from '../../compiler/plan/types.ts';
import { compilePolicy, type PolicyProgram } from '../policy/program.ts';
import type { RouteRef } from '../core/types.ts';
import { compileSubstitution, compileWholeMatch, type Substitution } from './rewrite.ts';

export interface CompiledRoute {
  readonly route: Route;
  readonly ref: RouteRef;
  /**
   * The path matcher over the canonical path, as data: `kind` and its string, or the compiled
   * regex. Data rather than a closure per route keeps the matching loop monomorphic when requests
   * spread over thousands of routes.
   */
  readonly matchKind: 'any' | 'path' | 'prefix' | 'regex';
  readonly matchText: string;
  readonly matchRegex: ((path: string) => boolean) | null;
  /**
   * `path_case: insensitive`: `matchText` is lower-case and is compared with the lower-cased path
   * (the regex folds case itself). The canonical path is ASCII, so lengths do not change.
   */
  readonly foldCase: boolean;
  readonly program: PolicyProgram;
  /**
   * Replaces the matched part of a path by `replacement`: the prefix of a `prefix` route, the
   * leading `/` of a route without a matcher, the whole path of a `path` or `regex` route.
   */
  readonly rewritePrefix: (path: string, replacement: string) => string;
  /** The matched part replaced by `prefix_rewrite`, or the regex rewrite; null when neither. */
  readonly rewritePath: ((path: string) => string) | null;
  /**
   * Per upstream (index into `to`), the start every forwarded path has: the `to` path joined with
   * the `prefix_rewrite` replacement (or `/`), slashes merged. A forwarded path that does not start
   * with it left the route's prefix and is refused (docs/decisions.md §6 step 5).
   */
  readonly forwardBases: readonly string[];
  /** `host_path_regex_rewrite_*` compiled, when the route uses it. */
  readonly hostFromPath: Substitution | null;
  /** Cumulative upstream weights, for choosing an upstream by a sample in [0, 1). */
  readonly cumulativeWeights: readonly number[];
  /** `remove_request_headers`, lower-case. */
  readonly removeHeaders: ReadonlySet<string>;
  /** `set_request_headers`, lower-case names. */
  readonly setHeaders: readonly (readonly [string, string])[];
}

export interface PlanIndex {
  readonly body: PlanBody;
  readonly routes: readonly CompiledRoute[];
  /** Canonical host (`name` or `name:port`) → the HTTP routes answering it, in listed order. */
  readonly hosts: ReadonlyMap<string, readonly CompiledRoute[]>;
  /** `host:port` → the `tcp+https` routes answering CONNECT to it, in listed order. */
  readonly tcpHosts: ReadonlyMap<string, readonly CompiledRoute[]>;
  /** Canonical hosts with at least one route that takes encoded path characters (S07 opt-in). */
  readonly rawPathHosts: ReadonlySet<string>;
  /** Canonical hosts with at least one route that takes `;` path parameters (opt-in, docs/decisions.md §1). */
  readonly pathParameterHosts: ReadonlySet<string>;
  /** Canonical hosts that are svc's own services. */
  readonly internalHosts: ReadonlyMap<string, 'authenticate' | 'forward_auth'>;
  /** `jwt_claims_headers`: lower-case header name → claim. */
  readonly claimHeaders: readonly (readonly [string, string])[];
  /** Lower-case configured claim-header names with `_` read as `-` (stripped from clients). */
  readonly claimHeaderNames: ReadonlySet<string>;
  /** The origin of `authenticate_service_url`, for sign-in redirects; null when unset. */
  readonly signInOrigin: string | null;
}

/** Builds the index of a plan body. Pure; called once per loaded plan. */
export function buildIndex(body: PlanBody): PlanIndex {
  // Routes often share a policy (every public route is `allow if accept`): compile each once.
  const programs = new Map<string, PolicyProgram>();
  const programOf = (policy: Route['policy']): PolicyProgram => {
    const key = JSON.stringify(policy);
    let program = programs.get(key);
    if (!program) programs.set(key, (program = compilePolicy(policy)));
    return program;
  };
  const routes = body.routes.map((route) => compileRoute(route, programOf));
  const hosts = new Map<string, CompiledRoute[]>();
  for (const r of routes) {
    // INVARIANT (host-index): `tcp+https` routes answer CONNECT only, never an ordinary request.
    if (r.route.from.scheme !== 'https') continue;
    for (const key of hostKeys(r.route.from.host, r.route.from.port, 443)) {
      let list = hosts.get(key);
      if (!list) hosts.set(key, (list = []));
      list.push(r);
    }
  }
  const tcpHosts = new Map<string, CompiledRoute[]>();
  for (const r of routes) {
    if (r.route.from.scheme !== 'tcp+https' || r.route.from.port === null) continue;
    const key = `${r.route.from.host}:${r.route.from.port}`;
    let list = tcpHosts.get(key);
    if (!list) tcpHosts.set(key, (list = []));
    list.push(r);
  }
  const rawPathHosts = new Set<string>();
  for (const [host, list] of hosts) if (list.some((r) => r.route.allowEncodedPathCharacters)) rawPathHosts.add(host);
  const pathParameterHosts = new Set<string>();
  for (const [host, list] of hosts) if (list.some((r) => r.route.allowPathParameters)) pathParameterHosts.add(host);
  const internalHosts = new Map<string, 'authenticate' | 'forward_auth'>();
  const addInternal = (url: string | null, service: 'authenticate' | 'forward_auth') => {
    if (url === null) return;
    const u = new URL(url);
    const defaultPort = u.protocol === 'http:' ? 80 : 443;
    for (const key of hostKeys(u.hostname.toLowerCase(), u.port === '' ? null : Number(u.port), defaultPort)) internalHosts.set(key, service);
  };
  addInternal(body.settings.authenticate.forwardAuthUrl, 'forward_auth');
  addInternal(body.settings.authenticate.serviceUrl, 'authenticate');
  const claimHeaders = Object.entries(body.settings.identity.claimHeaders).map(([h, c]) => [h.toLowerCase(), c] as const);
  const serviceUrl = body.settings.authenticate.serviceUrl;
  return {
    body,
    routes,
    hosts,
    tcpHosts,
    rawPathHosts,
    pathParameterHosts,
    internalHosts,
    claimHeaders,
    claimHeaderNames: new Set(claimHeaders.map(([h]) => h.replaceAll('_', '-'))),
    signInOrigin: serviceUrl === null ? null : new URL(serviceUrl).origin,
  };
}

/** The canonical hosts a `from` answers: the default port also answers without it, and the reverse. */
function hostKeys(host: string, port: number | null, defaultPort: number): string[] {
  return port === null || port === defaultPort ? [host, `${host}:${defaultPort}`] : [`${host}:${port}`];
}

// Shared by every route without header edits (most of them): one object, not one per route.
const NO_NAMES: ReadonlySet<string> = new Set();
const NO_HEADERS: readonly (readonly [string, string])[] = [];

function compileRoute(route: Route, programOf: (policy: Route['policy']) => PolicyProgram): CompiledRoute {
  const m = route.match;
  const foldCase = route.pathCase === 'insensitive';
  const fold = (text: string): string => (foldCase ? text.toLowerCase() : text);

  const rewritePrefix = (p: string, replacement: string): string =>
    m.kind === 'prefix' ? replacement + p.slice(m.prefix.length) : m.kind === 'any' ? replacement + p.slice(1) : replacement;
  let rewritePath: ((path: string) => string) | null = null;
  const pr = route.rewrite.prefixRewrite;
  if (pr !== null) {
    rewritePath = (p) => rewritePrefix(p, pr);
  } else if (route.rewrite.regex !== null) {
    const sub = compileSubstitution(route.rewrite.regex.pattern, route.rewrite.regex.substitution);
    rewritePath = (p) => sub(p) ?? p;
  }

  const cumulativeWeights: number[] = [];
  let total = 0;
  if (route.action.kind === 'forward') for (const u of route.action.upstreams) cumulativeWeights.push((total += u.weight));

  const forwardBases: string[] = [];
  if (route.action.kind === 'forward') {
    const replacement = pr === null ? '/' : pr.startsWith('/') ? pr : `/${pr}`;
    for (const u of route.action.upstreams) forwardBases.push((u.path === '' ? replacement : u.path + replacement.slice(1)).replace(/\/{2,}/g, '/'));
  }

  return {
    route,
    ref: { index: route.index, id: route.id, name: route.name },
    matchKind: m.kind,
    matchText: fold(m.kind === 'path' ? m.path : m.kind === 'prefix' ? m.prefix : ''),
    matchRegex: m.kind === 'regex' ? compileWholeMatch(m.regex, foldCase) : null,
    foldCase,
    rewritePrefix,
    program: programOf(route.policy),
    rewritePath,
    forwardBases,
    hostFromPath: route.host.kind === 'path_regex' ? compileSubstitution(route.host.pattern, route.host.substitution) : null,
    cumulativeWeights,
    removeHeaders: route.requestHeaders.remove.length === 0 ? NO_NAMES : new Set(route.requestHeaders.remove.map((h) => h.toLowerCase())),
    setHeaders: Object.keys(route.requestHeaders.set).length === 0 ? NO_HEADERS : Object.entries(route.requestHeaders.set).map(([h, v]) => [h.toLowerCase(), v] as const),
  };
}
