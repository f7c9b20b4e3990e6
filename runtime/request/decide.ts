/**
 * The decision core: one request and an identity in, the whole decision out, from the plan's index
 * alone (docs/decisions.md). Pure: no sockets, no clock (the request carries its time), no
 * randomness (the request carries the load balancer's sample). The server, `svc explain`,
 * `svc test` and the benchmarks call it; a reference interpreter (test/reference/) checks it.
 *
 * Order: duplicate Host → canonical request (400) → client address (400) → svc's own endpoints →
 * route (404) → policy (public routes skip it) → redirect, upstream request, 403, or sign-in/401.
 *
 * Two forms: `decide` answers with the upstream a weighted sample picks (`svc explain`, `svc test`,
 * forward-auth), `rule` stops before the upstream choice (the proxy's gate, which picks through the
 * route's load balancer only once every check has said yes, then completes the ruling: `complete`).
 */
import type { Route } from '../../compiler/plan/types.ts';
import { DEVICE_UNAUTHENTICATED, DEVICE_UNAUTHORIZED, POLICY_REASONS, type PolicyExplanation, type PolicyInput } from '../policy/program.ts';
import { canonicalRequest, type CanonicalRequest } from './canonical-request.ts';
import { clientAddress } from './client-address.ts';
import { upstreamAt, upstreamBySample, upstreamTemplate, type UpstreamTemplate } from './forward.ts';
import { redirectLocation } from './redirect.ts';
import { internalEndpoint, matchRoute } from './route.ts';
import type { CompiledRoute, PlanIndex } from '../plan/index.ts';
import type { Decision, DecisionRequest, Identity, RouteRef, Verdict } from '../core/types.ts';

export interface DecideOptions {
  /**
   * Compute the reasons of an allowed request (default true). The server passes false: reasons of
   * an allowed request are only for explanations, and computing them evaluates every leaf.
   */
  readonly reasons?: boolean;
  /**
   * The connection's client certificate as the chosen route's CA sees it (`client_ca`, or the
   * route's `tls_downstream_client_ca`); overrides `request.clientCertificate` for the policy.
   */
  readonly clientCertificate?: ((route: Route) => { readonly fingerprint: string; readonly valid: boolean } | undefined) | undefined;
  /**
   * The request's canonical form, when the caller already has it from `canonicalize` (the gate
   * normalizes once and uses that form for the session lookup too: docs/architecture.md §2.2).
   */
  readonly canonical?: Canonical | undefined;
  /**
   * Decides a route's policy elsewhere (the proxy role: the authorize service, through its cache;
   * runtime/authorize/): the verdict and reasons for the route, instead of its program's. Not used
   * for public routes, which have no policy.
   */
  readonly policy?: PolicyOracle | undefined;
  /**
   * Build the upstream-request template of an allowed forward (default true). The shadow decision
   * (shadow.ts) passes false: it compares decisions and forwards nothing, so an allowed ruling has
   * `template: null` there and is never completed.
   */
  readonly template?: boolean | undefined;
}

/** A route's policy verdict and reasons for a request, decided outside the core. */
export type PolicyOracle = (route: CompiledRoute, input: PolicyInput) => { readonly verdict: Verdict; readonly reasons: readonly string[] };

/**
 * A request's canonical form (docs/architecture.md §2.2), or the 400 decision for a request that has none.
 * `rawForm`: the S07 opt-in form (forbidden escapes kept), `pathParameters`: the `allow_path_parameters` opt-in (docs/decisions.md §1)
 * form (a raw `;` kept); each is kept only when the route it reaches takes it.
 */
export type Canonical = { readonly ok: true; readonly request: CanonicalRequest; readonly rawForm: boolean; readonly pathParameters: boolean } | { readonly ok: false; readonly decision: Decision & { readonly outcome: 'bad_request' } };

/**
 * Normalizes a request once: duplicate Host (or `:authority`), then the canonical target and its one
 * authority (HTTP/2's `:authority` when the headers carry it: canonical-request.ts one-authority).
 */
export function canonicalize(index: PlanIndex, request: Pick<DecisionRequest, 'target' | 'headers' | 'scheme'>): Canonical {
  const hostValues = request.headers['host'];
  const authorityValues = request.headers[':authority'];
  if ((hostValues !== undefined && hostValues.length > 1) || (authorityValues !== undefined && authorityValues.length > 1)) return { ok: false, decision: { outcome: 'bad_request', status: 400, problem: 'host-duplicate', reasons: ['host-duplicate'] } };
  const authority = authorityValues?.[0];
  const c = canonicalRequest(request.target, hostValues?.[0], request.scheme, { authority });
  if (c.ok) return { ok: true, request: c.request, rawForm: false, pathParameters: false };
  if ((c.problem === 'target-forbidden-escape' && index.rawPathHosts.size > 0) || (c.problem === 'target-path-parameter' && index.pathParameterHosts.size > 0)) {
    // The opt-ins (S07, docs/decisions.md §1): the raw form may reach a route that takes it; any other
    // route still refuses it (`run`). Both kept at once, so a target using both is judged once.
    const raw = canonicalRequest(request.target, hostValues?.[0], request.scheme, { keepForbiddenEscapes: index.rawPathHosts.size > 0, keepPathParameters: index.pathParameterHosts.size > 0, authority });
    if (raw.ok) {
      // Judged on the target as received: a `..` segment may have removed the kept part since.
      const q = request.target.indexOf('?');
      const targetPath = q < 0 ? request.target : request.target.slice(0, q);
      const rawForm = FORBIDDEN_ESCAPE.test(targetPath);
      const pathParameters = targetPath.includes(';');
      const host = raw.request.host;
      // Only a host with the opt-in keeps its form; a host without it fails below as strict did.
      // A segment that is empty, `.` or `..` once its parameters are cut (`/..;/admin`) is what
      // Java servers resolve: never kept, opt-in or not.
      if ((!rawForm || index.rawPathHosts.has(host)) && (!pathParameters || (index.pathParameterHosts.has(host) && !DOT_WITH_PARAMETERS.test(raw.request.path)))) {
        return { ok: true, request: raw.request, rawForm, pathParameters };
      }
    }
  }
  return { ok: false, decision: { outcome: 'bad_request', status: 400, problem: c.problem, reasons: [c.problem] } };
}

/** An escape `canonicalRequest` refuses unless told to keep it (S07). */
const FORBIDDEN_ESCAPE = /%(?:2[fF]|5[cC]|3[bBfF]|23|[01][0-9a-fA-F]|7[fF])/;
/** A path segment that is empty, `.` or `..` before its `;` parameters. */
const DOT_WITH_PARAMETERS = /\/\.{0,2};/;

/**
 * An allowed forward request before its upstream is chosen: the route and the upstream-request
 * template (`null` for a CONNECT, whose upstream is the `tcp://` address itself).
 */
export interface Forward {
  readonly outcome: 'forward';
  readonly status: 200;
  readonly route: RouteRef;
  readonly reasons: readonly string[];
  readonly compiled: CompiledRoute;
  readonly template: UpstreamTemplate | null;
}

/** A decision whose upstream, for an allowed forward request, is not chosen yet. */
export type Ruling = Exclude<Decision, { readonly outcome: 'allow' }> | Forward;

/**
 * The decision of a ruling once its upstream is chosen: `upstreamIndex` into the route's `to` list,
 * or undefined when none is healthy (503 `no-healthy-upstream`). Call once per ruling (it completes
 * the template's headers in place).
 */
export function complete(ruling: Ruling, upstreamIndex: number | undefined): Decision {
  if (ruling.outcome !== 'forward') return ruling;
  const route = ruling.route;
  if (upstreamIndex === undefined) return { outcome: 'unavailable', status: 503, route, reasons: ['no-healthy-upstream'] };
  if (ruling.template === null) {
    const action = ruling.compiled.route.action;
    const u = action.kind === 'forward' ? action.upstreams[upstreamIndex]! : undefined;
    if (!u) throw new Error(`bug: complete: no upstream ${upstreamIndex}`);
    return { outcome: 'allow', status: 200, route, reasons: ruling.reasons, upstream: { url: `tcp://${u.host}:${u.port}`, host: `${u.host}:${u.port}`, headers: {}, assertion: false } };
  }
  const upstream = upstreamAt(ruling.template, upstreamIndex);
  if (upstream === null) return FORWARDED_PATH_REFUSED;
  return { outcome: 'allow', status: 200, route, reasons: ruling.reasons, upstream };
}

/** The upstream the request's `upstreamSample` picks by weight (0 when absent). */
export function sampledUpstream(r: CompiledRoute, request: Pick<DecisionRequest, 'upstreamSample'>): number {
  return upstreamBySample(r, request.upstreamSample ?? 0);
}

/** Decides one request, its upstream picked by `upstreamSample`. Never throws for any request (fail closed: a policy error is a deny). */
export function decide(index: PlanIndex, request: DecisionRequest, identity: Identity | null, options: DecideOptions = {}): Decision {
  return bySample(run(index, request, identity, options.reasons !== false, false, options).decision, request);
}

/** Decides one request up to its upstream choice (the gate's form: see the file comment). */
export function rule(index: PlanIndex, request: DecisionRequest, identity: Identity | null, options: DecideOptions = {}): Ruling {
  return run(index, request, identity, options.reasons !== false, false, options).decision;
}

function bySample(ruling: Ruling, request: DecisionRequest): Decision {
  return ruling.outcome === 'forward' ? complete(ruling, sampledUpstream(ruling.compiled, request)) : ruling;
}

/** A decision with what led to it, for `svc explain` and `svc test`. */
export interface DecisionExplanation {
  readonly decision: Decision;
  /** The chosen route, when one matched. */
  readonly route: Route | null;
  /** The policy evaluation, when the route's policy was evaluated (not for public routes). */
  readonly policy: PolicyExplanation | null;
  /** The canonical request, when the target was valid. */
  readonly canonical: CanonicalRequest | null;
}

/** Decides one request and keeps the full policy trace. */
export function explainDecision(index: PlanIndex, request: DecisionRequest, identity: Identity | null): DecisionExplanation {
  const x = run(index, request, identity, true, true, {});
  return { ...x, decision: bySample(x.decision, request) };
}

/** A `DecisionExplanation` whose decision is a ruling. */
type RulingExplanation = Omit<DecisionExplanation, 'decision'> & { readonly decision: Ruling };

function run(index: PlanIndex, request: DecisionRequest, identity: Identity | null, wantReasons: boolean, wantTrace: boolean, options: DecideOptions): RulingExplanation {
  const none = { route: null, policy: null };
  const c = options.canonical ?? canonicalize(index, request);
  if (!c.ok) return { ...none, canonical: null, decision: c.decision };
  const req = c.request;
  const rawForm = c.rawForm;
  const certificateFor = options.clientCertificate;
  const address = clientAddress(request.peer, request.headers, index.body.settings.server.xffNumTrustedHops);
  if (address === undefined) return { ...none, canonical: req, decision: { outcome: 'bad_request', status: 400, problem: 'client-address-invalid', reasons: ['client-address-invalid'] } };

  const endpoint = internalEndpoint(index, req);
  const r = endpoint ? undefined : matchRoute(index, req);
  if (rawForm && !r?.route.allowEncodedPathCharacters) return { ...none, canonical: null, decision: { outcome: 'bad_request', status: 400, problem: 'target-forbidden-escape', reasons: ['target-forbidden-escape'] } };
  if (c.pathParameters && !r?.route.allowPathParameters) return { ...none, canonical: null, decision: { outcome: 'bad_request', status: 400, problem: 'target-path-parameter', reasons: ['target-path-parameter'] } };
  if (endpoint) return { ...none, canonical: req, decision: { outcome: 'internal', status: 200, endpoint, reasons: ['internal'] } };

  if (!r) return { ...none, canonical: req, decision: { outcome: 'not_found', status: 404, reasons: ['no-route'] } };

  let verdict: Verdict;
  let reasons: readonly string[] = [];
  let trace: PolicyExplanation | null = null;
  if (r.route.public) {
    verdict = 'allow';
    reasons = ['public-route'];
  } else {
    const input: PolicyInput = {
      identity,
      method: request.method,
      path: req.path,
      headers: request.headers,
      clientAddress: address,
      clientCertificate: (certificateFor ? certificateFor(r.route) : request.clientCertificate) ?? null,
      nowMs: request.nowMs,
    };
    if (options.policy) {
      const answer = options.policy(r, input);
      verdict = answer.verdict;
      // As below: the reasons of an allowed request only when asked for.
      reasons = verdict !== 'allow' || wantReasons || wantTrace ? answer.reasons : [];
    } else {
      verdict = r.program.verdict(input);
      if (wantTrace || verdict !== 'allow' || wantReasons) {
        trace = r.program.explain(input);
        reasons = trace.reasons;
      }
    }
  }
  return { route: r.route, policy: trace, canonical: req, decision: answer(index, r, verdict, reasons, req, request, identity, options.template !== false) };
}

function answer(index: PlanIndex, r: CompiledRoute, verdict: Verdict, reasons: readonly string[], req: CanonicalRequest, request: DecisionRequest, identity: Identity | null, withTemplate: boolean): Ruling {
  const route = r.ref;
  if (verdict === 'deny') return { outcome: 'deny', status: reasons.includes(DEVICE_UNAUTHORIZED) ? 450 : 403, route, reasons };
  if (verdict === 'unauthenticated') {
    const browser = acceptsHtml(request.headers['accept']);
    if (identity !== null) {
      // Signed in: only a `device` leaf is unknown (docs/decisions.md §4). The device page is svc's
      // own, on this host; its return URL is this request's, from the canonical host (S14).
      const deviceReasons = reasons.map((r) => (r === POLICY_REASONS[0] ? DEVICE_UNAUTHENTICATED : r));
      if (!browser) return { outcome: 'unauthenticated', status: 401, route, reasons: deviceReasons, location: null, device: true };
      const scheme = request.scheme === 'http' && !index.body.settings.cookie.secure ? 'http' : 'https';
      const back = `${scheme}://${req.host}${req.path}${req.query === '' ? '' : `?${req.query}`}`;
      return { outcome: 'unauthenticated', status: 302, route, reasons: deviceReasons, location: `${scheme}://${req.host}${DEVICE_PAGE_PATH}?svc_redirect_uri=${encodeURIComponent(back)}`, device: true };
    }
    if (!browser || index.signInOrigin === null) return { outcome: 'unauthenticated', status: 401, route, reasons, location: null };
    // INVARIANT (configured-urls): the sign-in URL comes from configuration; the return URL from the
    // canonical host of a configured route (docs/security.md S14).
    // https, except on a plain-HTTP listener whose cookies are not `Secure` (browsing without TLS,
    // as in the quickstart): there an https return URL could not be reached.
    const backScheme = request.scheme === 'http' && !index.body.settings.cookie.secure ? 'http' : 'https';
    const back = `${backScheme}://${req.host}${req.path}${req.query === '' ? '' : `?${req.query}`}`;
    return { outcome: 'unauthenticated', status: 302, route, reasons, location: `${index.signInOrigin}/.svc/sign_in?svc_redirect_uri=${encodeURIComponent(back)}` };
  }
  if (r.route.action.kind === 'redirect') {
    const location = redirectLocation(r, req);
    if (location === null) return FORWARDED_PATH_REFUSED;
    return { outcome: 'redirect', status: r.route.action.redirect.responseCode, route, reasons, location };
  }
  const template = withTemplate ? upstreamTemplate(index, r, { request: req, scheme: request.scheme, headers: request.headers, peer: request.peer, identity }) : null;
  return { outcome: 'forward', status: 200, route, reasons, compiled: r, template };
}

/** svc's device page on every route host (docs/authentication.md "Devices"). */
export const DEVICE_PAGE_PATH = '/.svc/webauthn';

/** An allowed request whose rewritten path would hold a dot segment (docs/decisions.md §6 step 5). */
const FORWARDED_PATH_REFUSED: Decision & { readonly outcome: 'bad_request' } = { outcome: 'bad_request', status: 400, problem: 'forwarded-path-dot-segment', reasons: ['forwarded-path-dot-segment'] };

/** Some media range of an `Accept` header is `text/html` (case-insensitive, parameters ignored). */
function acceptsHtml(accept: readonly string[] | undefined): boolean {
  if (!accept) return false;
  for (const value of accept) {
    for (const range of value.split(',')) {
      const semi = range.indexOf(';');
      if ((semi < 0 ? range : range.slice(0, semi)).trim().toLowerCase() === 'text/html') return true;
    }
  }
  return false;
}

const AUTHORITY = /^([a-z0-9](?:[a-z0-9.-]*[a-z0-9])?|\[[0-9a-f:.]+\]):([0-9]{1,5})$/;

/**
 * The canonical `host:port` of a CONNECT target (lower-case, port without leading zeros), as
 * `PlanIndex.tcpHosts` keys routes and as a tunnel token names its route; undefined when the target
 * is not `host:port`.
 */
export function connectAuthority(target: string): string | undefined {
  const m = AUTHORITY.exec(target.toLowerCase());
  const port = m ? Number(m[2]) : 0;
  return m && port >= 1 && port <= 65535 ? `${m[1]}:${port}` : undefined;
}

/**
 * Decides a `CONNECT host:port` request (a `tcp+https` route, docs/decisions.md §3): the route
 * whose `from` names that host and port, its policy (method `CONNECT`, path `/`), and on allow the
 * `tcp://` upstream to open. Anonymous callers get 401, never a sign-in redirect (no browser does
 * CONNECT through svc); a tunnel's identity comes from its `Proxy-Authorization` token (docs/tcp.md).
 */
export function decideConnect(index: PlanIndex, request: DecisionRequest, identity: Identity | null, options: Pick<DecideOptions, 'clientCertificate' | 'policy'> = {}): Decision {
  return bySample(ruleConnect(index, request, identity, options), request);
}

/** `decideConnect` up to its upstream choice (the gate's form). */
export function ruleConnect(index: PlanIndex, request: DecisionRequest, identity: Identity | null, options: Pick<DecideOptions, 'clientCertificate' | 'policy'> = {}): Ruling {
  return runConnect(index, request, identity, false, options.clientCertificate, options.policy).decision;
}

/** A CONNECT decision with its route and full policy trace, for `svc explain -X CONNECT`. */
export function explainConnect(index: PlanIndex, request: DecisionRequest, identity: Identity | null): DecisionExplanation {
  const x = runConnect(index, request, identity, true);
  return { ...x, decision: bySample(x.decision, request) };
}

function runConnect(index: PlanIndex, request: DecisionRequest, identity: Identity | null, wantTrace: boolean, certificateFor?: DecideOptions['clientCertificate'], oracle?: PolicyOracle): RulingExplanation {
  const none = { route: null, policy: null, canonical: null };
  const authority = connectAuthority(request.target);
  if (authority === undefined) return { ...none, decision: { outcome: 'bad_request', status: 400, problem: 'target-not-origin-form', reasons: ['target-not-origin-form'] } };
  const address = clientAddress(request.peer, request.headers, index.body.settings.server.xffNumTrustedHops);
  if (address === undefined) return { ...none, decision: { outcome: 'bad_request', status: 400, problem: 'client-address-invalid', reasons: ['client-address-invalid'] } };
  const r = index.tcpHosts.get(authority)?.[0];
  const action = r?.route.action;
  if (!r || action?.kind !== 'forward') return { ...none, decision: { outcome: 'not_found', status: 404, reasons: ['no-route'] } };
  const route = r.ref;
  let verdict: Verdict = 'allow';
  let reasons: readonly string[] = ['public-route'];
  let trace: PolicyExplanation | null = null;
  if (!r.route.public) {
    const input: PolicyInput = { identity, method: 'CONNECT', path: '/', headers: request.headers, clientAddress: address, clientCertificate: (certificateFor ? certificateFor(r.route) : request.clientCertificate) ?? null, nowMs: request.nowMs };
    if (oracle) {
      const answer = oracle(r, input);
      verdict = answer.verdict;
      reasons = answer.reasons;
    } else {
      trace = r.program.explain(input);
      verdict = trace.verdict;
      reasons = trace.reasons;
    }
  }
  const decision = ((): Ruling => {
    if (verdict === 'deny') return { outcome: 'deny', status: reasons.includes(DEVICE_UNAUTHORIZED) ? 450 : 403, route, reasons };
    if (verdict === 'unauthenticated') return { outcome: 'unauthenticated', status: 401, route, reasons, location: null, ...(identity !== null ? { device: true as const } : {}) };
    return { outcome: 'forward', status: 200, route, reasons, compiled: r, template: null };
  })();
  return { route: r.route, policy: wantTrace ? trace : null, canonical: null, decision };
}
