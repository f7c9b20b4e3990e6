/**
 * One recorded request decided again under a plan, by svc's real decision core
 * (runtime/request/decide.ts, as `svc explain` and the proxy's gate call it), from what its access
 * line recorded: method, Host, path (never a query: the line has none, and no route or policy reads
 * one), client address, time, and the identity's attributes (runtime/observe/log/replay-attributes.ts).
 *
 * What the line cannot tell is never guessed: `missing` names each thing the two routes' policies
 * read that the line does not hold, and such a request is counted as not replayable exactly
 * (docs/diff.md "Replaying real traffic").
 */
import type { Expr, PlanEnvelope, Route } from '../../../compiler/plan/types.ts';
import { buildIndex, type PlanIndex } from '../../../runtime/plan/index.ts';
import { decide, decideConnect } from '../../../runtime/request/decide.ts';
import type { Decision, DecisionRequest, Identity } from '../../../runtime/core/types.ts';
import type { AccessRecord } from './access-record.ts';

/** What a route's policy reads that an access line may not hold. */
interface Reads {
  readonly groups: boolean;
  readonly claims: readonly string[];
  readonly device: boolean;
  readonly certificate: boolean;
  readonly preflight: boolean;
  readonly sourceIp: boolean;
}

const NOTHING: Reads = { groups: false, claims: [], device: false, certificate: false, preflight: false, sourceIp: false };

function readsOf(route: Route): Reads {
  if (route.public) return NOTHING;
  let groups = false;
  let device = false;
  let certificate = false;
  let preflight = false;
  let sourceIp = false;
  const claims = new Set<string>();
  const walk = (e: Expr): void => {
    if (e.op === 'not') return walk(e.arg);
    if (e.op !== 'criterion') return e.args.forEach(walk);
    if (e.name === 'groups') groups = true;
    else if (e.name === 'claim' && e.claim !== 'email') claims.add(e.claim);
    else if (e.name === 'device') device = true;
    else if (e.name === 'client_certificate' || e.name === 'invalid_client_certificate') certificate = true;
    else if (e.name === 'cors_preflight') preflight = true;
    else if (e.name === 'source_ip') sourceIp = true;
  };
  for (const r of route.policy.rules) walk(r.when);
  return { groups, claims: [...claims], device, certificate, preflight, sourceIp };
}

/** One plan made ready to decide recorded requests. */
export interface ReplayPlan {
  readonly plan: PlanEnvelope;
  readonly index: PlanIndex;
  /** What each route's policy reads, by route index. */
  readonly reads: readonly Reads[];
}

export function replayPlan(plan: PlanEnvelope): ReplayPlan {
  return { plan, index: buildIndex(plan.body), reads: plan.body.routes.map(readsOf) };
}

/** The decision of a recorded request under one plan, as replay compares it. */
export interface Replayed {
  /** `allow`, `redirect`, `deny`, `unauthenticated`, `not_found`, `bad_request`, `internal`, `unavailable`, or `client-certificate-required` (the gate's 495). */
  readonly outcome: string;
  readonly route: Route | null;
  readonly reasons: readonly string[];
}

/**
 * Why a request cannot be replayed exactly, when it cannot: the line holds no identity attributes
 * (`identity-not-logged`: written before svc recorded them), a claim the policy reads was not
 * recorded (`claim-not-logged`), the identity was cut on the line (`identity-cut`), an OPTIONS
 * request's preflight shape was not recorded (`preflight-not-logged`), a request refused 495 carried
 * no certificate on its line and a policy reads one (`client-certificate-not-logged`), the client certificate's
 * validity under a changed CA (`client-ca-changed`), or the client address under a changed
 * `xff_num_trusted_hops` (`client-address-setting-changed`).
 */
export type NotReplayable = 'identity-not-logged' | 'claim-not-logged' | 'identity-cut' | 'preflight-not-logged' | 'client-certificate-not-logged' | 'client-ca-changed' | 'client-address-setting-changed';

/** The identity a line recorded: null when anonymous. */
export function recordedIdentity(r: AccessRecord): Identity | null {
  if (r.user === undefined) return null;
  return {
    user: r.user,
    groups: r.groups ?? [],
    claims: r.claims ?? {},
    ...(r.email !== undefined ? { email: r.email } : {}),
    ...(r.device !== undefined ? { device: r.device } : {}),
  };
}

/** The request the listener would have received, as far as the line tells, for `plan`. */
function recordedRequest(r: AccessRecord, p: ReplayPlan): DecisionRequest {
  const settings = p.plan.body.settings;
  const hops = settings.server.xffNumTrustedHops;
  const client = r.client ?? '';
  const headers: Record<string, string[]> = { host: [r.host] };
  // The recorded client address is what the decision saw: given as the peer, or as the trusted
  // `X-Forwarded-For` entry when the plan trusts hops.
  if (hops > 0) headers['x-forwarded-for'] = [Array.from({ length: hops }, () => client).join(', ')];
  if (r.preflight === true) {
    // The criterion reads only that both are present (their values were never logged).
    headers['origin'] = ['null'];
    headers['access-control-request-method'] = ['GET'];
  }
  return {
    method: r.method ?? 'GET',
    target: r.path,
    scheme: settings.server.insecure ? 'http' : 'https',
    headers,
    peer: client,
    nowMs: r.timeMs,
    ...(r.clientCert !== undefined ? { clientCertificate: { fingerprint: r.clientCert.sha256, valid: r.clientCert.valid } } : {}),
  };
}

/** Whether a client CA applies to `route` (its own, else the global `client_ca`): a request without a valid certificate gets 495. */
function clientCa(plan: PlanEnvelope, route: Route): string | null {
  const ca = route.tls.downstreamClientCa ?? plan.body.settings.tls.clientCa;
  return ca === null ? null : JSON.stringify(ca);
}

/**
 * Decides a recorded request under `p` (never throws: the core fails closed). `reasons`: also the
 * reasons of an allowed request (they cost an explanation; replay asks only for a changed request).
 */
export function replayUnder(r: AccessRecord, p: ReplayPlan, identity: Identity | null, reasons = true): Replayed {
  const request = recordedRequest(r, p);
  const d: Decision = r.method === 'CONNECT' ? decideConnect(p.index, request, identity) : decide(p.index, request, identity, { reasons });
  const route = 'route' in d ? p.plan.body.routes[d.route.index]! : null;
  // The gate's client-certificate step (runtime/proxy/gate.ts): a route under a CA needs a valid one.
  if (route && d.outcome !== 'unavailable' && clientCa(p.plan, route) !== null && r.clientCert?.valid !== true) return { outcome: 'client-certificate-required', route, reasons: ['client-certificate-required'] };
  return { outcome: d.outcome, route, reasons: d.reasons };
}

/** What the line lacks for the two routes the plans chose (see {@link NotReplayable}); empty when the replay is exact. */
export function missing(r: AccessRecord, identity: Identity | null, olds: { p: ReplayPlan; route: Route | null }, news: { p: ReplayPlan; route: Route | null }): NotReplayable[] {
  const out = new Set<NotReplayable>();
  for (const { p, route } of [olds, news]) {
    if (!route) continue;
    const reads = p.reads[route.index] ?? NOTHING;
    if (identity !== null) {
      const attributes = reads.groups || reads.device || reads.claims.length > 0;
      if (attributes && r.groups === undefined) out.add('identity-not-logged');
      else {
        if (reads.claims.some((c) => r.claims === undefined || !Object.hasOwn(r.claims, c))) out.add('claim-not-logged');
        if (attributes && r.identityCut) out.add('identity-cut');
      }
    }
    if (reads.preflight && r.method === 'OPTIONS' && r.preflight === undefined) out.add('preflight-not-logged');
  }
  // A request refused 495 was logged without the certificate it may have presented (no route took it).
  const readsCertificate = (olds.route !== null && (olds.p.reads[olds.route.index]?.certificate ?? false)) || (news.route !== null && (news.p.reads[news.route.index]?.certificate ?? false));
  if (r.decision === 'client-certificate-required' && r.clientCert === undefined && readsCertificate) out.add('client-certificate-not-logged');
  if (olds.route && news.route && r.clientCert !== undefined) {
    const certificateMatters = (olds.p.reads[olds.route.index]?.certificate ?? false) || (news.p.reads[news.route.index]?.certificate ?? false) || clientCa(news.p.plan, news.route) !== null;
    if (certificateMatters && clientCa(olds.p.plan, olds.route) !== clientCa(news.p.plan, news.route)) out.add('client-ca-changed');
  }
  const sourceIp = (olds.route ? olds.p.reads[olds.route.index]?.sourceIp : false) || (news.route ? news.p.reads[news.route.index]?.sourceIp : false);
  if (sourceIp && olds.p.plan.body.settings.server.xffNumTrustedHops !== news.p.plan.body.settings.server.xffNumTrustedHops) out.add('client-address-setting-changed');
  return [...out].sort();
}

/** The `host:port` of each upstream of a forwarding route, sorted (what `upstream changed` compares). */
export function upstreamsOf(route: Route | null): string {
  if (!route || route.action.kind !== 'forward') return '';
  return route.action.upstreams
    .map((u) => `${u.host}:${u.port}`)
    .sort()
    .join(' ');
}
