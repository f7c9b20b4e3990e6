/**
 * The reference interpreter of svc's request decisions: docs/decisions.md (the rule book) written
 * out as directly as possible, so that it can be read against the text line by line. It is
 * deliberately naive: a linear scan of the routes in listed order, a recursive three-valued walk of
 * the policy IR, string-level rewrites, BigInt CIDR arithmetic. Only the decision types and the
 * canonical request (rule book §1, tested on its own) come from runtime/: everything else is written
 * here independently, so that the differential test (test/differential/) compares two readings of
 * the rule book rather than one reading twice (docs/architecture.md §2 invariant 7).
 *
 * Where the rule book leaves room, the reading chosen here is marked `READING:`; each is listed in
 * test/reference/README.md.
 */
import { RE2JS } from 're2js';
import type { PlanBody, Route, Upstream } from '../../compiler/plan/types.ts';
import { canonicalRequest, type CanonicalRequest, type CanonicalResult } from '../../runtime/request/canonical-request.ts';
import type { Decision, DecisionRequest, Identity, InternalEndpoint, RequestProblem, RouteRef, UpstreamRequest } from '../../runtime/core/types.ts';
import { formatIp, parseIp, type IpAddress } from './ip.ts';
import { claimValues, emailAddress, evaluatePolicy, type PolicyRequest, type PolicyResult } from './policy.ts';

const DEFAULT_PORT: Readonly<Record<string, number>> = { http: 80, https: 443 };

/**
 * Decides one request from the plan alone, as docs/decisions.md says: canonical request (§1),
 * client address (§5), svc's own endpoints (§2), route (§3), policy (§4), then the upstream request
 * (§6) or the redirect (§7).
 */
export function decideReference(body: PlanBody, request: DecisionRequest, identity: Identity | null): Decision {
  // §1. The canonical request (one authority; more than one Host or `:authority` refused first).
  const first = canonicalOf(request);
  if (first === 'host-duplicate') return badRequest('host-duplicate');
  let canonical = first;
  // §1 opt-in: a raw `;` is kept for a host where some route has `allow_path_parameters`; only
  // such a route may then be chosen (checked below). READING: the S07 opt-in is not modelled here.
  let parameters = false;
  if (!canonical.ok && canonical.problem === 'target-path-parameter') {
    const kept = canonicalOf(request, { keepPathParameters: true });
    // A segment that is empty, `.` or `..` before its parameters (`/..;/admin`) is never kept.
    const dotted = kept !== 'host-duplicate' && kept.ok && kept.request.path.split('/').some((s) => s.includes(';') && ['', '.', '..'].includes(s.slice(0, s.indexOf(';'))));
    // READING: whether the target used `;` is judged on the target as received (before `..` removal).
    if (kept !== 'host-duplicate' && kept.ok && !dotted && body.routes.some((r) => answersHost(r, kept.request.host) && r.allowPathParameters)) {
      canonical = kept;
      parameters = true;
    }
  }
  if (!canonical.ok) return badRequest(canonical.problem);
  const c = canonical.request;

  // §5. The client address. READING: computed at the door for every request (a request whose
  // trusted proxies sent garbage is refused whatever it addresses), after §1 and before §2.
  const client = clientAddress(request, body.settings.server.xffNumTrustedHops);
  if (client === undefined) return badRequest('client-address-invalid');

  // §2. svc's own endpoints.
  const internal = internalEndpoint(body, c);
  if (internal !== undefined) return parameters ? badRequest('target-path-parameter') : { outcome: 'internal', status: 200, endpoint: internal, reasons: ['internal'] };

  // §3. Route matching: the first route (in listed order) answering the host whose matcher holds.
  const route = body.routes.find((r) => answersHost(r, c.host) && pathMatches(r, c.path));
  if (parameters && !route?.allowPathParameters) return badRequest('target-path-parameter');
  if (route === undefined) return { outcome: 'not_found', status: 404, reasons: ['no-route'] };
  const ref: RouteRef = { index: route.index, id: route.id, name: route.name };

  // §4. Policy. INVARIANT (match-once, S11): the policy evaluated is the chosen route's.
  const { verdict, reasons } = routePolicy(route, request, c, client, identity);
  // READING (docs/decisions.md §4): 450 when the session's device does not meet a device criterion.
  if (verdict === 'deny') return { outcome: 'deny', status: reasons.includes('device-unauthorized') ? 450 : 403, route: ref, reasons };
  if (verdict === 'unauthenticated' && identity !== null) {
    // Signed in: a device criterion is unknown; the device page on this host, or 401.
    const backScheme = request.scheme === 'http' && !body.settings.cookie.secure ? 'http' : 'https';
    const back = `${backScheme}://${c.host}${c.path}${c.query ? `?${c.query}` : ''}`;
    return isBrowser(request)
      ? { outcome: 'unauthenticated', status: 302, route: ref, reasons, location: `${backScheme}://${c.host}/.svc/webauthn?svc_redirect_uri=${encodeURIComponent(back)}`, device: true }
      : { outcome: 'unauthenticated', status: 401, route: ref, reasons, location: null, device: true };
  }
  if (verdict === 'unauthenticated') {
    const location = isBrowser(request) ? signInLocation(body, c, request.scheme) : null;
    return location === null
      ? { outcome: 'unauthenticated', status: 401, route: ref, reasons, location: null }
      : { outcome: 'unauthenticated', status: 302, route: ref, reasons, location };
  }

  // §7. A redirect route redirects once its policy allowed the request.
  if (route.action.kind === 'redirect') {
    const location = redirectLocation(route, c);
    if (location === undefined) return badRequest('forwarded-path-dot-segment');
    return { outcome: 'redirect', status: route.action.redirect.responseCode, route: ref, reasons, location };
  }
  // §6. Forwarded.
  const upstream = upstreamRequest(body, route, route.action.upstreams, request, c, identity);
  if (upstream === undefined) return badRequest('forwarded-path-dot-segment');
  return { outcome: 'allow', status: 200, route: ref, reasons, upstream };
}

/** §4: a public route is allowed (`public-route`); any other route's policy decides. */
function routePolicy(route: Route, request: DecisionRequest, c: CanonicalRequest, client: IpAddress, identity: Identity | null): PolicyResult {
  if (route.public) return { verdict: 'allow', reasons: ['public-route'] };
  const policyRequest: PolicyRequest = {
    method: request.method,
    path: c.path,
    headers: request.headers,
    clientIp: client,
    nowMs: request.nowMs,
    ...(request.clientCertificate !== undefined ? { clientCertificate: request.clientCertificate } : {}),
  };
  return evaluatePolicy(route.policy, policyRequest, identity);
}

/**
 * The verdict and reasons of one route's policy (by plan index) for a request, whatever route the
 * request would match: what the S11 property compares a decision with. Undefined when the request
 * is refused before routing (§1, §5) or there is no such route.
 */
export function chosenRoutePolicy(body: PlanBody, routeIndex: number, request: DecisionRequest, identity: Identity | null): PolicyResult | undefined {
  const route = body.routes.find((r) => r.index === routeIndex);
  const canonical = canonicalOf(request);
  if (route === undefined || canonical === 'host-duplicate') return undefined;
  const client = clientAddress(request, body.settings.server.xffNumTrustedHops);
  if (!canonical.ok || client === undefined) return undefined;
  return routePolicy(route, request, canonical.request, client, identity);
}

/**
 * The route §3 picks for a request (its host and canonical path), ignoring everything else; undefined
 * when the target or host is refused or no route answers.
 */
export function firstMatchingRoute(body: PlanBody, request: DecisionRequest): RouteRef | undefined {
  const canonical = canonicalOf(request);
  if (canonical === 'host-duplicate' || !canonical.ok) return undefined;
  const c = canonical.request;
  const route = body.routes.find((r) => answersHost(r, c.host) && pathMatches(r, c.path));
  return route && { index: route.index, id: route.id, name: route.name };
}

/**
 * §1: the canonical request, or `host-duplicate` when the request states its Host (or HTTP/2
 * `:authority`) more than once: refused before anything else looks at the host. READING: checked
 * even when an absolute-form target supplies the host. The one authority is the absolute-form
 * target's, else `:authority`, else `Host`; a conflicting second statement is the canonical
 * request's own refusal (`host-conflict`).
 */
export function canonicalOf(request: Pick<DecisionRequest, 'target' | 'headers' | 'scheme'>, options: { readonly keepPathParameters?: boolean } = {}): CanonicalResult | 'host-duplicate' {
  const hostHeaders = request.headers['host'] ?? [];
  const authorities = request.headers[':authority'] ?? [];
  if (hostHeaders.length > 1 || authorities.length > 1) return 'host-duplicate';
  return canonicalRequest(request.target, hostHeaders[0], request.scheme, { ...options, authority: authorities[0] });
}

function badRequest(problem: RequestProblem): Decision {
  return { outcome: 'bad_request', status: 400, problem, reasons: [problem] };
}

// ---------------------------------------------------------------------------------------------
// §2. svc's own endpoints

/**
 * The host keys a configured URL answers, the way a route's `from` answers hosts (§3): its own
 * scheme's default port (or none) answers the bare host name and `host:default`; any other port
 * answers only `host:port`. READING: the rule book does not say how the service URLs' hosts are
 * compared; using the route rule means `auth.example.com:443` is svc's own too.
 */
function hostsOfUrl(url: string): string[] {
  const u = new URL(url);
  const scheme = u.protocol.slice(0, -1);
  const host = u.hostname.toLowerCase();
  const port = u.port === '' ? DEFAULT_PORT[scheme] : Number(u.port);
  if (port === undefined) return [host];
  return port === DEFAULT_PORT[scheme] ? [host, `${host}:${port}`] : [`${host}:${port}`];
}

/**
 * READING: "paths equal to or under `/.svc/`" includes `/.svc` itself (no trailing slash): the whole
 * reserved name is svc's, so `/.svc` is never forwarded to an upstream. The authenticate host wins
 * when both service URLs name one host.
 */
function internalEndpoint(body: PlanBody, c: CanonicalRequest): InternalEndpoint | undefined {
  const auth = body.settings.authenticate;
  if (auth.serviceUrl !== null && hostsOfUrl(auth.serviceUrl).includes(c.host)) return { service: 'authenticate', path: c.path };
  if (auth.forwardAuthUrl !== null && hostsOfUrl(auth.forwardAuthUrl).includes(c.host)) return { service: 'forward_auth', path: c.path };
  const own = ['/.svc', '/.well-known/svc'].some((p) => c.path === p || c.path.startsWith(`${p}/`));
  return own ? { service: 'proxy', path: c.path } : undefined;
}

// ---------------------------------------------------------------------------------------------
// §3. Route matching

/** `https://a` and `https://a:443` answer `a` and `a:443`; another port answers only `a:port`; `tcp+https` never. */
function answersHost(route: Route, host: string): boolean {
  if (route.from.scheme !== 'https') return false;
  const name = route.from.host;
  if (route.from.port === null || route.from.port === 443) return host === name || host === `${name}:443`;
  return host === `${name}:${route.from.port}`;
}

/** READING: `path_case: insensitive` compares both sides lower-cased (the canonical path is ASCII). */
function pathMatches(route: Route, path: string): boolean {
  const m = route.match;
  const fold = route.pathCase === 'insensitive';
  const same = (s: string): string => (fold ? s.toLowerCase() : s);
  switch (m.kind) {
    case 'any':
      return true;
    case 'path':
      return same(path) === same(m.path);
    case 'prefix':
      return same(path).startsWith(same(m.prefix));
    case 'regex':
      return RE2JS.compile(m.regex, fold ? RE2JS.CASE_INSENSITIVE : 0).matcher(path).matches(); // the whole path (implicitly anchored)
  }
}

// ---------------------------------------------------------------------------------------------
// §4. The unauthenticated answer

/** READING: "an Accept header naming text/html" is a media range equal to `text/html` (any case, parameters ignored). */
function isBrowser(request: DecisionRequest): boolean {
  const accept = request.headers['accept'] ?? [];
  return accept.some((value) => value.split(',').some((range) => range.split(';')[0]!.trim().toLowerCase() === 'text/html'));
}

function signInLocation(body: PlanBody, c: CanonicalRequest, scheme: 'http' | 'https'): string | null {
  const serviceUrl = body.settings.authenticate.serviceUrl;
  if (serviceUrl === null) return null; // READING: no authenticate service to send a browser to → 401
  // READING: https, except a plain-HTTP listener whose cookies are not `Secure` (browsing without TLS).
  const backScheme = scheme === 'http' && !body.settings.cookie.secure ? 'http' : 'https';
  const back = `${backScheme}://${c.host}${c.path}${c.query ? `?${c.query}` : ''}`;
  return `${new URL(serviceUrl).origin}/.svc/sign_in?svc_redirect_uri=${encodeURIComponent(back)}`;
}

// ---------------------------------------------------------------------------------------------
// §5. The client address

/**
 * The TCP peer with 0 trusted hops; with N > 0 the N-th address from the right of all
 * `X-Forwarded-For` values (comma-separated, trimmed). Undefined (→ 400) when there are fewer than N
 * entries or one of them is not an IP address. READING: each of the last N entries must be an
 * address (they are all written by trusted proxies, and they are what §6 forwards); entries further
 * left are the client's own and are ignored.
 */
function clientAddress(request: DecisionRequest, trustedHops: number): IpAddress | undefined {
  if (trustedHops === 0) return parseIp(request.peer);
  const entries = xffEntries(request.headers);
  if (entries.length < trustedHops) return undefined;
  const trusted = entries.slice(entries.length - trustedHops).map(parseIp);
  if (trusted.some((ip) => ip === undefined)) return undefined;
  return trusted[0];
}

/** Every entry of every `X-Forwarded-For` header, in order, trimmed. */
function xffEntries(headers: DecisionRequest['headers']): string[] {
  const values = headers['x-forwarded-for'] ?? [];
  if (values.length === 0) return [];
  return values.join(',').split(',').map((e) => e.trim());
}

// ---------------------------------------------------------------------------------------------
// §6. The upstream request

/** Cumulative weights in listed order; the sample (in [0, 1)) scaled by the total picks the first whose sum exceeds it. */
function chooseUpstream(upstreams: readonly Upstream[], sample: number): Upstream {
  const total = upstreams.reduce((s, u) => s + u.weight, 0);
  let sum = 0;
  for (const u of upstreams) {
    sum += u.weight;
    if (sample * total < sum) return u;
  }
  return upstreams[upstreams.length - 1]!;
}

/** §6 path step 1: the matched part replaced by `prefix_rewrite`. */
function replaceMatchedPart(route: Route, path: string, rewrite: string): string {
  switch (route.match.kind) {
    case 'prefix':
      return rewrite + path.slice(route.match.prefix.length);
    case 'any':
      return rewrite + path.slice(1); // the matched part of a route without a matcher is `/`
    case 'path':
    case 'regex':
      return rewrite; // the whole path
  }
}

/**
 * Replaces every match of the RE2 `pattern` in `input` by `substitution`, where `\1`…`\9` insert
 * capture groups and `\\` a backslash; any other backslash and `$` are literal. Matches are those
 * RE2JS's `find` walks, left to right. READING: `\0` inserts the whole match (RE2's own rewrite
 * syntax, which the rule book's `\1`…`\9` is taken from); a group that did not take part in the
 * match, or that the pattern does not have, inserts nothing.
 */
export function substituteAll(pattern: string, substitution: string, input: string): string {
  const m = RE2JS.compile(pattern).matcher(input);
  let out = '';
  let last = 0;
  while (m.find()) {
    out += input.slice(last, m.start());
    for (let i = 0; i < substitution.length; i++) {
      const ch = substitution[i]!;
      const next = substitution[i + 1];
      if (ch === '\\' && next !== undefined && /[0-9]/.test(next)) {
        const n = Number(next);
        out += n <= m.groupCount() ? (m.group(n) ?? '') : '';
        i++;
      } else if (ch === '\\' && next === '\\') {
        out += '\\';
        i++;
      } else {
        out += ch;
      }
    }
    last = m.end();
  }
  return out + input.slice(last);
}

function matchesSomewhere(pattern: string, input: string): boolean {
  return RE2JS.compile(pattern).matcher(input).find();
}

/** §6 path, steps 1-5; undefined when step 5 refuses it. */
function upstreamPath(route: Route, upstream: Upstream, path: string): string | undefined {
  let p = path;
  if (route.rewrite.prefixRewrite !== null) p = replaceMatchedPart(route, p, route.rewrite.prefixRewrite);
  else if (route.rewrite.regex !== null) p = substituteAll(route.rewrite.regex.pattern, route.rewrite.regex.substitution, p);
  if (!p.startsWith('/')) p = `/${p}`;
  const t = upstream.path;
  const joined = t === '' ? p : t + p.slice(1); // docs/decisions.md §6, literally
  // Step 5: the forwarded prefix is what steps 1-4 give for the rest `/` (or `` after a prefix).
  const rewrite = route.rewrite.prefixRewrite;
  let base = rewrite === null ? '/' : rewrite.startsWith('/') ? rewrite : `/${rewrite}`;
  base = t === '' ? base : t + base.slice(1);
  return stepFive(joined, mergeRuns(base));
}

/** Runs of `/` as one. */
function mergeRuns(path: string): string {
  return path.split('/').filter((s, i, all) => s !== '' || i === 0 || i === all.length - 1).join('/');
}

/**
 * §6 step 5: slashes merged; refused (undefined) when a segment, with `%2E` read as `.`, is `.` or
 * `..`, or when the result does not start with the forwarded prefix `base`.
 */
function stepFive(path: string, base: string): string | undefined {
  const merged = mergeRuns(path);
  const dot = merged.split('/').some((s) => ['.', '..'].includes(s.replace(/%2e/gi, '.')));
  return dot || !merged.startsWith(base) ? undefined : merged;
}

/**
 * READING: a valid host for `host_rewrite_header` is a host name of RFC 3986 reg-name characters or
 * a bracketed IPv6 literal, optionally with a port 1-65535; it is sent as received.
 */
function isValidHost(value: string): boolean {
  const m = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-._~!$&'()*+,;=]+)(?::([0-9]{1,5}))?$/.exec(value);
  if (!m) return false;
  if (m[2] === undefined) return true;
  const port = Number(m[2]);
  return port >= 1 && port <= 65535;
}

function upstreamHostWithPort(u: Upstream): string {
  return u.port === DEFAULT_PORT[u.scheme] ? u.host : `${u.host}:${u.port}`;
}

/** §6 Host. */
function upstreamHost(route: Route, upstream: Upstream, request: DecisionRequest, c: CanonicalRequest): string {
  const rule = route.host;
  switch (rule.kind) {
    case 'preserve':
      return c.host;
    case 'literal':
      return rule.host;
    case 'header': {
      const values = request.headers[rule.header.toLowerCase()] ?? [];
      return values.length === 1 && isValidHost(values[0]!) ? values[0]! : upstreamHostWithPort(upstream);
    }
    case 'path_regex':
      return matchesSomewhere(rule.pattern, c.path) ? substituteAll(rule.pattern, rule.substitution, c.path) : upstreamHostWithPort(upstream);
    case 'upstream':
      return upstreamHostWithPort(upstream);
  }
}

const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'http2-settings', 'expect'];

/** A header name as the reserved-namespace rules compare it: lower case, `_` read as `-`. */
function normalName(name: string): string {
  return name.toLowerCase().replaceAll('_', '-');
}

/**
 * READING: the `X-Forwarded-*` family (`x-forwarded-*`, `forwarded`, `x-real-ip`) is recognized
 * with `_` read as `-` like the reserved namespaces, because upstream frameworks (CGI, Django,
 * nginx with underscores) read `X_Forwarded_For` as `X-Forwarded-For`. An underscore spelling is
 * never what a trusted proxy writes, so it is dropped even with trusted hops.
 */
function isForwardedFamily(name: string): boolean {
  const n = normalName(name);
  return n.startsWith('x-forwarded-') || n === 'forwarded' || n === 'x-real-ip';
}

/** §6 headers, steps 1-6. Values stay lists until the end, where duplicates are joined. */
function upstreamHeaders(body: PlanBody, route: Route, request: DecisionRequest, identity: Identity | null, host: string): Record<string, string> {
  const settings = body.settings;
  const claimHeaderNames = Object.keys(settings.identity.claimHeaders).map(normalName);

  // 1. the client's headers, minus hop-by-hop ones (and those `connection` lists), HTTP/2
  // pseudo-headers and `host`.
  const listed = (request.headers['connection'] ?? []).flatMap((v) => v.split(',')).map((s) => s.trim().toLowerCase()).filter((s) => s !== '');
  const headers = new Map<string, string[]>();
  for (const [rawName, values] of Object.entries(request.headers)) {
    if (values === undefined || values.length === 0) continue;
    const name = rawName.toLowerCase();
    // READING: `connection` cannot remove the X-Forwarded-* family: those are step 3's to keep or
    // drop, and letting a client strip them through `Connection` is the hop-by-hop abuse of
    // Traefik CVE-2024-45410 (an upstream would then take svc's peer for the client).
    if (name === 'host' || name.startsWith(':') || HOP_BY_HOP.includes(name) || (listed.includes(name) && !isForwardedFamily(name))) continue;
    // 2. minus svc's reserved namespaces: a client never supplies an identity header (invariant 5).
    const n = normalName(name);
    if (n.startsWith('x-svc-') || n.startsWith('x-envoy-') || claimHeaderNames.includes(n)) continue;
    // A name with `_` only on a route that allows it (an upstream may read it as `-`).
    if (name.includes('_') && !route.allowUnderscoresInHeaders) continue;
    headers.set(name, [...(headers.get(name) ?? []), ...values]);
  }

  // 3. X-Forwarded-*.
  const hops = settings.server.xffNumTrustedHops;
  for (const name of [...headers.keys()]) {
    if (!isForwardedFamily(name)) continue;
    if (hops === 0 || name.includes('_')) headers.delete(name);
  }
  let xff: string[] = [];
  const keptXff = headers.get('x-forwarded-for');
  if (keptXff !== undefined) {
    const entries = keptXff.join(',').split(',').map((e) => e.trim());
    xff = entries.slice(Math.max(0, entries.length - hops));
  }
  // READING: the peer is appended in the form §5 reads it (an IPv4-mapped address as IPv4).
  if (!settings.server.skipXffAppend) {
    const peer = parseIp(request.peer);
    xff.push(peer === undefined ? request.peer : peer.family === 4 ? formatIp(peer) : request.peer);
  }
  headers.delete('x-forwarded-for');
  if (xff.length > 0) headers.set('x-forwarded-for', [xff.join(', ')]);
  if (!headers.has('x-forwarded-proto')) headers.set('x-forwarded-proto', [request.scheme]);

  // 4. remove_request_headers, then set_request_headers (names compared case-insensitively).
  for (const name of route.requestHeaders.remove) headers.delete(name.toLowerCase());
  for (const [name, value] of Object.entries(route.requestHeaders.set)) headers.set(name.toLowerCase(), [value]);

  // 5. identity headers for a signed-in user on a route that passes them.
  if (route.passIdentityHeaders && identity !== null) {
    for (const [header, claim] of Object.entries(settings.identity.claimHeaders)) {
      const values = identityClaim(identity, claim);
      // A claim with no value (no email, no groups, a missing claim) gives no header: the client's
      // copy is already gone (step 2), and a value the operator set in step 4 stays. READING:
      // several values are joined with `,` (no space), like `groups`.
      if (values.length > 0) headers.set(header.toLowerCase(), [values.join(',')]);
    }
  }

  // 6. host.
  headers.set('host', [host]);

  const out: Record<string, string> = {};
  for (const [name, values] of headers) out[name] = values.join(name === 'cookie' ? '; ' : ', ');
  return out;
}

/** The values of a `jwt_claims_headers` claim: `user`/`sub`/`id` the user id, `email`, `groups`, else the IdP claim. */
function identityClaim(identity: Identity, claim: string): string[] {
  if (claim === 'user' || claim === 'sub' || claim === 'id') return [identity.user];
  if (claim === 'email') {
    // Only an email that is an address is sent, in the form policy saw (domain lower-cased).
    const email = emailAddress(identity.email);
    return email === undefined ? [] : [email];
  }
  if (claim === 'groups') return [...identity.groups];
  return claimValues(identity.claims, claim);
}

function upstreamRequest(body: PlanBody, route: Route, upstreams: readonly Upstream[], request: DecisionRequest, c: CanonicalRequest, identity: Identity | null): UpstreamRequest | undefined {
  const upstream = chooseUpstream(upstreams, request.upstreamSample ?? 0);
  const path = upstreamPath(route, upstream, c.path);
  if (path === undefined) return undefined;
  const port = upstream.port === DEFAULT_PORT[upstream.scheme] ? '' : `:${upstream.port}`;
  const url = `${upstream.scheme}://${upstream.host}${port}${path}${c.query ? `?${c.query}` : ''}`;
  const host = upstreamHost(route, upstream, request, c);
  return { url, host, headers: upstreamHeaders(body, route, request, identity, host), assertion: route.passIdentityHeaders && identity !== null };
}

// ---------------------------------------------------------------------------------------------
// §7. Redirect routes

/**
 * READING: "the request's port" is the canonical request's port, which is absent when it was the
 * listener scheme's default; so `http://a/x` redirected to https gives `https://a/x`, not `:80`.
 */
function redirectLocation(route: Route, c: CanonicalRequest): string | undefined {
  if (route.action.kind !== 'redirect') throw new Error('redirectLocation: not a redirect route');
  const r = route.action.redirect;
  const scheme = r.httpsRedirect ? 'https' : (r.scheme ?? 'https');
  const hostname = r.host ?? c.hostname;
  const port = r.port ?? c.port;
  const portText = port === undefined || port === DEFAULT_PORT[scheme] ? '' : `:${port}`;
  let path = r.path ?? (r.prefixRewrite !== null ? replaceMatchedPart(route, c.path, r.prefixRewrite) : c.path);
  if (r.path === null && r.prefixRewrite !== null) {
    // §7 reads §6 step 5 for a `prefix_rewrite`: merged, and no dot segment (no `to` prefix to stay under).
    const normal = stepFive(path.startsWith('/') ? path : `/${path}`, '/');
    if (normal === undefined) return undefined;
    path = normal;
  }
  const query = !r.stripQuery && c.query ? `?${c.query}` : '';
  return `${scheme}://${hostname}${portText}${path}${query}`;
}

// ---------------------------------------------------------------------------------------------
// §9. CONNECT

/**
 * The authority of a `CONNECT` target (§9): `host:port`, the host a host name (letters, digits,
 * `.` and `-`, beginning and ending with a letter or digit) or a bracketed IPv6 address, lower-cased;
 * the port one to five decimal digits, 1-65535. Undefined for anything else.
 */
export function connectAuthority(target: string): { readonly host: string; readonly port: number } | undefined {
  const colon = target.lastIndexOf(':');
  if (colon < 0) return undefined;
  const host = target.slice(0, colon).toLowerCase();
  const portText = target.slice(colon + 1);
  if (!/^[0-9]{1,5}$/.test(portText)) return undefined;
  const port = Number(portText);
  if (port < 1 || port > 65535) return undefined;
  const hostName = /^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/.test(host);
  const ipv6 = host.startsWith('[') && host.endsWith(']') && parseIp(host.slice(1, -1))?.family === 6;
  return hostName || ipv6 ? { host, port } : undefined;
}

/**
 * Decides a `CONNECT host:port` request as rule book §9 says: the authority (400), the client
 * address (§5), the first `tcp+https` route whose `from` is that host and port (404), its policy
 * with method `CONNECT` and path `/` (public routes skip it), then 403, 401 without a location, or
 * the `tcp://` upstream chosen by weight (§6).
 */
export function decideConnectReference(body: PlanBody, request: DecisionRequest, identity: Identity | null): Decision {
  const authority = connectAuthority(request.target);
  if (authority === undefined) return badRequest('target-not-origin-form');
  const client = clientAddress(request, body.settings.server.xffNumTrustedHops);
  if (client === undefined) return badRequest('client-address-invalid');
  const route = body.routes.find((r) => r.from.scheme === 'tcp+https' && r.from.host === authority.host && r.from.port === authority.port);
  if (route === undefined || route.action.kind !== 'forward') return { outcome: 'not_found', status: 404, reasons: ['no-route'] };
  const ref: RouteRef = { index: route.index, id: route.id, name: route.name };
  let verdict: PolicyResult['verdict'] = 'allow';
  let reasons: readonly string[] = ['public-route'];
  if (!route.public) {
    const policyRequest: PolicyRequest = {
      method: 'CONNECT',
      path: '/',
      headers: request.headers,
      clientIp: client,
      nowMs: request.nowMs,
      ...(request.clientCertificate !== undefined ? { clientCertificate: request.clientCertificate } : {}),
    };
    ({ verdict, reasons } = evaluatePolicy(route.policy, policyRequest, identity));
  }
  if (verdict === 'deny') return { outcome: 'deny', status: reasons.includes('device-unauthorized') ? 450 : 403, route: ref, reasons };
  if (verdict === 'unauthenticated') return { outcome: 'unauthenticated', status: 401, route: ref, reasons, location: null, ...(identity !== null ? { device: true as const } : {}) };
  const u = chooseUpstream(route.action.upstreams, request.upstreamSample ?? 0);
  return { outcome: 'allow', status: 200, route: ref, reasons, upstream: { url: `tcp://${u.host}:${u.port}`, host: `${u.host}:${u.port}`, headers: {}, assertion: false } };
}

// ---------------------------------------------------------------------------------------------
// §8. Response headers

/**
 * Edits a forwarded response's headers (rule book §8): each `rewrite_response_headers` entry
 * replaces a leading `prefix` of the named header by `value` (every value of a repeated header),
 * then the route's `set_response_headers` (already merged over the global ones) replace headers of
 * the same name. Names are compared case-insensitively and written in lower case; a header given as
 * a list stays a list.
 */
export function responseHeadersReference(route: Route, upstreamHeaders: Record<string, string | string[]>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [rawName, value] of Object.entries(upstreamHeaders)) {
    const name = rawName.toLowerCase();
    const existing = out[name];
    // READING: two spellings of one name in the input are one header: their values are concatenated.
    if (existing === undefined) out[name] = Array.isArray(value) ? [...value] : value;
    else out[name] = [...(Array.isArray(existing) ? existing : [existing]), ...(Array.isArray(value) ? value : [value])];
  }
  for (const rule of route.responseHeaders.rewrite) {
    const name = rule.header.toLowerCase();
    const current = out[name];
    if (current === undefined) continue;
    const edit = (v: string) => (v.startsWith(rule.prefix) ? rule.value + v.slice(rule.prefix.length) : v);
    out[name] = Array.isArray(current) ? current.map(edit) : edit(current);
  }
  for (const [name, value] of Object.entries(route.responseHeaders.set)) out[name.toLowerCase()] = value;
  return out;
}
