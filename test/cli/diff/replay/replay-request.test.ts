/** cli/diff/replay/replay-request.ts: one recorded request decided under a plan, and what its line lacks for that. */
import { describe, expect, it } from 'vitest';
import { readAccessRecord, type AccessRecord } from '../../../../cli/diff/replay/access-record.ts';
import { missing, recordedIdentity, replayPlan, replayUnder, upstreamsOf } from '../../../../cli/diff/replay/replay-request.ts';
import { accessLine, type AccessEntry } from '../../../../runtime/observe/log/access-line.ts';
import { planOf, route } from '../helpers.ts';
import { makeCa } from '../../../runtime/tls/pki.ts';

function record(e: Partial<AccessEntry> & Pick<AccessEntry, 'host' | 'path' | 'decision'>): AccessRecord {
  const read = readAccessRecord(accessLine({ msg: 'request', requestId: 'r', method: 'GET', status: 200, ms: 0, plan: 1, client: '192.0.2.7', ...e }, Date.UTC(2026, 0, 5, 12)).slice(0, -1));
  if (read.kind !== 'access') throw new Error('bug: test line is not an access line');
  return read.record;
}

/** What the line lacks when both plans are `p`. */
function lacks(r: AccessRecord, p: ReturnType<typeof replayPlan>, q = p): string[] {
  const id = recordedIdentity(r);
  return missing(r, id, { p, route: replayUnder(r, p, id).route }, { p: q, route: replayUnder(r, q, id).route });
}

describe('replayUnder and missing', () => {
  it('decides a claim as recorded, and counts a claim the line did not record as not replayable', () => {
    const p = replayPlan(planOf([route('app.example.com', { policy: 'allow if claim/dept is "eng"' })]));
    const eng = record({ host: 'app.example.com', path: '/', decision: 'allow', user: 'u', groups: [], claims: { dept: ['eng'] } });
    expect(replayUnder(eng, p, recordedIdentity(eng)).outcome).toBe('allow');
    expect(lacks(eng, p)).toEqual([]);
    const none = record({ host: 'app.example.com', path: '/', decision: 'deny', user: 'u', groups: [], claims: {} });
    expect(lacks(none, p)).toEqual(['claim-not-logged']);
    // An anonymous request needs no identity attributes: exact.
    expect(lacks(record({ host: 'app.example.com', path: '/', decision: 'unauthenticated' }), p)).toEqual([]);
  });

  it('needs no attributes for a policy on user, email or domain, even from a line without groups', () => {
    const p = replayPlan(planOf([route('app.example.com', { policy: 'allow if domain is "example.com"' })]));
    const old = record({ host: 'app.example.com', path: '/', decision: 'allow', user: 'u', email: 'u@example.com' });
    expect(lacks(old, p)).toEqual([]);
    expect(replayUnder(old, p, recordedIdentity(old)).outcome).toBe('allow');
    const q = replayPlan(planOf([route('app.example.com', { policy: 'allow if device approved' })]));
    expect(lacks(old, p, q)).toEqual(['identity-not-logged']);
  });

  it('replays a CORS preflight from its recorded shape; an OPTIONS line without it is not replayable where a policy reads it', () => {
    const p = replayPlan(planOf([route('app.example.com', { policy: 'allow if cors_preflight' })]));
    const pre = record({ host: 'app.example.com', path: '/', method: 'OPTIONS', decision: 'allow', preflight: true });
    expect(replayUnder(pre, p, null).outcome).toBe('allow');
    expect(replayUnder(record({ host: 'app.example.com', path: '/', method: 'OPTIONS', decision: 'unauthenticated', preflight: false }), p, null).outcome).not.toBe('allow');
    expect(lacks(record({ host: 'app.example.com', path: '/', method: 'OPTIONS', decision: 'allow' }), p)).toEqual(['preflight-not-logged']);
  });

  it('replays a client certificate by fingerprint, answers 495 under a CA without a valid one, and counts a changed CA', async () => {
    const fp = 'ab'.repeat(32);
    const p = replayPlan(planOf([route('app.example.com', { policy: `allow if client_certificate is "${fp}"` })]));
    const withCert = record({ host: 'app.example.com', path: '/', decision: 'allow', clientCert: { sha256: fp, valid: true } });
    expect(replayUnder(withCert, p, null).outcome).toBe('allow');
    expect(replayUnder(record({ host: 'app.example.com', path: '/', decision: 'deny' }), p, null).outcome).not.toBe('allow');
    const ca = await makeCa('svc replay test CA (TEST ONLY)');
    const q = replayPlan(planOf([route('app.example.com', { policy: `allow if client_certificate is "${fp}"`, tls_downstream_client_ca: Buffer.from(ca.certPem).toString('base64') })]));
    expect(replayUnder(record({ host: 'app.example.com', path: '/', decision: 'deny' }), q, null).outcome).toBe('client-certificate-required');
    expect(lacks(withCert, p, q)).toEqual(['client-ca-changed']);
    // Refused 495 under OLD's CA: its line has no certificate; NEW's policy reads one.
    const refused = record({ host: 'app.example.com', path: '/', decision: 'client-certificate-required', status: 495 });
    expect(replayUnder(refused, q, null).outcome).toBe('client-certificate-required');
    expect(lacks(refused, q, p)).toEqual(['client-certificate-not-logged']);
  });

  it('counts a changed xff_num_trusted_hops as unknown client address only where a policy reads source_ip', () => {
    const policy = 'allow if source_ip in ["192.0.2.0/24"]';
    const p = replayPlan(planOf([route('app.example.com', { policy })]));
    const q = replayPlan(planOf([route('app.example.com', { policy })], { xff_num_trusted_hops: 1 }));
    const r = record({ host: 'app.example.com', path: '/', decision: 'allow', user: 'u', groups: [] });
    expect(replayUnder(r, p, recordedIdentity(r)).outcome).toBe('allow');
    expect(replayUnder(r, q, recordedIdentity(r)).outcome).toBe('allow');
    expect(lacks(r, p, q)).toEqual(['client-address-setting-changed']);
    const s = replayPlan(planOf([route('app.example.com', { policy: 'allow if authenticated_user' })], { xff_num_trusted_hops: 1 }));
    expect(lacks(r, replayPlan(planOf([route('app.example.com', { policy: 'allow if authenticated_user' })])), s)).toEqual([]);
  });

  it('decides a CONNECT to a tcp+https route by its authority', () => {
    const p = replayPlan(planOf([{ from: 'tcp+https://redis.example.com:6379', to: 'tcp://127.0.0.1:6379', policy: 'allow if groups has "ops"' }]));
    const r = record({ host: 'redis.example.com:6379', path: 'redis.example.com:6379', method: 'CONNECT', decision: 'allow', user: 'u', groups: ['ops'] });
    expect(replayUnder(r, p, recordedIdentity(r))).toMatchObject({ outcome: 'allow' });
    const other = record({ host: 'redis.example.com:6379', path: 'redis.example.com:6379', method: 'CONNECT', decision: 'deny', user: 'v', groups: [] });
    expect(replayUnder(other, p, recordedIdentity(other)).outcome).toBe('deny');
  });

  it('names a forwarding route by its set of upstreams', () => {
    const p = replayPlan(planOf([route('app.example.com', { to: ['http://127.0.0.1:9002', 'http://127.0.0.1:9001'], allow_public_unauthenticated_access: true })]));
    expect(upstreamsOf(p.plan.body.routes[0]!)).toBe('127.0.0.1:9001 127.0.0.1:9002');
    expect(upstreamsOf(null)).toBe('');
  });
});
