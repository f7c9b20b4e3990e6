/**
 * How `svc explain` (and `svc test`, for a failing case) shows one decision: the fixed JSON shape of
 * docs/explain-and-test.md, and a text trace for a person (the route with its `file:line:col`, every
 * policy rule and criterion leaf with its value, the verdict and reasons, and what is sent upstream or
 * the redirect).
 */
import { printCriterion, printPolicy, printRule } from '../compiler/index.ts';
import type { Expr, PlanEnvelope, Route } from '../compiler/plan/types.ts';
import { T, type PolicyExplanation, type RuleTrace, type Tri } from '../runtime/policy/program.ts';
import type { DecisionExplanation } from '../runtime/request/decide.ts';
import type { Decision, DecisionRequest, Identity } from '../runtime/core/types.ts';

/** What the decision core's `explainDecision` returns for one request. */
export type Explained = DecisionExplanation;

/**
 * The outcomes `svc explain` reports; the core's `internal` (svc's own endpoints) is shown as
 * `allow`. `unavailable` (503, no healthy upstream) comes only from a running proxy's load balancer,
 * never from `svc explain`.
 */
export type ExplainOutcome = 'allow' | 'deny' | 'unauthenticated' | 'redirect' | 'not_found' | 'bad_request' | 'unavailable';

/** `svc explain --format json`: exactly this shape, every field always present. */
export interface ExplainJson {
  /** The chosen route; `index` is its position in the config's route list. */
  readonly route: { readonly index: number; readonly id: string; readonly name: string | null } | null;
  readonly outcome: ExplainOutcome;
  readonly status: number;
  readonly reasons: readonly string[];
  /** What is forwarded: absolute URL, `Host`, and every header (lower-case names). Null unless forwarded. */
  readonly upstream: { readonly url: string; readonly host: string; readonly headers: Readonly<Record<string, string>> } | null;
  /** The redirect target (redirect route or browser sign-in); null otherwise. */
  readonly location: string | null;
  /** The route's policy in the text syntax; `""` when no route was chosen. */
  readonly policy: string;
}

/** The placeholder shown for the identity assertion, which is signed per request at run time. */
export const ASSERTION_PLACEHOLDER = '<signed JWT, added at request time>';
const ASSERTION_HEADER = 'x-svc-jwt-assertion';

/** The upstream headers as sent, with the signed assertion's placeholder before `host` when added. */
function upstreamHeaders(upstream: { readonly headers: Readonly<Record<string, string>>; readonly assertion: boolean }): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(upstream.headers)) if (k !== 'host') out[k] = v;
  if (upstream.assertion) out[ASSERTION_HEADER] = ASSERTION_PLACEHOLDER;
  const host = upstream.headers['host'];
  if (host !== undefined) out['host'] = host;
  return out;
}

/** The JSON form of one explained decision; keys in the documented order. */
export function explainJson(x: Explained): ExplainJson {
  const d = x.decision;
  const ref = 'route' in d ? { index: d.route.index, id: d.route.id, name: d.route.name } : null;
  const shape = (outcome: ExplainOutcome, upstream: ExplainJson['upstream'], location: string | null): ExplainJson => ({
    route: ref,
    outcome,
    status: d.status,
    reasons: [...d.reasons],
    upstream,
    location,
    policy: x.route ? printPolicy(x.route.policy) : '',
  });
  switch (d.outcome) {
    case 'internal':
      // svc answers its own endpoints itself: no route, nothing forwarded, no policy.
      return shape('allow', null, null);
    case 'allow':
      return shape('allow', { url: d.upstream.url, host: d.upstream.host, headers: upstreamHeaders(d.upstream) }, null);
    case 'redirect':
    case 'unauthenticated':
      return shape(d.outcome, null, d.location);
    case 'deny':
    case 'not_found':
    case 'bad_request':
      return shape(d.outcome, null, null);
    case 'unavailable':
      // Only a running proxy's load balancer gives this (no healthy upstream); explain has none.
      return shape('unavailable', null, null);
  }
}

/** What the text trace says about the request itself (the decision core does not echo it). */
export interface TraceContext {
  readonly plan: PlanEnvelope;
  readonly request: DecisionRequest;
  /** The URL as the operator typed it. */
  readonly url: string;
  readonly identity: Identity | null;
}

const TRI_WORD: Record<Tri, string> = { 0: 'false', 1: 'true', 2: 'unknown' };

/** Where a route is written: `file:line:col` from the plan's source map, or `route #i`. */
export function routeLocation(plan: PlanEnvelope, route: { readonly index: number; readonly id: string }): string {
  const pos = plan.body.routes.findIndex((r) => r.index === route.index && r.id === route.id);
  return plan.sourceMap.routes[pos]?.at ?? `route #${route.index}`;
}

/** A route as a person names it: `#1 app` or `#0 https://a.example.com prefix /api`. */
export function routeLabel(route: { readonly index: number; readonly id: string; readonly name: string | null }): string {
  return `#${route.index} ${route.name ?? route.id}`;
}

function identityLine(identity: Identity | null): string {
  if (!identity) return 'anonymous';
  const parts = [identity.user];
  if (identity.email !== undefined) parts.push(`<${identity.email}>`);
  parts.push(`groups [${identity.groups.join(', ')}]`);
  const claims = Object.keys(identity.claims);
  if (claims.length) parts.push(`claims {${claims.join(', ')}}`);
  if (identity.device) parts.push(`device ${identity.device.id} (${identity.device.type}, ${identity.device.approved ? 'approved' : 'not approved'})`);
  return parts.join(' ');
}

/**
 * The leaves of a rule in written order (depth first, as the explanation lists them), each with
 * the number of `not`s above it, so the trace can say a leaf's value is read negated.
 */
function leavesOf(e: Expr, negations = 0, out: { leaf: Expr; negations: number }[] = []): { leaf: Expr; negations: number }[] {
  switch (e.op) {
    case 'and':
    case 'or':
      for (const a of e.args) leavesOf(a, negations, out);
      break;
    case 'not':
      leavesOf(e.arg, negations + 1, out);
      break;
    case 'criterion':
      out.push({ leaf: e, negations });
  }
  return out;
}

function ruleLines(route: Route, trace: RuleTrace, i: number): string[] {
  const rule = route.policy.rules[i];
  const text = rule ? printRule(rule) : `${trace.action} if ...`;
  const lines = [`  rule ${i + 1}: ${text}  => ${TRI_WORD[trace.value]}`];
  const shapes = rule ? leavesOf(rule.when) : [];
  const texts = trace.leaves.map((l) => printCriterion(l.criterion));
  const width = Math.max(0, ...texts.map((t) => t.length));
  trace.leaves.forEach((l, k) => {
    const negated = (shapes[k]?.negations ?? 0) % 2 === 1 ? '  (under not)' : '';
    lines.push(`      ${TRI_WORD[l.value].padEnd(7)} ${texts[k]!.padEnd(width)}  ${l.reason}${negated}`);
  });
  return lines;
}

function policyLines(x: Explained): string[] {
  const route = x.route;
  if (!route) return [];
  if (route.public) return ['policy   public route (allow_public_unauthenticated_access): the identity is not consulted'];
  const p = x.policy;
  if (!p) return ['policy   not evaluated', ...printPolicy(route.policy).split('\n').map((l) => `  ${l}`)];
  if (p.rules.length === 0) return [`policy   could not be evaluated (${p.reasons.join(', ')}): fail closed`];
  return ['policy   (deny wins; a leaf is unknown when it needs a signed-in user and there is none)', ...p.rules.flatMap((t, i) => ruleLines(route, t, i))];
}

function verdictLine(d: Decision): string {
  const reasons = d.reasons.length ? `: ${d.reasons.join(', ')}` : '';
  switch (d.outcome) {
    case 'internal':
      return `verdict  allow ${d.status} (svc's own endpoint: ${d.endpoint.service} ${d.endpoint.path}; answered by svc, never forwarded)${reasons}`;
    case 'bad_request':
      return `verdict  bad_request ${d.status} (${d.problem})${reasons}`;
    case 'unauthenticated':
      return `verdict  unauthenticated ${d.status} (${d.location === null ? 'not a browser: 401' : d.device === true ? 'browser: the device page (register or use a device)' : 'browser: sign in first'})${reasons}`;
    default:
      return `verdict  ${d.outcome} ${d.status}${reasons}`;
  }
}

/** The text trace of one explained decision: several lines, each ending in a newline. */
export function renderExplainText(x: Explained, cx: TraceContext): string {
  const d = x.decision;
  const lines = [`request  ${cx.request.method} ${cx.url}`, `identity ${identityLine(cx.identity)}`];
  const extra = Object.entries(cx.request.headers).filter(([k]) => k !== 'host');
  for (const [k, vs] of extra) for (const v of vs ?? []) lines.push(`  header ${k}: ${v}`);
  lines.push(`  peer   ${cx.request.peer}`);
  if (x.canonical) {
    const c = x.canonical;
    lines.push(`  canonical ${c.host}${c.path}${c.query === '' ? '' : `?${c.query}`}`);
  }
  if (d.outcome === 'bad_request') {
    lines.push('route    none: the request was refused before routing');
  } else if (d.outcome === 'internal') {
    lines.push(`route    none: svc's own endpoint (${d.endpoint.service} ${d.endpoint.path})`);
  } else if (d.outcome === 'not_found') {
    lines.push('route    none matches this host and path');
  } else {
    lines.push(`route    ${routeLabel(d.route)} (id ${d.route.id}) at ${routeLocation(cx.plan, d.route)}`);
  }
  lines.push(...policyLines(x), verdictLine(d));
  if (d.outcome === 'allow') {
    lines.push(`upstream ${cx.request.method} ${d.upstream.url}`, `  Host: ${d.upstream.host}`);
    for (const [k, v] of Object.entries(upstreamHeaders(d.upstream))) if (k !== 'host') lines.push(`  ${k}: ${v}`);
  } else if ((d.outcome === 'redirect' || d.outcome === 'unauthenticated') && d.location !== null) {
    lines.push(`location ${d.location}`);
  }
  return `${lines.join('\n')}\n`;
}

/** Whether a rule trace counts as "true" for coverage (see docs/explain-and-test.md). */
export function ruleIsTrue(t: RuleTrace): boolean {
  return t.value === T;
}

