/**
 * The one gate (docs/architecture.md §5 "One gate"): every way into svc — a plain request, a
 * websocket or SPDY upgrade, a CONNECT tunnel, over HTTP/1.1 or HTTP/2 — is admitted or refused
 * here, by the same steps in the same order, each in its own file, read top to bottom in `admit`:
 *
 *   1. the door (door.ts): HTTP/1.0 (505), more than `MAX_HEADER_FIELDS` header fields (431), the
 *      canonical request, once, and the connection's certificate covers the host (421);
 *   2. the session (authn/service.ts: the cookie, or a programmatic bearer token);
 *   3. the decision: svc's own endpoints, route, policy (request/decide.ts `rule`, or the authorize
 *      service in the proxy role; authn/admit.ts, shared with forward-auth), then here the role's
 *      part (role.ts), the client certificate of the route or of `client_ca` (495) and the session
 *      store's outage rule;
 *   4. the identity headers of an allowed forward (authn/identity-headers.ts; CONNECT has none),
 *      applied to this request's own upstream headers; an assertion that cannot be signed is 500
 *      `identity-assertion-failed` (`Admission.identityError`);
 *   5. the pick (pick.ts): the upstream, through the route's upstream set, and its TLS options.
 *      Last, once every step above has said yes, so nothing ever has to undo it.
 *
 * With a shadow plan (`svc run --shadow`, request/shadow.ts), step 3 decides the request a second
 * time with the candidate plan's routes and policies, on the same request, session and client
 * certificate, right after the enforced decision: the difference, if any, rides on the admission
 * (`Admission.shadow`) to the access line and is counted; nothing else reads it. Without a shadow
 * plan it costs one branch.
 *
 * The entry points (handler.ts, upgrade.ts, connect.ts) then add only what is their own (the
 * request id, the trace headers, an upgrade's headers) and forward: stream a response, switch
 * protocols after the upstream's 101, or open a tunnel.
 *
 * INVARIANT (one-gate): no entry point decides, looks up a session or chooses an upstream itself.
 * INVARIANT (no-bytes-before-gate): an entry point reads nothing from the client for the upstream
 * before `admit` has answered.
 */
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { RequestObserver } from '../observe/metrics/registry.ts';
import type { Route } from '../../compiler/plan/types.ts';
import type { AuthState } from '../authn/auth-state.ts';
import type { ResolvedSession } from '../sessions/session-cache.ts';
import type { Authn, SessionLookup } from '../authn/service.ts';
import { sessionAndDecision, storeOutageDecision } from '../authn/admit.ts';
import { rule, ruleConnect, type Canonical, type Forward, type Ruling } from '../request/decide.ts';
import type { Decision, DecisionRequest, OutgoingHeaders, RequestHeaders } from '../core/types.ts';
import type { Duplex } from 'node:stream';
import type { ServedGeneration, ServedStore } from '../generation/generation.ts';
import type { CanonicalRequest } from '../request/canonical-request.ts';
import type { RequestTrace } from '../observe/trace/request-trace.ts';
import type { PolicyOracle } from '../request/decide.ts';
import type { RemoteAuthorizer } from '../authorize/remote-authorizer.ts';
import { authorizeUnavailableDecision } from '../authorize/remote-policy.ts';
import { roleAnswers } from './role.ts';
import { nothingPicked, pickUpstream, type ChosenUpstream } from './pick.ts';
import { applyIdentityHeaders, identityHeaders } from '../authn/identity-headers.ts';
import { routeHost } from '../authn/forward-auth.ts';
import { door, hostOf, refused, type Refusal } from './door.ts';
import { planIndependent, shadowDifference, type ShadowDifference } from '../request/shadow.ts';

/** The ways into svc. */
export type EntryKind = 'request' | 'upgrade' | 'connect';

/** One request at the door, as its listener received it. */
export interface Entry {
  readonly kind: EntryKind;
  readonly method: string;
  /** The request target as received; for CONNECT the `host:port` authority. */
  readonly target: string;
  readonly headers: RequestHeaders;
  /** `1.0`, `1.1` or `2.0`. */
  readonly httpVersion: string;
  /** The client's connection (its peer address, and on TLS listeners its certificate and SNI). */
  readonly socket: Socket | undefined;
  /** The header name-value pairs as received, when the entry point has them (door.ts `DoorEntry`). */
  readonly rawFields?: number;
  /** The request time (ms since the epoch); now when absent. Tests pin it. */
  readonly nowMs?: number;
  /** The load balancer's sample in [0, 1) for routes without an upstream set; random when absent. */
  readonly upstreamSample?: number;
  /**
   * The request's spans when it is traced (the session lookup and the route decision are spans under
   * it). A request entry always has the property, undefined when untraced: one object shape for
   * traced and untraced requests, so the rare sampled one does not deoptimize the gate's code.
   */
  readonly trace?: RequestTrace | undefined;
  /**
   * Whether the entry point can still forward an allowed entry to `route` (its client is still
   * there, the route takes its upgrade's protocol); when it says no, no upstream is picked (pick.ts).
   */
  readonly canForward?: ((route: Route) => boolean) | undefined;
}

/** What a listener tells the gate about its connections. Fixed for the listener's life. */
export interface GateOptions {
  /** `https` on a TLS listener, `http` with `insecure_server`. */
  readonly scheme: 'http' | 'https';
  /** Sessions and svc's own endpoints; without it every request is anonymous. */
  readonly authn?: Authn;
  /** Told how every request, upgrade and tunnel ended (metrics); absent without a metrics listener. */
  readonly observe?: RequestObserver;
  /**
   * The proxy role (`services: proxy`): route policies are decided by the authorize service, through
   * its cache (runtime/authorize/remote-authorizer.ts), never by this process.
   */
  readonly authorizer?: RemoteAuthorizer;
}

export type { ChosenUpstream } from './pick.ts';
export { MAX_HEADER_FIELDS, type Refusal } from './door.ts';

/** The decision core's answer for a request that passed the door, with what the entry point needs. */
export interface Admission {
  readonly admitted: true;
  readonly decision: Decision;
  /** The canonical request (null for CONNECT, whose target is an authority). */
  readonly canonical: CanonicalRequest | null;
  readonly session: ResolvedSession | null;
  /** True when the session store could not be reached (then `session` is null, and means "unknown"). */
  readonly storeUnavailable: boolean;
  /** The generation's authentication state (undefined without `authn`). */
  readonly auth: AuthState | undefined;
  /**
   * The upstream picked for an allowed forward; undefined for any other decision, and for an allowed
   * one when nothing was picked (the entry point could no longer forward, or `identityError`).
   */
  readonly upstream: ChosenUpstream | undefined;
  /**
   * Set when the identity step failed (the assertion could not be signed): the entry point answers
   * 500 `identity-assertion-failed`, and nothing was picked.
   */
  readonly identityError: Error | undefined;
  /**
   * How the shadow plan (`svc run --shadow`) would have decided, when it decides differently from
   * the decision above (request/shadow.ts); undefined without a shadow plan or when alike. Only
   * the access line and the metric read it: it never changes what is answered.
   */
  readonly shadow: ShadowDifference | undefined;
}

export type GateResult = Refusal | Admission;

/** An admission before its identity step and pick: the ruling instead of the decision. */
type Ruled = Refusal | (Omit<Admission, 'decision' | 'upstream' | 'identityError'> & { readonly ruling: Ruling });
type Admitted = Exclude<Ruled, Refusal>;

/**
 * Admits or refuses one entry under generation `gen`, in the order of the file comment. Calls `then`
 * exactly once: synchronously when the session is cached and an assertion is not to be signed (the
 * common request), later otherwise. Never throws for any request; a session lookup that fails makes
 * the request anonymous (fail closed), and one that could not reach the store answers 503 where a
 * session matters (`withoutStore`).
 */
export function admit(gen: ServedGeneration, entry: Entry, options: GateOptions, then: (result: GateResult) => void): void {
  // 1. The door (door.ts): 505, 431, the canonical request, 421.
  const passed = door(gen, entry, options.scheme);
  if (refused(passed)) return then(passed);
  const canonical = typeof passed === 'string' ? undefined : passed;
  const host = hostOf(passed);

  // 2. The session (authn/service.ts). A CONNECT carries no cookie: its credential is a programmatic
  // token bound to its tcp route.
  const authn = options.authn;
  const auth = authn ? gen.auth : undefined;
  let lookup: SessionLookup = null;
  const trace = entry.trace;
  const lookupSpan = trace && authn && auth && host !== '' ? trace.child('session lookup') : undefined;
  if (authn && auth && host !== '') lookup = canonical !== undefined ? authn.resolve(auth, entry.headers, host) : authn.resolveTunnel(auth, entry.headers, host);

  // 3. The decision (request/decide.ts; the role's part, 495 and the store's outage rule in
  // `decideEntry`), once the session has answered (authn/admit.ts, shared with forward-auth).
  const decide = (session: ResolvedSession | null, oracle?: PolicyOracle) => (trace ? tracedDecision(trace, gen, entry, options, canonical, session, auth, oracle) : decideEntry(gen, entry, options, canonical, session, auth, oracle));
  const authorizer = options.authorizer;
  const steps = { decide, withoutStore, remote: authorizer === undefined ? undefined : { authorizer, plan: gen.plan, unavailable: authorizeUnavailable } };
  sessionAndDecision(
    lookup,
    steps,
    (r) => {
      if (!r.admitted) return then(r);
      const ruling = r.ruling;
      if (ruling.outcome !== 'forward') return then(admission(r, ruling, undefined, undefined));

      // 4. The identity headers (authn/identity-headers.ts), applied to the ruling's template
      // headers: this request's own object, which the pick completes with `Host`. Not for CONNECT
      // (no template), nor for an entry that can no longer forward (its client is gone, the route
      // does not take its upgrade's protocol): nothing will be sent, and the pick picks nothing.
      const template = ruling.template;
      if (template === null || auth === undefined || !canForward(gen, entry, ruling)) return then(picked(gen, entry, r, ruling));
      const headers = template.headers as OutgoingHeaders;
      const edits = identityHeaders(auth, { routeIndex: ruling.route.index, session: r.session, audience: routeHost(gen.index, ruling.route.index), upstream: headers });

      // 5. The pick (pick.ts), last: nothing undoes it. Synchronous when the assertion is cached
      // (the common request); after signing, the pick asks `canForward` again, so a client gone
      // meanwhile is picked nothing; an assertion that cannot be signed picks nothing.
      if (!(edits instanceof Promise)) {
        applyIdentityHeaders(headers, edits);
        return then(picked(gen, entry, r, ruling));
      }
      void edits.then(
        (e) => {
          applyIdentityHeaders(headers, e);
          then(picked(gen, entry, r, ruling));
        },
        (e: unknown) => then(admission(r, nothingPicked(entry, ruling).decision, undefined, e instanceof Error ? e : new Error(String(e)))),
      );
    },
    lookupSpan && (() => lookupSpan.end()),
  );
}

/** Whether the entry point can still forward `ruling` (pick.ts asks again when it picks). */
function canForward(gen: ServedGeneration, entry: Entry, ruling: Forward): boolean {
  return entry.canForward === undefined || entry.canForward(gen.index.body.routes[ruling.route.index]!);
}

/** The admission of an allowed forward once its upstream is picked (pick.ts). */
function picked(gen: ServedGeneration, entry: Entry, r: Admitted, ruling: Forward): Admission {
  const p = pickUpstream(gen, entry, ruling);
  return admission(r, p.decision, p.upstream, undefined);
}

/** The gate's answer: one object, of one shape for every admission. */
function admission(r: Admitted, decision: Decision, upstream: ChosenUpstream | undefined, identityError: Error | undefined): Admission {
  return { admitted: true, decision, canonical: r.canonical, session: r.session, storeUnavailable: r.storeUnavailable, auth: r.auth, upstream, identityError, shadow: r.shadow };
}

/** The gate's answer when the authorize service could not decide: 503, no upstream (remote-policy.ts). */
function authorizeUnavailable(placeholder: Ruled, err: unknown): Ruled {
  if (!placeholder.admitted) return placeholder;
  // Only the ruling's route is read (a forward ruling is a decision without its upstream yet).
  return { ...placeholder, ruling: authorizeUnavailableDecision(placeholder.ruling as Decision, err) as Ruling };
}

/** `decideEntry` as the `route decision` span of a traced request. */
function tracedDecision(trace: RequestTrace, gen: ServedGeneration, entry: Entry, options: GateOptions, canonical: Canonical | undefined, session: ResolvedSession | null, auth: AuthState | undefined, oracle?: PolicyOracle): Ruled {
  const span = trace.child('route decision');
  const r = decideEntry(gen, entry, options, canonical, session, auth, oracle);
  span.setAttribute('svc.decision', r.admitted ? (r.ruling.outcome === 'forward' ? 'allow' : r.ruling.outcome) : r.problem);
  span.end();
  return r;
}

/**
 * The answer while the session store is unreachable: a request that would need a session (sign in,
 * or a policy that refuses anonymous users) is 503 `session-store-unavailable` instead, never a
 * sign-in redirect or a 403 (the user was not signed out); public routes are served; svc's own
 * endpoints learn it through `storeUnavailable`.
 */
function withoutStore(r: Ruled): Ruled {
  if (!r.admitted) return r;
  return { ...r, ruling: storeOutageDecision(r.ruling), storeUnavailable: true };
}

export { SESSION_STORE_UNAVAILABLE } from '../authn/admit.ts';

const REFUSED_CERTIFICATE: Refusal = { admitted: false, status: 495, problem: 'client-certificate-required' };

function decideEntry(gen: ServedGeneration, entry: Entry, options: GateOptions, canonical: Canonical | undefined, session: ResolvedSession | null, auth: AuthState | undefined, policy?: PolicyOracle): Ruled {
  const tls = gen.tls;
  const socket = tls ? (entry.socket as TLSSocket | undefined) : undefined;
  const peer = entry.socket?.remoteAddress ?? '';
  const request: DecisionRequest = { method: entry.method, target: entry.target, scheme: options.scheme, headers: entry.headers, peer, nowMs: entry.nowMs ?? Date.now() };
  const clientCertificate = tls && socket ? (route: Route) => tls.clientCertificate(route, socket) : undefined;
  const identity = session?.identity ?? null;
  const decided = canonical === undefined ? ruleConnect(gen.index, request, identity, { clientCertificate, policy }) : rule(gen.index, request, identity, { reasons: false, canonical, clientCertificate, policy });
  // A split deployment's roles each answer their part only (role.ts).
  const ruling = roleAnswers(gen.plan.body.settings.mode.services, decided);
  // The shadow plan's decision of the same request, compared (request/shadow.ts): never throws.
  const shadowPlan = gen.shadow;
  const shadow = shadowPlan === null ? undefined : shadowDifference(shadowPlan, gen.index, decided, (index) => (canonical === undefined ? ruleConnect(index, request, identity, { clientCertificate }) : rule(index, request, identity, { reasons: false, canonical: planIndependent(canonical), clientCertificate, template: false })));

  if (tls && socket) {
    const scope = clientCertificateScope(gen, ruling);
    if (scope !== undefined && tls.required(scope) && !tls.clientCertificate(scope, socket)?.valid) return REFUSED_CERTIFICATE;
  }
  return { admitted: true, ruling, canonical: canonical?.ok ? canonical.request : null, session, storeUnavailable: false, auth, shadow };
}

/**
 * Whose client CA a decision answers under: its route's (`tls_downstream_client_ca`, else the global
 * `client_ca`); `null` for the forward-auth check, which requires the global `client_ca` (its callers
 * are the proxies, authenticated by their certificates: docs/security.md S13); `undefined` when none applies.
 * The sign-in endpoints stay open to browsers, which sign in there (docs/forward-auth.md).
 */
function clientCertificateScope(gen: ServedGeneration, d: Ruling): Route | null | undefined {
  if (d.outcome === 'internal') return d.endpoint.service === 'forward_auth' ? null : undefined;
  if ('route' in d && d.outcome !== 'unavailable') return gen.index.body.routes[d.route.index];
  return undefined;
}

/**
 * Admits an entry that lives as long as `stream` (an upgrade's connection, a tunnel's connection or
 * HTTP/2 stream): the generation it is decided under is held until the stream closes. `then` is not
 * called for a stream that went away meanwhile (and no upstream is picked for it).
 */
export function admitForStream(store: ServedStore, stream: Duplex, entry: Entry, options: GateOptions, then: (gen: ServedGeneration, result: GateResult) => void): void {
  const gen = store.acquire();
  let released = false;
  stream.once('close', () => {
    if (released) return;
    released = true;
    store.release(gen);
  });
  stream.on('error', () => stream.destroy());
  const canForward = entry.canForward;
  const alive = { ...entry, canForward: (route: Route) => !stream.destroyed && (canForward === undefined || canForward(route)) };
  admit(gen, alive, options, (r) => {
    if (!stream.destroyed) then(gen, r);
  });
}
