/**
 * The proxy's side of the authorize service (`services: proxy`, docs/distributed.md): the policy verdict of a
 * route for a request, from the decision cache (decision-cache.ts) when it holds one, else asked
 * over gRPC (schemas/proto/svc/authorize/v1/authorize.proto) and then cached.
 *
 * What is sent and what keys the cache is exactly what the route's policy reads (policy-reads.ts):
 * the session id only when it reads the identity, the headers it reads, and so on.
 *
 * INVARIANT (fail-closed): an authorize service that cannot be reached within `grpc_client_timeout`,
 * that does not have the route (another plan), or that answers something malformed, rejects with
 * {@link AuthorizeUnavailable}; the gate answers 503, never forwards.
 */
import type { Route } from '../../compiler/plan/types.ts';
import { AuthorizeUnavailable } from './authorize-unavailable.ts';
import type { PolicyInput } from '../policy/program.ts';
import type { SessionStore } from '../core/session-store.ts';
import { ERROR_CODE_TRAILER, GrpcClient, type GrpcClientOptions } from '../grpc/client.ts';
import { AUTHORIZE_SERVICE, authorizeService } from '../grpc/proto.ts';
import { RateLimitedLog } from '../grpc/rate-limited-log.ts';
import { answerOfMessage, ROUTE_MISMATCH, sameConfig, type CheckRequestMessage, type CheckResponseMessage } from './check-message.ts';
import { DecisionCache, type PolicyAnswer } from './decision-cache.ts';
import { policyReads, type PolicyReads } from './policy-reads.ts';
import { routeDigest } from './route-digest.ts';
import { routesChecksum, type PlanRef } from './routes-checksum.ts';

export { AuthorizeUnavailable, type AuthorizeProblem } from './authorize-unavailable.ts';

/** One route's policy question: the route (its index in the plan), the request as the policy sees it, the session. */
export interface PolicyQuestion {
  readonly route: Route;
  readonly routeIndex: number;
  readonly input: PolicyInput;
  /** The session's record id; empty when anonymous. */
  readonly sessionId: string;
}

export interface RemoteAuthorizerOptions extends Omit<GrpcClientOptions, 'log'> {
  /** The proxy's session store: its changes drop the answers given for a session. */
  readonly store: SessionStore;
  readonly cache?: { readonly ttlMs?: number; readonly maxEntries?: number };
  readonly log?: (entry: Record<string, unknown>) => void;
}

const reads = new WeakMap<Route, PolicyReads>();

function readsOf(route: Route): PolicyReads {
  let r = reads.get(route);
  if (r === undefined) reads.set(route, (r = policyReads(route.policy)));
  return r;
}

export class RemoteAuthorizer {
  readonly #client: GrpcClient;
  readonly #cache: DecisionCache;
  readonly #mismatch: RateLimitedLog;
  readonly #offChange: () => void;
  readonly #offFlush: () => void;
  /** Questions being asked, by cache key: concurrent misses of one key share one call. */
  readonly #inFlight = new Map<string, Promise<PolicyAnswer>>();
  /** Calls made and answers taken from the cache (for tests and the benchmark's report). */
  readonly counts = { calls: 0, cached: 0 };

  constructor(options: RemoteAuthorizerOptions) {
    const { store, cache, ...client } = options;
    this.#client = new GrpcClient(AUTHORIZE_SERVICE, authorizeService(), client);
    this.#cache = new DecisionCache(cache);
    this.#mismatch = new RateLimitedLog(options.log);
    this.#offChange = store.onChange((id) => this.#cache.forgetSession(id));
    this.#offFlush = store.onFlush?.(() => this.#cache.clear()) ?? (() => undefined);
  }

  /** The cached answer to `q`, or undefined (then {@link check} asks the service). */
  cached(q: PolicyQuestion): PolicyAnswer | undefined {
    const key = this.#key(q);
    const a = key === null ? undefined : this.#cache.get(key, Date.now());
    if (a !== undefined) this.counts.cached++;
    return a;
  }

  /**
   * Asks the authorize service (and caches a clock-independent answer). Rejects with
   * {@link AuthorizeUnavailable}. Concurrent questions with one cache key (the requests of many
   * connections when an answer expires) share one call.
   */
  check(q: PolicyQuestion, plan: PlanRef): Promise<PolicyAnswer> {
    const key = this.#key(q);
    if (key === null) return this.#ask(q, plan, null);
    const shared = this.#inFlight.get(key);
    if (shared !== undefined) return shared;
    const asked = this.#ask(q, plan, key).finally(() => this.#inFlight.delete(key));
    this.#inFlight.set(key, asked);
    return asked;
  }

  async #ask(q: PolicyQuestion, plan: PlanRef, key: string | null): Promise<PolicyAnswer> {
    this.counts.calls++;
    const r = readsOf(q.route);
    const i = q.input;
    const planChecksum = plan.checksum;
    const routes = routesChecksum(plan.body);
    const request: CheckRequestMessage = {
      plan_checksum: planChecksum,
      routes_checksum: routes,
      route_index: q.routeIndex,
      route_digest: routeDigest(q.route),
      ...(r.identity && q.sessionId !== '' ? { session_id: q.sessionId } : {}),
      ...(r.method ? { method: i.method } : {}),
      ...(r.path ? { path: i.path } : {}),
      ...(r.headers.length > 0 ? { headers: headersMessage(i, r.headers) } : {}),
      ...(r.clientAddress ? { client_address: i.clientAddress } : {}),
      ...(r.clientCertificate && i.clientCertificate !== null ? { client_certificate: { fingerprint: i.clientCertificate.fingerprint, valid: i.clientCertificate.valid } } : {}),
      ...(r.time ? { now_ms: i.nowMs } : {}),
    };
    let response: CheckResponseMessage;
    try {
      response = await this.#client.unary<CheckRequestMessage, CheckResponseMessage>('Check', request);
    } catch (err) {
      const e = err as { details?: unknown; metadata?: { get(k: string): unknown[] } };
      const details = typeof e.details === 'string' ? e.details : 'no answer';
      if (e.metadata?.get(ERROR_CODE_TRAILER)[0] === ROUTE_MISMATCH) {
        throw new AuthorizeUnavailable('authorize-route-mismatch', `the authorize service does not have this route (another plan?): ${details}`, { cause: err });
      }
      throw new AuthorizeUnavailable('authorize-unavailable', `the authorize service did not answer: ${details}`, { cause: err });
    }
    const answer = answerOfMessage(response);
    if (answer === undefined) throw new AuthorizeUnavailable('authorize-unavailable', 'the authorize service answered something malformed');
    const theirs = { plan: response.plan_checksum ?? '', routes: response.routes_checksum ?? '' };
    // The routes, not the plans: every role's plan has its own checksum (routes-checksum.ts).
    if (!sameConfig({ plan: planChecksum, routes }, theirs)) {
      this.#mismatch.log(`${planChecksum} ${theirs.plan} ${theirs.routes}`, {
        level: 'warn',
        msg: 'routes checksum mismatch: this proxy and the authorize service run different routes or policies (a half-rolled-out config?)',
        checksum: planChecksum,
        authorizeChecksum: theirs.plan,
        routesChecksum: routes,
        authorizeRoutesChecksum: theirs.routes,
      });
    }
    if (key !== null) this.#cache.set(key, r.identity ? q.sessionId : '', answer, Date.now());
    return answer;
  }

  close(): void {
    this.#offChange();
    this.#offFlush();
    this.#client.close();
    this.#cache.clear();
  }

  /** The cache key of `q`, or null when its answer may not be cached (the policy reads the clock). */
  #key(q: PolicyQuestion): string | null {
    const r = readsOf(q.route);
    if (r.time) return null;
    const i = q.input;
    // NUL cannot occur in a session id, method, canonical path, address or fingerprint.
    let key = `${routeDigest(q.route)}\0${q.routeIndex}\0${r.identity ? q.sessionId : ''}\0${r.method ? i.method : ''}\0${r.path ? i.path : ''}\0${r.clientAddress ? i.clientAddress : ''}\0`;
    if (r.clientCertificate) key += i.clientCertificate === null ? '-' : `${i.clientCertificate.fingerprint}:${i.clientCertificate.valid ? 1 : 0}`;
    // The device as this proxy resolved it (docs/distributed.md "The proxy's decision cache"): an
    // approval or revocation changes the key, so an answer given for the old state is never reused.
    const device = i.identity?.device;
    if (r.identity) key += device === undefined ? '\0-' : `\0${device.id}:${device.type}:${device.approved ? 1 : 0}`;
    if (r.headers.length > 0) key += `\0${JSON.stringify(headersMessage(i, r.headers))}`;
    return key;
  }
}

function headersMessage(i: PolicyInput, names: readonly string[]): Record<string, { values: string[] }> {
  const out: Record<string, { values: string[] }> = {};
  for (const n of names) {
    const v = i.headers[n];
    if (v !== undefined) out[n] = { values: [...v] };
  }
  return out;
}
