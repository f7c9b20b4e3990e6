/**
 * The upstream request of an allowed request (docs/decisions.md §6): which upstream, the path after
 * rewrites and the `to` join, the Host, and every header sent.
 *
 * INVARIANT (identity-headers): client copies of identity headers (`x-svc-*`, configured claim
 * headers, compared case-insensitively with `_` read as `-`) and of the proxy-internal `x-envoy-*`
 * namespace never reach an upstream; identity headers are only ever set by svc, after the decision,
 * in its one identity step (runtime/authn/identity-headers.ts; docs/security.md S16, S18).
 * INVARIANT (trust-boundary): `X-Forwarded-*` from the client is kept only per
 * `xff_num_trusted_hops` (default 0: dropped) (docs/security.md S13, S14).
 */
import type { Identity, RequestHeaders, UpstreamRequest } from '../core/types.ts';
import type { CompiledRoute, PlanIndex } from '../plan/index.ts';
import { renormalizedPath, type CanonicalRequest } from './canonical-request.ts';
import { forwardedFor, plainAddress } from './client-address.ts';

// `expect`: svc answers `Expect: 100-continue` itself at the door (handler.ts) and streams the body;
// the upstream client (undici) refuses the header, so forwarding it would fail every such request.
const HOP_BY_HOP: ReadonlySet<string> = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'http2-settings', 'expect', 'host']);
const FORWARDED: ReadonlySet<string> = new Set(['forwarded', 'x-real-ip']);
const DEFAULT_PORT: Readonly<Record<string, number>> = { http: 80, https: 443 };

export interface ForwardInput {
  readonly request: CanonicalRequest;
  readonly scheme: 'http' | 'https';
  readonly headers: RequestHeaders;
  readonly peer: string;
  readonly identity: Identity | null;
  /** Which of the route's upstreams (index into its `to` list). */
  readonly upstreamIndex: number;
}

/** What an upstream request is built from, before its upstream is chosen. */
export type TemplateInput = Omit<ForwardInput, 'upstreamIndex'>;

/**
 * The upstream request of an allowed forward request before the proxy chooses its upstream: what
 * every upstream of the route shares (the path after the route's rewrites, every header but `host`).
 * `upstreamAt` completes it for one upstream. Built once per request; its headers are that request's
 * own copy.
 */
export interface UpstreamTemplate {
  readonly route: CompiledRoute;
  readonly input: TemplateInput;
  /** The path after the route's rewrites, before the `to` path join. */
  readonly path: string;
  /** Every header sent but `host` (set by `upstreamAt`). */
  readonly headers: Record<string, string>;
  readonly assertion: boolean;
}

/** The upstream-independent part of a forward route's upstream request. */
export function upstreamTemplate(index: PlanIndex, r: CompiledRoute, input: TemplateInput): UpstreamTemplate {
  if (r.route.action.kind !== 'forward') throw new Error('bug: upstreamTemplate: not a forward route');
  let path = r.rewritePath ? r.rewritePath(input.request.path) : input.request.path;
  if (!path.startsWith('/')) path = `/${path}`;
  return { route: r, input, path, headers: requestHeaders(index, r, input), assertion: r.route.passIdentityHeaders && input.identity !== null };
}

/**
 * The upstream request of `template` sent to the route's upstream `upstreamIndex`; `null` when the
 * path after rewrites and the `to` join would hold a dot segment or leave the route's forwarded
 * prefix (→ 400 `forwarded-path-dot-segment`, docs/decisions.md §6 step 5). Sets the template's
 * `host` header: call once per request.
 */
export function upstreamAt(template: UpstreamTemplate, upstreamIndex: number): UpstreamRequest | null {
  const r = template.route;
  const upstream = r.route.action.kind === 'forward' ? r.route.action.upstreams[upstreamIndex] : undefined;
  if (!upstream) throw new Error(`bug: upstreamAt: no upstream ${upstreamIndex}`);
  let path = template.path;
  // docs/decisions.md §6, literally: the `to` path and the request path without its first slash.
  if (upstream.path !== '') path = upstream.path + path.slice(1);
  // INVARIANT (one-canonical-request): what is forwarded is normal again after the string splices
  // (slashes merged, no dot segment) and stays under the route's forwarded prefix, so the upstream
  // reads the path svc matched and judged (docs/decisions.md §6).
  const normal = renormalizedPath(path);
  if (normal === undefined || !normal.startsWith(r.forwardBases[upstreamIndex] ?? '/')) return null;
  const query = template.input.request.query;
  const upstreamHost = hostWithPort(upstream.host, upstream.port, upstream.scheme);
  const url = `${upstream.scheme}://${upstreamHost}${normal}${query === '' ? '' : `?${query}`}`;
  const host = hostHeader(r, template.input, upstreamHost);
  const headers = template.headers;
  headers['host'] = host;
  return { url, host, headers, assertion: template.assertion };
}

/**
 * Builds the upstream request for a forward route and one of its upstreams (`upstreamTemplate`
 * completed by `upstreamAt`).
 */
export function upstreamRequest(index: PlanIndex, r: CompiledRoute, input: ForwardInput): UpstreamRequest | null {
  return upstreamAt(upstreamTemplate(index, r, input), input.upstreamIndex);
}

/** The upstream a sample in [0, 1) picks by weight: the first whose cumulative weight exceeds it. */
export function upstreamBySample(r: CompiledRoute, sample: number): number {
  const cumulative = r.cumulativeWeights;
  const target = sample * (cumulative[cumulative.length - 1] ?? 0);
  for (let i = 0; i < cumulative.length; i++) if (target < cumulative[i]!) return i;
  return cumulative.length - 1;
}

function hostWithPort(host: string, port: number, scheme: string): string {
  return port === DEFAULT_PORT[scheme] ? host : `${host}:${port}`;
}

const VALID_HOST = /^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*|\[[0-9a-f:.]+\])(?::([0-9]{1,5}))?$/i;

/** A host header value taken from a request header: a host name or IPv6 literal, a port 1–65535. */
function isValidHost(value: string): boolean {
  const m = VALID_HOST.exec(value);
  if (!m) return false;
  return m[1] === undefined || (Number(m[1]) >= 1 && Number(m[1]) <= 65535);
}

function hostHeader(r: CompiledRoute, input: TemplateInput, upstreamHost: string): string {
  const rule = r.route.host;
  switch (rule.kind) {
    case 'upstream':
      return upstreamHost;
    case 'preserve':
      return input.request.host;
    case 'literal':
      return rule.host;
    case 'header': {
      const values = input.headers[rule.header.toLowerCase()];
      return values?.length === 1 && isValidHost(values[0]!) ? values[0]! : upstreamHost;
    }
    case 'path_regex':
      return r.hostFromPath?.(input.request.path) ?? upstreamHost;
  }
}

const COPY = 0;
const DROP = 1;
const FORWARDED_KEPT = 2;
/** Copied only on a route with `allow_underscores_in_headers`. */
const UNDERSCORED = 3;
type HeaderKind = typeof COPY | typeof DROP | typeof FORWARDED_KEPT | typeof UNDERSCORED;

/**
 * What happens to a client header by its (lower-case) name alone: hop-by-hop headers, the reserved
 * namespaces `x-svc-*` and `x-envoy-*` in any `_` spelling, `_` spellings of the forwarded family and
 * `x-forwarded-for` (rebuilt from its trusted tail) are dropped; the rest of the forwarded family
 * is kept only with trusted hops; any other name with `_` is dropped unless the route allows it
 * (upstreams read `_` as `-`: oauth2-proxy and nginx drop them too). Configured claim-header names
 * are checked apart (they depend on the plan).
 */
function classifyHeader(name: string): HeaderKind {
  if (HOP_BY_HOP.has(name) || name.charCodeAt(0) === 0x3a) return DROP; // `:authority` & co. are HTTP/2's
  const key = nameKey(name);
  if (key.startsWith('x-svc-') || key.startsWith('x-envoy-')) return DROP;
  if (key.startsWith('x-forwarded-') || FORWARDED.has(key)) return key === 'x-forwarded-for' || key !== name ? DROP : FORWARDED_KEPT;
  return key !== name ? UNDERSCORED : COPY;
}

/** Header names repeat from request to request: memoize their kind (bounded, per process). */
const KINDS = new Map<string, HeaderKind>();

function headerKind(name: string): HeaderKind {
  let k = KINDS.get(name);
  if (k === undefined) {
    k = classifyHeader(name);
    if (KINDS.size >= 2048) KINDS.clear();
    KINDS.set(name, k);
  }
  return k;
}

/** The namespace key of a header name: lower-case with `_` read as `-`. */
function nameKey(name: string): string {
  return name.includes('_') ? name.replaceAll('_', '-') : name;
}

/** `Connection: keep-alive` alone (what most clients send): it names only a header dropped anyway. */
const ONLY_KEEP_ALIVE = /^[ \t]*keep-alive[ \t]*$/i;
const ONLY_CLOSE = /^[ \t]*close[ \t]*$/i;
const CLOSE: ReadonlySet<string> = new Set(['close']);

/**
 * The header names a request's `Connection` lists (lower case), not to be forwarded; the same set
 * whether built or shared, but the two values clients send alone need no Set built per request.
 */
function connectionListed(connection: readonly string[] | undefined): ReadonlySet<string> | undefined {
  if (connection === undefined) return undefined;
  if (connection.length === 1) {
    if (ONLY_KEEP_ALIVE.test(connection[0]!)) return undefined;
    if (ONLY_CLOSE.test(connection[0]!)) return CLOSE;
  }
  return new Set(connection.flatMap((v) => v.split(',').map((t) => t.trim().toLowerCase())));
}

function requestHeaders(index: PlanIndex, r: CompiledRoute, input: TemplateInput): Record<string, string> {
  const hops = index.body.settings.server.xffNumTrustedHops;
  const out: Record<string, string> = {};
  const listed = connectionListed(input.headers['connection']);
  const claimNames = index.claimHeaderNames;
  const underscores = r.route.allowUnderscoresInHeaders;
  for (const name in input.headers) {
    const values = input.headers[name];
    if (!values || values.length === 0) continue;
    const kind = headerKind(name);
    if (kind === DROP || (kind === UNDERSCORED && !underscores)) continue;
    if (kind === FORWARDED_KEPT) {
      // The forwarded family is decided here alone: kept only with trusted hops, and never removed
      // through `Connection` (a client listing `X-Forwarded-Proto` there must not drop a trusted one).
      if (hops === 0) continue;
    } else if (listed?.has(name)) continue;
    if (claimNames.size > 0 && claimNames.has(nameKey(name))) continue;
    out[name] = values.length === 1 ? values[0]! : values.join(name === 'cookie' ? '; ' : ', ');
  }

  const append = !index.body.settings.server.skipXffAppend;
  if (hops === 0) {
    if (append) out['x-forwarded-for'] = plainAddress(input.peer);
  } else {
    const xff = forwardedFor(input.headers).slice(-hops);
    if (append) xff.push(plainAddress(input.peer));
    if (xff.length > 0) out['x-forwarded-for'] = xff.join(', ');
  }
  if (hops === 0 || out['x-forwarded-proto'] === undefined) out['x-forwarded-proto'] = input.scheme;

  if (r.removeHeaders.size > 0) for (const name of r.removeHeaders) delete out[name];
  for (let i = 0; i < r.setHeaders.length; i++) {
    const [name, value] = r.setHeaders[i]!;
    out[name] = value;
  }

  return out;
}
