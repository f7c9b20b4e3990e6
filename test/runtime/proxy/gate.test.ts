/**
 * The gate's last two steps (runtime/proxy/gate.ts): the identity headers, then the pick. The pick
 * comes last, so nothing undoes it: an assertion that cannot be signed, or an entry point whose
 * client went away while it was signed, moves no balancer counter (no pick, no `done`). The common
 * request (assertion cached) stays synchronous. The entry points on top of it are tested in
 * handler.test.ts and upgrade.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { admit, type Admission, type GateResult } from '../../../runtime/proxy/gate.ts';
import { gateSupport, requestEntry, type GateSupport } from './gate-support.ts';
import { buildIndex, type PlanIndex } from '../../../runtime/plan/index.ts';
import type { ShadowPlan } from '../../../runtime/request/shadow.ts';
import { compileBody, configText } from '../../reference/support.ts';

let open: GateSupport[] = [];
const support = (...args: Parameters<typeof gateSupport>): GateSupport => {
  const s = gateSupport(...args);
  open.push(s);
  return s;
};
afterEach(async () => {
  await Promise.all(open.map((s) => s.close()));
  open = [];
});

/** Runs the gate: whether it answered before `admit` returned, and its answer (`then` must be called once). */
function admitted(s: GateSupport, entry = requestEntry()): { readonly sync: boolean; readonly result: Promise<GateResult> } {
  let calls = 0;
  let answer: (r: GateResult) => void = () => undefined;
  const answered = new Promise<GateResult>((resolve) => (answer = resolve));
  admit(s.gen, entry, s.options, (r) => {
    calls++;
    answer(r);
  });
  const sync = calls === 1;
  const result = answered.then(async (r) => {
    await new Promise((done) => setImmediate(done));
    if (calls !== 1) throw new Error(`then called ${calls} times`);
    return r;
  });
  return { sync, result };
}

const asAdmission = (r: GateResult): Admission => {
  if (!r.admitted) throw new Error(`refused: ${r.status}`);
  return r;
};

describe('the identity step, before the pick', () => {
  it('a signed assertion is applied to the upstream headers, then the upstream is picked once', async () => {
    const s = support('signed');
    const a = asAdmission(await admitted(s).result);
    expect(s.signed).toEqual(['app.example.com']);
    expect(s.picks).toEqual([0]);
    expect(a.identityError).toBeUndefined();
    expect(a.decision).toMatchObject({ outcome: 'allow', upstream: { headers: { 'x-svc-jwt-assertion': 'assertion-for-app.example.com', 'x-email': 'alice@example.com', host: '127.0.0.1:9' } } });
    expect(a.upstream).toBeDefined();
  });

  it('a failing signer picks nothing and tells the balancer nothing: 500 identity-assertion-failed', async () => {
    const s = support('failed');
    const a = asAdmission(await admitted(s).result);
    expect(s.signed).toHaveLength(1);
    expect(s.picks).toEqual([]);
    expect(s.outcomes).toEqual([]);
    expect(a.upstream).toBeUndefined();
    expect(a.identityError?.message).toBe('signing key unavailable');
    // The access line still names the route and the user, as before the step moved.
    expect(a.decision).toMatchObject({ outcome: 'allow', route: { index: 0 } });
    expect(a.session?.identity.user).toBe('u-alice');
  });

  it('a client gone while its assertion was signed picks nothing (canForward at pick time)', async () => {
    const s = support('held');
    let gone = false;
    const { result } = admitted(s, requestEntry({ canForward: () => !gone }));
    await new Promise((r) => setImmediate(r));
    expect(s.signed).toHaveLength(1);
    gone = true;
    s.release();
    const a = asAdmission(await result);
    expect(s.picks).toEqual([]);
    expect(s.outcomes).toEqual([]);
    expect(a.upstream).toBeUndefined();
    expect(a.identityError).toBeUndefined();
  });

  it('a client still there when its assertion is signed is picked for', async () => {
    const s = support('held');
    const { result } = admitted(s, requestEntry({ canForward: () => true }));
    await new Promise((r) => setImmediate(r));
    expect(s.picks).toEqual([]);
    s.release();
    const a = asAdmission(await result);
    expect(s.picks).toEqual([0]);
    expect(a.decision).toMatchObject({ upstream: { headers: { 'x-svc-jwt-assertion': 'assertion-released' } } });
  });

  it('an entry that cannot forward (gone, or an upgrade the route does not take) is not signed for', async () => {
    const s = support('failed');
    const a = asAdmission(await admitted(s, requestEntry({ canForward: () => false })).result);
    expect(s.signed).toEqual([]);
    expect(s.picks).toEqual([]);
    expect(a.identityError).toBeUndefined();
    expect(a.decision.outcome).toBe('allow');
  });

  it('the common request is synchronous: a cached assertion answers before admit returns', async () => {
    const s = support('failed');
    (s.gen.auth.signer as unknown as { cached: () => string }).cached = () => 'cached-assertion';
    const { sync, result } = admitted(s);
    expect(sync).toBe(true);
    const a = asAdmission(await result);
    expect(s.signed).toEqual([]);
    expect(s.picks).toEqual([0]);
    expect(a.decision).toMatchObject({ upstream: { headers: { 'x-svc-jwt-assertion': 'cached-assertion' } } });
  });

  it('CONNECT has no identity step: picked without any signature', async () => {
    const s = support('failed');
    const entry = requestEntry({ kind: 'connect', method: 'CONNECT', target: 'db.example.com:5432', headers: {} });
    const { sync, result } = admitted(s, entry);
    expect(sync).toBe(true);
    const a = asAdmission(await result);
    expect(s.signed).toEqual([]);
    expect(s.picks).toEqual([1]);
    expect(a.decision).toMatchObject({ outcome: 'allow', upstream: { url: 'tcp://127.0.0.1:1', headers: {} } });
  });
});

describe('the shadow plan (svc run --shadow)', () => {
  /** A shadow plan of `index` recording what it is told. */
  const shadowPlan = (index: PlanIndex): ShadowPlan & { readonly told: string[] } => {
    const told: string[] = [];
    return { index, checksum: 'sha256:c', differed: (route, change) => void told.push(`${route} ${change}`), failed: () => void told.push('failed'), told };
  };
  /** The gate's plan with every route's policy replaced by `policy`. */
  const withPolicy = (s: GateSupport, policy: string): PlanIndex => buildIndex({ ...s.gen.plan.body, routes: s.gen.plan.body.routes.map((r) => ({ ...r, policy: compileBody(configText([{ from: 'https://x.example.com', to: 'http://x', policy }])).routes[0]!.policy })) });

  it('S70: a candidate that refuses alice changes nothing served: allowed, picked once, identity headers applied; the admission names the difference', async () => {
    const s = support('signed');
    const shadow = shadowPlan(withPolicy(s, 'allow if email is "bob@example.com"'));
    const gen = { ...s.gen, shadow };
    const a = asAdmission(await admitted({ ...s, gen }).result);
    expect(a.decision).toMatchObject({ outcome: 'allow', upstream: { headers: { 'x-email': 'alice@example.com' } } });
    expect(s.picks).toEqual([0]);
    expect(a.shadow).toMatchObject({ change: 'allow_to_deny', outcome: 'deny' });
    expect(shadow.told).toEqual(['0 allow_to_deny']);
  });

  it('S70: a candidate that would let everyone in lets nobody in: the enforced 403 stands, nothing is picked', async () => {
    const s = support('signed');
    const denying = withPolicy(s, 'allow if email is "bob@example.com"');
    const shadow = shadowPlan(withPolicy(s, 'allow if accept'));
    const gen = { ...s.gen, index: denying, shadow };
    const a = asAdmission(await admitted({ ...s, gen }).result);
    expect(a.decision.outcome).toBe('deny');
    expect(a.upstream).toBeUndefined();
    expect(s.picks).toEqual([]);
    expect(a.shadow).toEqual({ change: 'deny_to_allow', outcome: 'allow', route: expect.any(String) });
  });

  it('a CONNECT is decided by the candidate too; an alike candidate adds nothing', async () => {
    const s = support('signed');
    const connect = requestEntry({ kind: 'connect', method: 'CONNECT', target: 'db.example.com:5432', headers: {} });
    const refusing = shadowPlan(withPolicy(s, 'allow if email is "bob@example.com"'));
    const a = asAdmission(await admitted({ ...s, gen: { ...s.gen, shadow: refusing } }, connect).result);
    expect(a.decision.outcome).toBe('allow');
    expect(a.shadow).toMatchObject({ change: 'allow_to_deny', outcome: 'deny' });
    const alike = shadowPlan(s.gen.index);
    const b = asAdmission(await admitted({ ...s, gen: { ...s.gen, shadow: alike } }, connect).result);
    expect(b.shadow).toBeUndefined();
    expect(alike.told).toEqual([]);
  });
});
