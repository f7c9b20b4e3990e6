/**
 * A served generation for the gate's identity step and pick (runtime/proxy/gate.ts), with spies:
 * one route for a signed-in user with `pass_identity_headers` and websockets, its load balancer a
 * stand-in that records every pick and every outcome it is told (`done`), and an assertion signer
 * whose answer each test chooses (signed, failed, or held until the test lets it go). The session
 * store is a stand-in that finds alice's session, from the cache (synchronously).
 */
import type { Socket } from 'node:net';
import { Pool } from 'undici';
import type { AuthState } from '../../../runtime/authn/auth-state.ts';
import type { Authn } from '../../../runtime/authn/service.ts';
import type { Identity, UpstreamOutcome } from '../../../runtime/core/types.ts';
import type { ForwardState } from '../../../runtime/generation/forward-provisioner.ts';
import type { ServedGeneration, ServedStore } from '../../../runtime/generation/generation.ts';
import { buildIndex } from '../../../runtime/plan/index.ts';
import type { Entry, GateOptions } from '../../../runtime/proxy/gate.ts';
import type { ResolvedSession } from '../../../runtime/sessions/session-cache.ts';
import { compileText } from '../../support/compile-text.ts';
import { configText } from '../../reference/support.ts';

export const ALICE: Identity = { user: 'u-alice', email: 'alice@example.com', groups: ['staff'], claims: {} };
const SESSION = { identity: ALICE, publicId: 'sid-alice', record: { id: 'record-alice', claims: {} } } as unknown as ResolvedSession;

/** How the stand-in signer answers a signature it was asked for. */
export type Signing = 'signed' | 'failed' | 'held';

export interface GateSupport {
  readonly gen: ServedGeneration;
  /** A store serving `gen` alone (acquire/release only). */
  readonly store: ServedStore;
  readonly options: GateOptions;
  /** Route indexes the load balancer picked for. */
  readonly picks: number[];
  /** What the load balancer was told about its picks (`ChosenUpstream.done`). */
  readonly outcomes: UpstreamOutcome[];
  /** Signatures asked for (cache misses). */
  readonly signed: string[];
  /** With `held`: signs (or, with `fail`, fails) the signatures asked for so far. */
  release(fail?: boolean): void;
  close(): Promise<void>;
}

/** Config text: the identity route `app.example.com` → `upstream`, and a CONNECT route. */
function config(upstream: string): string {
  return configText(
    [
      { from: 'https://app.example.com', to: upstream, allow_any_authenticated_user: true, pass_identity_headers: true, allow_websockets: true },
      { from: 'tcp+https://db.example.com:5432', to: 'tcp://127.0.0.1:1', allow_any_authenticated_user: true },
    ],
    { jwt_claims_headers: { 'X-Email': 'email' } },
  );
}

/** The generation, with `signing` deciding how assertions are signed (none is ever cached). */
export function gateSupport(signing: Signing, upstream = 'http://127.0.0.1:9'): GateSupport {
  const result = compileText(config(upstream));
  if (result.plan === undefined) throw new Error(`config does not compile: ${JSON.stringify(result.diagnostics.filter((d) => d.severity === 'error'))}`);
  const plan = result.plan;
  const index = buildIndex(plan.body);
  const picks: number[] = [];
  const outcomes: UpstreamOutcome[] = [];
  const signed: string[] = [];
  const held: { resolve: (t: string) => void; reject: (e: Error) => void }[] = [];
  const pools = plan.body.routes.map((r) => (r.action.kind === 'forward' && r.from.scheme === 'https' ? r.action.upstreams.map((u) => new Pool(`${u.scheme}://${u.host}:${u.port}`)) : []));
  const forward: ForwardState = {
    pools,
    pick: (route) => {
      picks.push(route.ref.index);
      return { index: 0, done: (o) => void outcomes.push(o) };
    },
    upstreamTls: () => ({}),
  };
  const signer = {
    cached: () => undefined,
    sign: (input: { readonly audience: string }) => {
      signed.push(input.audience);
      if (signing === 'signed') return Promise.resolve(`assertion-for-${input.audience}`);
      if (signing === 'failed') return Promise.reject(new Error('signing key unavailable'));
      return new Promise<string>((resolve, reject) => held.push({ resolve, reject }));
    },
  };
  const auth = { body: plan.body, cookie: plan.body.settings.cookie, claimHeaders: index.claimHeaders, orchestratorTokens: new Map(), signer, authenticateHost: 'auth.example.com' } as unknown as AuthState;
  const gen: ServedGeneration = { plan, index, number: 1, forward, tls: null, auth, autocertNames: null, shadow: null, logSettings: plan, tracing: plan, notices: plan, metricsMaterial: null };
  const authn = { resolve: () => SESSION, resolveTunnel: () => SESSION } as unknown as Authn;
  const store = { acquire: () => gen, release: () => undefined } as unknown as ServedStore;
  return {
    gen,
    store,
    options: { scheme: 'http', authn },
    picks,
    outcomes,
    signed,
    release: (fail = false) => {
      for (const h of held.splice(0)) {
        if (fail) h.reject(new Error('signing key unavailable'));
        else h.resolve('assertion-released');
      }
    },
    close: async () => {
      await Promise.all(pools.flat().map((p) => p.close()));
    },
  };
}

/** A plain request entry for `app.example.com` (the gate's view), from 203.0.113.9. */
export function requestEntry(over: Partial<Entry> = {}): Entry {
  return { kind: 'request', method: 'GET', target: '/x', headers: { host: ['app.example.com'] }, httpVersion: '1.1', socket: { remoteAddress: '203.0.113.9' } as Socket, trace: undefined, ...over };
}
