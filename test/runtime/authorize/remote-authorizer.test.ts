/**
 * The proxy's authorize client and the authorize service over real gRPC on loopback: the decision
 * cache is keyed by exactly what a route's policy reads (two requests differing in a read attribute
 * never share an answer; differing in an unread one do), a session's change or a store flush drops
 * its answers, a clock-reading policy is never cached, and every failure is AuthorizeUnavailable:
 * another plan's route, an unreachable service, a wrong credential, a store that cannot answer.
 * Other routes (a half-rolled-out config) are logged on both sides; another plan checksum alone
 * (every role's plan has its own) is not.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authorizeGrpcService } from '../../../runtime/authorize/authorize-service.ts';
import { AuthorizeUnavailable, RemoteAuthorizer, type PolicyQuestion } from '../../../runtime/authorize/remote-authorizer.ts';
import { policyReads } from '../../../runtime/authorize/policy-reads.ts';
import type { PlanRef } from '../../../runtime/authorize/routes-checksum.ts';
import type { PolicyInput } from '../../../runtime/policy/program.ts';
import { MemoryStore } from '../../../runtime/databroker/memory-store.ts';
import { SessionStoreError } from '../../../runtime/core/session-store.ts';
import { serviceCredentialKey } from '../../../runtime/grpc/credential.ts';
import { startGrpcServer, type GrpcServerHandle } from '../../../runtime/grpc/server.ts';
import { buildIndex, type PlanIndex } from '../../../runtime/plan/index.ts';
import { compileBody, configText } from '../../reference/support.ts';
import { sessionRecord } from '../databroker/records.ts';
import { freePort } from '../../support/redis-server.ts';

const KEY = serviceCredentialKey(Buffer.alloc(32, 5));

/** One route per attribute a policy can read, in this order. */
const POLICIES = {
  identity: 'allow if domain is "example.com"',
  method: 'allow if http_method is "GET"',
  path: 'allow if http_path starts_with "/ok"',
  address: 'allow if source_ip in ["10.0.0.0/8"]',
  certificate: `allow if client_certificate is "${'ab'.repeat(32)}"`,
  headers: 'allow if cors_preflight',
  clock: 'allow if time_of_day after "09:00" before "17:00"',
  nothing: 'allow if accept',
  device: 'allow if device approved',
} as const;
type Attribute = keyof typeof POLICIES;
const NAMES = Object.keys(POLICIES) as Attribute[];

const body = compileBody(configText(NAMES.map((n) => ({ from: `https://${n}.example.com`, to: 'http://up', policy: POLICIES[n] }))));
const index: PlanIndex = buildIndex(body);

function input(over: Partial<PolicyInput> = {}): PolicyInput {
  return { identity: null, method: 'GET', path: '/ok', headers: {}, clientAddress: '10.1.2.3', clientCertificate: null, nowMs: Date.parse('2025-06-04T10:30:00Z'), ...over };
}

function question(attribute: Attribute, sessionId: string, over: Partial<PolicyInput> = {}): PolicyQuestion {
  const i = NAMES.indexOf(attribute);
  return { route: index.routes[i]!.route, routeIndex: i, input: input(over), sessionId };
}

/** The same question with the attribute changed. */
const CHANGED: Record<Exclude<Attribute, 'identity' | 'clock' | 'nothing' | 'device'>, Partial<PolicyInput>> = {
  method: { method: 'POST' },
  path: { path: '/no' },
  address: { clientAddress: '192.0.2.1' },
  certificate: { clientCertificate: { fingerprint: 'ab'.repeat(32), valid: true } },
  headers: { method: 'OPTIONS', headers: { origin: ['https://x.example'], 'access-control-request-method': ['GET'] } },
};

describe('policy reads', () => {
  it('names what each criterion reads', () => {
    const reads = (a: Attribute) => policyReads(index.routes[NAMES.indexOf(a)]!.route.policy);
    expect(reads('identity')).toMatchObject({ identity: true, method: false, path: false, time: false });
    expect(reads('headers')).toMatchObject({ method: true, headers: ['access-control-request-method', 'origin'] });
    expect(reads('clock')).toMatchObject({ time: true, identity: false });
    expect(reads('nothing')).toEqual({ identity: false, method: false, path: false, headers: [], clientAddress: false, clientCertificate: false, time: false });
  });
});

describe('the authorize client and service over gRPC', () => {
  const store = new MemoryStore();
  const logs: Record<string, unknown>[] = [];
  let checksum = 'sha256:plan';
  let served = index;
  const service = authorizeGrpcService({ current: () => ({ index: served, checksum }), sessions: store, log: (e) => logs.push(e) });
  /** The proxy's plan: the same routes as the service's. */
  const proxyPlan: PlanRef = { checksum: 'sha256:plan', body };
  let server: GrpcServerHandle;
  let client: RemoteAuthorizer;
  const clientLogs: Record<string, unknown>[] = [];

  beforeAll(async () => {
    server = await startGrpcServer({ address: '127.0.0.1:0', credentialKey: KEY, tls: null }, [service]);
    client = new RemoteAuthorizer({ urls: [`127.0.0.1:${server.port}`], credentialKey: KEY, tls: null, timeoutMs: 2_000, dnsRoundRobin: false, store, log: (e) => clientLogs.push(e) });
  });
  afterAll(async () => {
    client?.close();
    service.close();
    await server?.close(0);
    await store.close();
  });

  it.each(Object.keys(CHANGED) as (keyof typeof CHANGED)[])('%s: a request differing in it is asked again; one differing in an unread attribute is not', async (attribute) => {
    const q = question(attribute, '');
    const first = await client.check(q, proxyPlan);
    expect(client.cached(q)).toEqual(first);
    const changed = question(attribute, '', CHANGED[attribute]);
    expect(client.cached(changed)).toBeUndefined();
    const second = await client.check(changed, proxyPlan);
    expect(second.verdict).not.toBe(first.verdict);
    // The session is not read by these policies: another one shares the answer.
    expect(client.cached(question(attribute, 'another-session'))).toEqual(first);
  });

  it('the identity: the data broker’s record decides; each session has its own answer, dropped when the session changes', async () => {
    const alice = sessionRecord(Date.now(), { email: 'alice@example.com' });
    const mallory = sessionRecord(Date.now(), { email: 'mallory@other.example' });
    await store.put(alice);
    await store.put(mallory);
    expect((await client.check(question('identity', alice.id), proxyPlan)).verdict).toBe('allow');
    expect(client.cached(question('identity', mallory.id))).toBeUndefined();
    expect((await client.check(question('identity', mallory.id), proxyPlan)).verdict).toBe('deny');
    expect((await client.check(question('identity', ''), proxyPlan)).verdict).toBe('unauthenticated');
    // Signed out: the cached allow is gone, and the service no longer finds the session.
    await store.delete(alice.id);
    expect(client.cached(question('identity', alice.id))).toBeUndefined();
    expect((await client.check(question('identity', alice.id), proxyPlan)).verdict).toBe('unauthenticated');
    expect(client.cached(question('identity', mallory.id))?.verdict).toBe('deny');
  });

  it('the device: an answer is keyed on the device the proxy resolved, and the service reads the device from the data broker', async () => {
    const cred = 'cred-authz-AAAAAAAAAAAAAAAA';
    const alice = sessionRecord(Date.now(), { userId: 'alice', deviceCredentialId: cred });
    await store.put(alice);
    await store.addDevice({ credentialId: cred, userId: 'alice', type: 'any', publicKey: 'pQECAyYg', counter: 0, approved: false, transports: [], createdAtMs: 0 });
    const as = (approved: boolean | null) => question('device', alice.id, { identity: { user: 'alice', groups: [], claims: {}, ...(approved === null ? {} : { device: { id: cred, type: 'any', approved } }) } });
    const pending = await client.check(as(false), proxyPlan);
    expect(pending).toEqual({ verdict: 'deny', reasons: ['device-unauthorized'] });
    expect(client.cached(as(false))).toEqual(pending);
    // Approved: the proxy resolves the device anew, so the old answer is not its key any more.
    await store.approveDevice(cred);
    expect(client.cached(as(true))).toBeUndefined();
    expect((await client.check(as(true), proxyPlan)).verdict).toBe('allow');
    // Revoked: the service finds no device for the session (device page), whatever the proxy cached.
    await store.revokeDevice(cred);
    expect(client.cached(as(null))).toBeUndefined();
    expect(await client.check(as(null), proxyPlan)).toEqual({ verdict: 'unauthenticated', reasons: ['device-unauthenticated'] });
  });

  it('concurrent misses of one question share one call', async () => {
    const q = question('path', '', { path: '/ok/shared' });
    const before = client.counts.calls;
    const answers = await Promise.all(Array.from({ length: 20 }, () => client.check(q, proxyPlan)));
    expect(client.counts.calls - before).toBe(1);
    expect(new Set(answers.map((a) => a.verdict))).toEqual(new Set(['allow']));
    // Once answered, the next miss of that key (after expiry) would ask again: nothing stays in flight.
    expect(client.cached(q)).toEqual(answers[0]);
  });

  it('a policy that reads the clock is asked every time, with the request time', async () => {
    const inHours = question('clock', '', { nowMs: Date.parse('2025-06-04T10:30:00Z') });
    const night = question('clock', '', { nowMs: Date.parse('2025-06-04T23:30:00Z') });
    expect((await client.check(inHours, proxyPlan)).verdict).toBe('allow');
    expect(client.cached(inHours)).toBeUndefined();
    expect((await client.check(night, proxyPlan)).verdict).toBe('deny');
  });

  it('a route this plan does not have (index or digest) is refused: route mismatch, never another route’s verdict', async () => {
    const other = compileBody(configText([{ from: 'https://nothing.example.com', to: 'http://up', policy: 'allow if reject' }]));
    const q: PolicyQuestion = { route: buildIndex(other).routes[0]!.route, routeIndex: NAMES.indexOf('nothing'), input: input(), sessionId: '' };
    await expect(client.check(q, proxyPlan)).rejects.toMatchObject({ name: 'AuthorizeUnavailable', problem: 'authorize-route-mismatch' });
    await expect(client.check({ ...question('nothing', ''), routeIndex: 99 }, proxyPlan)).rejects.toMatchObject({ problem: 'authorize-route-mismatch' });
    expect(logs.some((e) => String(e['msg']).includes('does not have'))).toBe(true);
  });

  const mismatches = (entries: readonly Record<string, unknown>[]) => entries.filter((e) => String(e['msg']).startsWith('routes checksum mismatch'));

  it('another plan checksum with the same routes (each role\'s plan has its own: `services`) is answered and not logged', async () => {
    const [beforeClient, beforeService] = [clientLogs.length, logs.length];
    checksum = 'sha256:the-authorize-role';
    try {
      expect((await client.check(question('nothing', ''), proxyPlan)).verdict).toBe('allow');
    } finally {
      checksum = 'sha256:plan';
    }
    expect(mismatches(clientLogs.slice(beforeClient))).toEqual([]);
    expect(mismatches(logs.slice(beforeService))).toEqual([]);
  });

  it('other routes (another policy elsewhere: a half-rolled-out config) with the same route asked: answered, and logged on both sides', async () => {
    const [beforeClient, beforeService] = [clientLogs.length, logs.length];
    // The authorize service's config differs in one policy; the route asked about is the same.
    served = buildIndex(compileBody(configText(NAMES.map((n) => ({ from: `https://${n}.example.com`, to: 'http://up', policy: n === 'method' ? 'allow if http_method is "PUT"' : POLICIES[n] })))));
    checksum = 'sha256:other';
    try {
      expect((await client.check(question('nothing', ''), proxyPlan)).verdict).toBe('allow');
    } finally {
      served = index;
      checksum = 'sha256:plan';
    }
    expect(mismatches(clientLogs.slice(beforeClient))).toHaveLength(1);
    expect(mismatches(clientLogs.slice(beforeClient))[0]).toMatchObject({ level: 'warn', checksum: 'sha256:plan', authorizeChecksum: 'sha256:other' });
    expect(mismatches(logs.slice(beforeService))).toHaveLength(1);
    expect(mismatches(logs.slice(beforeService))[0]!['routesChecksum']).not.toBe(mismatches(logs.slice(beforeService))[0]!['callerRoutesChecksum']);
  });

  it('a store that cannot answer: unavailable, never anonymous', async () => {
    const failing = new (class extends MemoryStore {
      override get(): Promise<undefined> {
        return Promise.reject(new SessionStoreError('SVC_ERR_SESSION_STORE_UNAVAILABLE', 'down'));
      }
    })();
    const svc = authorizeGrpcService({ current: () => ({ index, checksum: proxyPlan.checksum }), sessions: failing });
    const s = await startGrpcServer({ address: '127.0.0.1:0', credentialKey: KEY, tls: null }, [svc]);
    const c = new RemoteAuthorizer({ urls: [`127.0.0.1:${s.port}`], credentialKey: KEY, tls: null, timeoutMs: 2_000, dnsRoundRobin: false, store });
    try {
      await expect(c.check(question('identity', 'some-session'), proxyPlan)).rejects.toMatchObject({ problem: 'authorize-unavailable' });
    } finally {
      c.close();
      svc.close();
      await s.close(0);
      await failing.close();
    }
  });

  it('a wrong credential or no service at all: unavailable, within grpc_client_timeout', async () => {
    const wrong = new RemoteAuthorizer({ urls: [`127.0.0.1:${server.port}`], credentialKey: serviceCredentialKey(Buffer.alloc(32, 6)), tls: null, timeoutMs: 1_000, dnsRoundRobin: false, store });
    const nobody = new RemoteAuthorizer({ urls: [`127.0.0.1:${await freePort()}`], credentialKey: KEY, tls: null, timeoutMs: 500, dnsRoundRobin: false, store });
    try {
      await expect(wrong.check(question('nothing', ''), proxyPlan)).rejects.toBeInstanceOf(AuthorizeUnavailable);
      await expect(nobody.check(question('nothing', ''), proxyPlan)).rejects.toMatchObject({ problem: 'authorize-unavailable' });
    } finally {
      wrong.close();
      nobody.close();
    }
  });
});
