/**
 * All-in-one ≡ distributed: for generated (config, requests, identities), the decision the
 * all-in-one core makes equals the one the proxy role makes by asking a real authorize service over
 * gRPC (runtime/authorize/: the proxy's client with its decision cache, the service reading the
 * session from a store), for every request, asked first (a cache miss) and then again in another
 * order (answers from the cache, so a cache key missing something a policy reads shows up as a
 * wrong answer).
 *
 * The same through the gate, for every way in (a request, a websocket upgrade, a CONNECT tunnel;
 * HTTP/1.1 and HTTP/2): the proxy role's gate answers as the all-in-one gate does.
 *
 * Identities become session records (as after a sign-in): a record carries no device, so neither
 * mode sees one.
 */
import fc from 'fast-check';
import { isDeepStrictEqual } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authorizeGrpcService } from '../../runtime/authorize/authorize-service.ts';
import { RemoteAuthorizer } from '../../runtime/authorize/remote-authorizer.ts';
import { authorizeUnavailableDecision, decideWithAuthorizer } from '../../runtime/authorize/remote-policy.ts';
import { identityOf } from '../../runtime/sessions/session-cache.ts';
import { MemoryStore } from '../../runtime/databroker/memory-store.ts';
import { newSessionId, type SessionRecord } from '../../runtime/core/session-store.ts';
import { decide } from '../../runtime/request/decide.ts';
import type { Decision, DecisionRequest, Identity } from '../../runtime/core/types.ts';
import { serviceCredentialKey } from '../../runtime/grpc/credential.ts';
import { startGrpcServer, type GrpcServerHandle } from '../../runtime/grpc/server.ts';
import type { PlanIndex } from '../../runtime/plan/index.ts';
import { configArb, gateScenarioArb, identityArb, requestFor, type GeneratedConfig } from '../reference/arbitrary.ts';
import { compiled, runtimeGate, runtimeGateWith } from './support.ts';

const KEY = serviceCredentialKey(Buffer.alloc(32, 7));

describe('the proxy role decides as all-in-one does', () => {
  const store = new MemoryStore();
  let current: { index: PlanIndex; checksum: string } | undefined;
  const service = authorizeGrpcService({ current: () => current!, sessions: store });
  let server: GrpcServerHandle;
  let authorizer: RemoteAuthorizer;

  beforeAll(async () => {
    server = await startGrpcServer({ address: '127.0.0.1:0', credentialKey: KEY, tls: null }, [service]);
    authorizer = new RemoteAuthorizer({ urls: [`127.0.0.1:${server.port}`], credentialKey: KEY, tls: null, timeoutMs: 5_000, dnsRoundRobin: false, store });
  });
  afterAll(async () => {
    authorizer?.close();
    service.close();
    await server?.close(0);
    await store.close();
  });

  /** A signed-in session for `identity` (stored), or null. */
  async function sessionOf(identity: Identity | null): Promise<SessionRecord | null> {
    if (identity === null) return null;
    const now = Date.now();
    const record: SessionRecord = { id: newSessionId(), userId: identity.user, ...(identity.email !== undefined ? { email: identity.email } : {}), groups: identity.groups, claims: identity.claims, expiresAtMs: now + 600_000, createdAtMs: now };
    await store.put(record);
    return record;
  }

  /** The proxy role's decision: the cached answer, else the authorize service's (as the gate and forward auth decide). */
  async function distributed(index: PlanIndex, checksum: string, request: DecisionRequest, session: SessionRecord | null): Promise<Decision> {
    const identity = session === null ? null : identityOf(session);
    return decideWithAuthorizer(authorizer, session?.id ?? '', { checksum, body: index.body }, (policy) => decide(index, request, identity, { reasons: false, policy }), authorizeUnavailableDecision);
  }

  /**
   * A config, two identities (and anonymous), and many requests each carrying one of the three: so
   * that requests often share a route and a session and differ only in what a policy may read.
   */
  const scenario = configArb.chain((config: GeneratedConfig) =>
    fc.record({
      config: fc.constant(config),
      identities: fc.tuple(identityArb, identityArb),
      cases: fc.array(fc.record({ request: requestFor(config), who: fc.constantFrom(0, 1, 2) }), { minLength: 1, maxLength: 16 }),
    }),
  );

  async function firstDisagreement(s: { config: GeneratedConfig; identities: [Identity | null, Identity | null]; cases: { request: DecisionRequest; who: number }[] }): Promise<string | undefined> {
    const { plan, index } = compiled(s.config.text);
    current = { index, checksum: plan.checksum };
    const sessions = [await sessionOf(s.identities[0]), await sessionOf(s.identities[1]), null];
    const cases = s.cases.map((c) => ({ request: c.request, session: sessions[c.who]! }));
    // Asked (cache misses), then again backwards (cache hits), each compared with all-in-one.
    for (const c of [...cases, ...[...cases].reverse()]) {
      const identity = c.session === null ? null : identityOf(c.session);
      // As the server decides (reasons of an allowed request are not computed).
      const local = decide(index, c.request, identity, { reasons: false });
      const remote = await distributed(index, plan.checksum, c.request, c.session);
      if (!isDeepStrictEqual(local, remote)) return `request ${JSON.stringify(c.request)}\nidentity ${JSON.stringify(identity)}\nall-in-one ${JSON.stringify(local)}\ndistributed ${JSON.stringify(remote)}\n---\n${s.config.text}`;
    }
    return undefined;
  }

  it('for generated configs, requests and identities: the same decision, asked and cached', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const d = await firstDisagreement(s);
        expect(d, d).toBeUndefined();
      }),
      { numRuns: 100 },
    );
    // The service was really asked, and the cache really answered.
    expect(authorizer.counts.calls).toBeGreaterThan(0);
    expect(authorizer.counts.cached).toBeGreaterThan(0);
  }, 120_000);

  it('through the gate, for requests, upgrades and CONNECT tunnels: the same answer', async () => {
    const before = { ...authorizer.counts };
    await fc.assert(
      fc.asyncProperty(gateScenarioArb(8), async (s) => {
        const { plan, index } = compiled(s.config.text);
        current = { index, checksum: plan.checksum };
        for (const c of [...s.cases, ...[...s.cases].reverse()]) {
          const identity = c.identity === null ? null : { ...c.identity, device: undefined };
          const plain = identity === null ? null : (({ device: _d, ...rest }) => rest)(identity);
          const record = await sessionOf(plain);
          const session = record === null ? null : { identity: identityOf(record), record };
          const local = runtimeGate(s.config.text, c.entry, c.connection, session?.identity ?? null);
          const remote = await runtimeGateWith(s.config.text, c.entry, c.connection, session, authorizer);
          expect(remote, `${c.entry.kind} ${c.entry.method} ${c.entry.target}\n${s.config.text}`).toEqual(local);
        }
      }),
      { numRuns: 60 },
    );
    expect(authorizer.counts.calls).toBeGreaterThan(before.calls);
    expect(authorizer.counts.calls).toBeGreaterThan(0);
    expect(authorizer.counts.cached).toBeGreaterThan(0);
  }, 120_000);
});
