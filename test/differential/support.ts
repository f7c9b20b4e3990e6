/**
 * The two back ends of the differential tests side by side: the runtime (`buildIndex` + `decide`,
 * `editResponseHeaders`) and the reference interpreter, over plans compiled once per config text;
 * and the corpus of shrunk counterexamples under fixtures/corpus/.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { PlanBody, PlanEnvelope, Route } from '../../compiler/plan/types.ts';
import type { AuthState } from '../../runtime/authn/auth-state.ts';
import type { Authn } from '../../runtime/authn/service.ts';
import { decide } from '../../runtime/request/decide.ts';
import type { Decision, DecisionRequest, Identity } from '../../runtime/core/types.ts';
import { admit, type Entry, type GateOptions, type GateResult } from '../../runtime/proxy/gate.ts';
import type { RemoteAuthorizer } from '../../runtime/authorize/remote-authorizer.ts';
import type { ForwardState } from '../../runtime/generation/forward-provisioner.ts';
import { editResponseHeaders } from '../../runtime/request/response-headers.ts';
import { bareHost, nameCovers } from '../../runtime/tls/host-names.ts';
import type { ListenerTls } from '../../runtime/tls/material.ts';
import { buildIndex, type PlanIndex } from '../../runtime/plan/index.ts';
import type { ServedGeneration } from '../../runtime/generation/generation.ts';
import { connectionOf, gateReference, type GateAnswer, type GateConnectionData, type GateEntry } from '../reference/gate.ts';
import { decideReference, responseHeadersReference } from '../reference/interpreter.ts';
import { compileText } from '../support/compile-text.ts';
import { withClaimHeaders } from '../support/claim-headers.ts';

/** fixtures/corpus/, where shrunk counterexamples are kept and replayed. */
export const CORPUS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'fixtures', 'corpus');

interface Compiled {
  readonly plan: PlanEnvelope;
  readonly body: PlanBody;
  readonly index: PlanIndex;
}

const cache = new Map<string, Compiled>();

/** Compiles config text (once per text: shrinking replays the same config many times) and indexes it. */
export function compiled(text: string): Compiled {
  let c = cache.get(text);
  if (c === undefined) {
    const result = compileText(text);
    if (result.plan === undefined) {
      const errors = result.diagnostics.filter((d) => d.severity === 'error').map((d) => `${d.code} ${d.name}: ${d.message}`);
      throw new Error(`config does not compile:\n${errors.join('\n')}\n---\n${text}`);
    }
    const body = result.plan.body;
    c = { plan: result.plan, body, index: buildIndex(body) };
    cache.set(text, c);
  }
  return c;
}

/** Both decisions for one request. */
export function bothDecisions(text: string, request: DecisionRequest, identity: Identity | null): { runtime: Decision; reference: Decision } {
  const { body, index } = compiled(text);
  return { runtime: withClaimHeaders(index, decide(index, request, identity), identity), reference: decideReference(body, request, identity) };
}

/**
 * A gate's answer as the differential tests compare it: the refusal, or the decision. The reasons of
 * an allowed or redirected decision are left out: the server does not compute them (rule book §4,
 * `decide(…, {reasons: false})`), and CONNECT computes them anyway.
 */
export type GateOutcome = GateAnswer | { readonly gateContract: string; readonly result: unknown };

function comparable(answer: GateAnswer): GateAnswer {
  if ('refused' in answer || (answer.outcome !== 'allow' && answer.outcome !== 'redirect')) return answer;
  const { reasons: _reasons, ...rest } = answer;
  return rest as Decision;
}

/**
 * The real gate (`admit`) answering one entry, under a generation built from the compiled config:
 * no upstream pools and no load balancer (the entry's `upstreamSample` picks by weight, 0 when
 * absent, as the reference reads it), a fake socket, a listener whose TLS checks answer from
 * `connection` (certificate names compared by runtime/tls/host-names.ts, as the listener does),
 * and a session store stand-in whose every lookup finds `identity`.
 */
export function runtimeGate(text: string, entry: GateEntry, connection: GateConnectionData, identity: Identity | null): GateOutcome {
  const { gen, options, door } = gateSetup(text, entry, connection, identity === null ? null : { identity });
  let result: GateResult | undefined;
  let calls = 0;
  admit(gen, door, options, (r) => {
    calls++;
    result = r;
  });
  // The stand-in answers synchronously, so `then` must have been called, once, before admit returned.
  if (calls !== 1 || result === undefined) return { gateContract: `then called ${calls} times synchronously`, result };
  return gateOutcome(entry, result);
}

/**
 * The real gate of the proxy role: as {@link runtimeGate}, with `authorizer` deciding route policies
 * (runtime/authorize/) for the session `session` (its record id is what the authorizer is told).
 * `then` may be called later (the authorize service answers over gRPC), and must be called once.
 */
export async function runtimeGateWith(text: string, entry: GateEntry, connection: GateConnectionData, session: { readonly identity: Identity; readonly record: { readonly id: string } } | null, authorizer: RemoteAuthorizer): Promise<GateOutcome> {
  const { gen, options, door } = gateSetup(text, entry, connection, session);
  let calls = 0;
  const result = await new Promise<GateResult>((resolve) =>
    admit(gen, door, { ...options, authorizer }, (r) => {
      calls++;
      resolve(r);
    }),
  );
  await new Promise((r) => setImmediate(r));
  if (calls !== 1) return { gateContract: `then called ${calls} times`, result };
  return gateOutcome(entry, result);
}

/** The assertion the stand-in signer has cached for every session (see `identityState`). */
const ASSERTION = 'assertion-stand-in';

/**
 * The generation's authentication state as the gate's identity step reads it
 * (runtime/authn/identity-headers.ts): the plan's cookie and claim headers, no orchestrator token,
 * and a signer with every assertion cached, so the gate still answers synchronously. Cast: it has
 * none of AuthState's other members; the rest of the gate passes it on unread.
 */
function identityState(body: PlanBody, index: PlanIndex): AuthState {
  return { body, cookie: body.settings.cookie, claimHeaders: index.claimHeaders, orchestratorTokens: new Map(), signer: { cached: () => ASSERTION } } as unknown as AuthState;
}

/** The generation, options and entry of one gate case (see {@link runtimeGate}). */
function gateSetup(text: string, entry: GateEntry, connection: GateConnectionData, found: object | null): { gen: ServedGeneration; options: GateOptions; door: Entry } {
  const { plan, index } = compiled(text);
  const forward: ForwardState = { pools: [], upstreamTls: () => ({}) };
  const tlsData = connection.tls;
  const requires = connectionOf(connection).tls?.requires;
  // The listener's certificate checks, answered from the case (the material itself is not needed).
  const tls: ListenerTls | null =
    tlsData === null || requires === undefined
      ? null
      : {
          material: undefined as unknown as ListenerTls['material'],
          servesHost: (_socket: TLSSocket, host: string) => tlsData.covers.some((name) => nameCovers(name.toLowerCase(), bareHost(host))),
          required: (route: Route | null) => requires(route === null ? 'forward_auth' : route.index),
          clientCertificate: () => tlsData.clientCertificate,
        };
  // A stand-in for Authn: the gate only asks it for the session of a request (`resolve`) or of a
  // tunnel (`resolveTunnel`); both find `found`. Cast: it has none of Authn's other members. The
  // generation's authentication state is read by the gate's identity step only (`identityState`).
  const authn = { resolve: () => found, resolveTunnel: () => found } as unknown as Authn;
  const gen: ServedGeneration = { plan, index, number: 1, forward, tls, auth: identityState(plan.body, index), autocertNames: null, shadow: null, logSettings: plan, tracing: plan, notices: plan, metricsMaterial: null };
  const options: GateOptions = { scheme: entry.scheme, authn };
  const socket = { remoteAddress: entry.peer, servername: tlsData?.covers[0] } as unknown as Socket;
  const door: Entry = { kind: entry.kind, method: entry.method, target: entry.target, headers: entry.headers, httpVersion: entry.httpVersion, socket, nowMs: entry.nowMs, upstreamSample: entry.upstreamSample ?? 0 };
  return { gen, options, door };
}

/** What a gate answered, or the gate contract it broke. */
function gateOutcome(entry: GateEntry, result: GateResult): GateOutcome {
  if (!result.admitted) return { refused: result.status, problem: result.problem };
  const d = result.decision;
  if ((result.upstream !== undefined) !== (d.outcome === 'allow')) return { gateContract: 'an upstream is chosen exactly for an allowed decision', result: d };
  const canonicalKept = result.canonical !== null;
  if (entry.kind === 'connect' ? canonicalKept : !canonicalKept && d.outcome !== 'bad_request') return { gateContract: 'the canonical request is kept for every admitted request but CONNECT', result: d };
  if (result.identityError !== undefined) return { gateContract: 'the stand-in signer never fails', result: d };
  if (d.outcome !== 'allow') return d;
  // The gate's identity step added the claim headers (compared with the reference's) and the
  // assertion, which the reference only asks for (`assertion`): checked here, then left out.
  const headers = d.upstream.headers as Record<string, unknown>;
  if ((headers['x-svc-jwt-assertion'] === ASSERTION) !== d.upstream.assertion) return { gateContract: 'the identity step adds the assertion exactly when the decision asks for it', result: d };
  delete headers['x-svc-jwt-assertion'];
  return d;
}

/** Both gates' answers for one entry, comparable (see `GateOutcome`). */
export function bothGates(text: string, entry: GateEntry, connection: GateConnectionData, identity: Identity | null): { runtime: GateOutcome; reference: GateOutcome } {
  const { body } = compiled(text);
  const runtime = runtimeGate(text, entry, connection, identity);
  return { runtime: 'gateContract' in runtime ? runtime : comparable(runtime), reference: comparable(gateReference(body, entry, connectionOf(connection), identity)) };
}

/** Both response-header edits for one route (inputs are copied: neither side may see the other's changes). */
export function bothResponseHeaders(text: string, routeIndex: number, headers: Record<string, string | string[]>): { runtime: unknown; reference: unknown } {
  const { body } = compiled(text);
  const route = body.routes[routeIndex];
  if (route === undefined) throw new Error(`no route ${routeIndex}`);
  return { runtime: editResponseHeaders(route, structuredClone(headers)), reference: responseHeadersReference(route, structuredClone(headers)) };
}

/** One corpus file: a config, a request and an identity (and optionally response headers) to replay. */
export interface CorpusEntry {
  readonly name: string;
  /** Why it is kept: the disagreement it showed, and the rule-book line that decides it. */
  readonly note: string;
  readonly config: string;
  readonly request: DecisionRequest;
  readonly identity: Identity | null;
  /** For a §8 case: the route (by index) and the upstream's response headers. */
  readonly response?: { readonly routeIndex: number; readonly headers: Record<string, string | string[]> };
  /** For a §9 case (replayed through both gates): how the request came in, and its connection. */
  readonly entry?: Pick<GateEntry, 'kind' | 'httpVersion'>;
  readonly connection?: GateConnectionData;
}

/** Every corpus entry, sorted by file name. */
export function readCorpus(): { file: string; entry: CorpusEntry }[] {
  let files: string[];
  try {
    files = readdirSync(CORPUS_DIR).filter((f) => f.endsWith('.json')).sort();
  } catch {
    return [];
  }
  return files.map((file) => ({ file, entry: JSON.parse(readFileSync(join(CORPUS_DIR, file), 'utf8')) as CorpusEntry }));
}

/**
 * Saves a counterexample as `fixtures/corpus/<prefix>-<hash>.json` (the hash of its content, so the
 * same counterexample is saved once) and returns the file name.
 */
export function saveCounterexample(prefix: string, entry: Omit<CorpusEntry, 'name'>): string {
  const json = JSON.stringify({ config: entry.config, request: entry.request, identity: entry.identity, response: entry.response, entry: entry.entry, connection: entry.connection });
  const hash = createHash('sha256').update(json).digest('hex').slice(0, 12);
  const name = `${prefix}-${hash}`;
  mkdirSync(CORPUS_DIR, { recursive: true });
  writeFileSync(join(CORPUS_DIR, `${name}.json`), `${JSON.stringify({ name, ...entry }, null, 2)}\n`);
  return `${name}.json`;
}
