/**
 * The authorize service over gRPC (schemas/proto/svc/authorize/v1/authorize.proto): decides one
 * route's policy for a request a proxy describes, on the plan this process serves and the session
 * the data broker holds. runtime/grpc/server.ts checks the caller's credential before any handler
 * here runs.
 *
 * INVARIANTS:
 * - the route is this plan's route with the index AND the digest the caller named (route-digest.ts);
 *   otherwise FAILED_PRECONDITION with `svc-error-code: SVC_ERR_ROUTE_MISMATCH`: a policy is never
 *   applied to a request meant for another route;
 * - the identity is the data broker's record for the session id, never anything the caller says
 *   about the user; a missing or expired record is anonymous;
 * - the session store unreachable is UNAVAILABLE with `svc-error-code`, never "anonymous" (the proxy
 *   then answers 503, never a sign-in or a 403 for a signed-in user), except for a session this
 *   service verified within the outage grace (`--store-outage-grace`, runtime/sessions/outage-grace.ts),
 *   decided on what the store last said of it, as the proxy's own session lookup does;
 * - a policy that throws is deny (runtime/policy/program.ts).
 */
import * as grpc from '@grpc/grpc-js';
import type { PolicyInput } from '../policy/program.ts';
import { DEFAULT_STORE_OUTAGE_GRACE_MS, OutageGrace, type GraceObserver } from '../sessions/outage-grace.ts';
import { publicSessionId, resolveSession, SessionCache } from '../sessions/session-cache.ts';
import { SessionStoreError, type SessionStore } from '../core/session-store.ts';
import type { Identity, RequestHeaders } from '../core/types.ts';
import { ERROR_CODE_TRAILER } from '../grpc/client.ts';
import { AUTHORIZE_SERVICE, authorizeService } from '../grpc/proto.ts';
import { RateLimitedLog } from '../grpc/rate-limited-log.ts';
import { grpcError, type ServedService } from '../grpc/server.ts';
import type { PlanIndex } from '../plan/index.ts';
import { messageOfAnswer, ROUTE_MISMATCH, sameConfig, type CheckRequestMessage, type CheckResponseMessage } from './check-message.ts';
import type { PolicyAnswer } from './decision-cache.ts';
import { routeDigest } from './route-digest.ts';
import { routesChecksum } from './routes-checksum.ts';

export interface AuthorizeServiceOptions {
  /** The plan in service now (it follows reloads) and its checksum. */
  readonly current: () => { readonly index: PlanIndex; readonly checksum: string };
  /** The data broker (a client of it: runtime/databroker/grpc-store.ts). Never closed here. */
  readonly sessions: SessionStore;
  readonly log?: (entry: Record<string, unknown>) => void;
  /** `svc run --store-outage-grace` in ms (default 30 s, 0: off), and what counts its use. */
  readonly storeOutageGraceMs?: number;
  readonly graceObserver?: GraceObserver;
  /** Clock (tests). */
  readonly now?: () => number;
}

export interface AuthorizeService extends ServedService {
  /** Stops listening to the store's changes. */
  close(): void;
}

/** The cache owner of this service's entries (SessionCache keys entries by opener). */
const OWNER = {};

function trailer(code: string): grpc.Metadata {
  const m = new grpc.Metadata();
  m.set(ERROR_CODE_TRAILER, code);
  return m;
}

export function authorizeGrpcService(options: AuthorizeServiceOptions): AuthorizeService {
  const graceMs = options.storeOutageGraceMs ?? DEFAULT_STORE_OUTAGE_GRACE_MS;
  const cache = new SessionCache(options.sessions, { graceMs });
  const grace = new OutageGrace({ graceMs, ...(options.graceObserver ? { observer: options.graceObserver } : {}), ...(options.log ? { log: options.log } : {}) });
  const clock = options.now ?? Date.now;
  const mismatch = new RateLimitedLog(options.log);

  /** The identity of `sessionId` (null when anonymous, missing or expired). Rejects when the store cannot answer. */
  async function identityOf(sessionId: string, nowMs: number): Promise<Identity | null> {
    if (sessionId === '') return null;
    const hit = cache.get(sessionId, OWNER, nowMs);
    if (hit !== undefined) return hit.identity;
    let record;
    try {
      record = await options.sessions.get(sessionId);
    } catch (err) {
      const stale = err instanceof SessionStoreError && err.code === 'SVC_ERR_SESSION_STORE_UNAVAILABLE' ? cache.stale(sessionId, OWNER, clock()) : undefined;
      if (stale === undefined) throw err;
      grace.failed(clock());
      grace.served();
      return stale.identity;
    }
    grace.answered(clock());
    if (record === undefined || record.expiresAtMs <= nowMs) {
      cache.forget(sessionId);
      return null;
    }
    const session = await resolveSession(options.sessions, record);
    cache.set(sessionId, OWNER, session, nowMs, record.expiresAtMs);
    return session.identity;
  }

  async function check(m: CheckRequestMessage): Promise<CheckResponseMessage> {
    const { index, checksum } = options.current();
    const routes = routesChecksum(index.body);
    const routeIndex = m.route_index ?? 0;
    const digest = m.route_digest ?? '';
    const r = Number.isSafeInteger(routeIndex) ? index.routes[routeIndex] : undefined;
    if (r === undefined || routeDigest(r.route) !== digest) {
      mismatch.log(`route ${routeIndex} ${digest}`, { level: 'warn', msg: 'authorize: a proxy asked about a route this plan does not have (different plans?)', routeIndex, checksum, callerChecksum: m.plan_checksum ?? '' });
      throw grpcError(grpc.status.FAILED_PRECONDITION, `no route ${routeIndex} with digest ${digest.slice(0, 12)}… in plan ${checksum}`, trailer(ROUTE_MISMATCH));
    }
    // Same routes, same config for what this service decides: plans differ by role (`services`) anyway.
    if (!sameConfig({ plan: checksum, routes }, { plan: m.plan_checksum ?? '', routes: m.routes_checksum ?? '' })) {
      mismatch.log(`plan ${m.plan_checksum ?? ''} ${m.routes_checksum ?? ''}`, {
        level: 'warn',
        msg: 'routes checksum mismatch: a proxy runs other routes or policies than this authorize service (a half-rolled-out config?)',
        checksum,
        callerChecksum: m.plan_checksum ?? '',
        routesChecksum: routes,
        callerRoutesChecksum: m.routes_checksum ?? '',
      });
    }
    const now = clock();
    let identity: Identity | null;
    try {
      identity = await identityOf(m.session_id ?? '', now);
    } catch (err) {
      const e = err instanceof SessionStoreError ? err : undefined;
      options.log?.({ level: 'warn', msg: 'authorize: the data broker did not answer', session: m.session_id ? publicSessionId(m.session_id) : undefined, error: e?.message ?? String(err) });
      throw grpcError(grpc.status.UNAVAILABLE, 'the data broker did not answer', trailer('SVC_ERR_SESSION_STORE_UNAVAILABLE'));
    }
    const input: PolicyInput = {
      identity,
      method: m.method ?? '',
      path: m.path ?? '',
      headers: headersOf(m.headers),
      clientAddress: m.client_address ?? '',
      clientCertificate: m.client_certificate ? { fingerprint: m.client_certificate.fingerprint ?? '', valid: m.client_certificate.valid === true } : null,
      nowMs: m.now_ms ?? now,
    };
    let answer: PolicyAnswer;
    if (r.route.public) answer = { verdict: 'allow', reasons: ['public-route'] };
    else {
      // Reasons for every verdict: a proxy logs them for allowed tunnels too (decide.ts runConnect).
      const x = r.program.explain(input);
      answer = { verdict: x.verdict, reasons: x.reasons };
    }
    return messageOfAnswer(answer, checksum, routes);
  }

  const handlers = {
    Check: (call: grpc.ServerUnaryCall<CheckRequestMessage, CheckResponseMessage>, callback: grpc.sendUnaryData<CheckResponseMessage>) => {
      check(call.request).then(
        (res) => callback(null, res),
        (err: unknown) => callback(err as grpc.ServiceError),
      );
    },
  };
  return {
    name: AUTHORIZE_SERVICE,
    definition: authorizeService(),
    handlers,
    close: () => cache.close(),
  };
}

/** The request headers in a message (only those the route's policy reads were sent). */
function headersOf(m: CheckRequestMessage['headers']): RequestHeaders {
  const out: Record<string, string[]> = Object.create(null) as Record<string, string[]>;
  if (m === undefined) return out;
  for (const [name, v] of Object.entries(m)) {
    const values = v?.values;
    if (Array.isArray(values) && values.every((x) => typeof x === 'string')) out[name.toLowerCase()] = values;
  }
  return out;
}
