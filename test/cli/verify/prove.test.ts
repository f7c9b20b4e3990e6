/**
 * `svc verify`'s prover (cli/verify/prove.ts) on hand-made plans, one rule of docs/verify.md per
 * case: path prefixes, first-match routing, methods, exceptions, the three forms with an anonymous
 * request, hosts no route answers, and "not proved" (never "holds") when the budget is spent
 * (docs/security.md S66).
 */
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { hostsInScope, proveProperty, type PropertyReport } from '../../../cli/verify/prove.ts';
import type { PlanEnvelope } from '../../../compiler/plan/types.ts';
import { readProperties } from '../../../compiler/verify/properties.ts';
import { buildIndex } from '../../../runtime/plan/index.ts';
import { useZ3 } from '../../support/z3.ts';
import { planOf, route } from '../diff/helpers.ts';

const solver = useZ3();

async function prove(plan: PlanEnvelope, property: Record<string, unknown>, options: { budgetMs?: number; now?: () => number } = {}): Promise<PropertyReport> {
  const read = readProperties('p.yaml', stringify({ properties: [{ name: 'p', ...property }] }));
  expect(read.diagnostics).toEqual([]);
  return proveProperty(solver(), plan, buildIndex(plan.body), read.properties![0]!, { budgetMs: options.budgetMs ?? 20_000, ...(options.now ? { now: options.now } : {}) });
}

const ADMIN = 'admin.example.com';

describe('scopes', () => {
  it('a path prefix takes every path under it, to the route svc picks first', async () => {
    // `/admin` goes to the strict route, `/admin/x` to the loose one: only the latter breaks it.
    const plan = planOf([route(ADMIN, { name: 'exact', path: '/admin', policy: 'allow if groups has "admins"' }), route(ADMIN, { name: 'rest', policy: 'allow if authenticated_user' })]);
    const r = await prove(plan, { hosts: ADMIN, paths: '/admin', only: 'groups has "admins"' });
    expect(r.result).toBe('violated');
    expect(new URL(r.counterexample!.request.url).pathname).toMatch(/^\/admin./);
    expect(r.counterexample!.route?.name).toBe('rest');
    expect(r.counterexample!.allowedBy).toMatchObject({ public: false, rule: 1, text: 'allow if authenticated_user' });
  });

  it('a shadowed route is never reached', async () => {
    const plan = planOf([route(ADMIN, { name: 'all', policy: 'allow if groups has "admins"' }), route(ADMIN, { name: 'shadowed', prefix: '/x', allow_public_unauthenticated_access: true })]);
    expect((await prove(plan, { hosts: ADMIN, only: 'groups has "admins"' })).result).toBe('holds');
  });

  it('methods and routes narrow the scope; except takes requests out', async () => {
    const plan = planOf([
      route('deploy.example.com', { name: 'deploy', policy: 'allow if groups has "ops"\nallow if groups has "dev" and http_method in ["GET", "HEAD"]' }),
      route('docs.corp.example.com', { name: 'docs', allow_public_unauthenticated_access: true }),
      route('wiki.corp.example.com', { name: 'wiki', policy: 'allow if authenticated_user' }),
    ]);
    expect((await prove(plan, { routes: 'deploy', methods: ['DELETE', 'POST'], only: 'groups has "ops"' })).result).toBe('holds');
    const get = await prove(plan, { routes: 'deploy', methods: ['GET'], only: 'groups has "ops"' });
    expect(get.result).toBe('violated');
    expect(get.counterexample!.identity).toMatchObject({ groups: ['dev'] });
    expect((await prove(plan, { hosts: '*.corp.example.com', except: { routes: 'docs' }, only: 'authenticated_user' })).result).toBe('holds');
    const pub = await prove(plan, { hosts: '*.corp.example.com', only: 'authenticated_user' });
    expect(pub.result).toBe('violated');
    expect(pub.counterexample).toMatchObject({ identity: null, decision: 'allow', allowedBy: { public: true }, condition: 'unknown' });
  });

  it('hosts: routed hosts a pattern takes, and each exact host even when no route answers it', () => {
    const plan = planOf([route('a.corp.example.com', { name: 'a' }), route('b.example.com:8443', { name: 'b' })]);
    const index = buildIndex(plan.body);
    const scope = (hosts: string[] | null, routes: string[] | null = null) => ({ hosts: hosts && hosts.map((pattern) => ({ pattern, span: undefined as never })), paths: null, methods: null, routes: routes && routes.map((name) => ({ name, span: undefined as never })) });
    expect(hostsInScope(index, scope(null))).toEqual(['a.corp.example.com', 'b.example.com:8443']);
    expect(hostsInScope(index, scope(['*.example.com']))).toEqual(['a.corp.example.com', 'b.example.com:8443']);
    expect(hostsInScope(index, scope(['*.corp.example.com', 'gone.example.com']))).toEqual(['a.corp.example.com', 'gone.example.com']);
    expect(hostsInScope(index, scope(null, ['b']))).toEqual(['b.example.com:8443']);
    // svc's own authenticate host never reaches a route.
    expect(hostsInScope(index, scope(['auth.example.com']))).toEqual([]);
  });
});

describe('forms', () => {
  const plan = planOf([route(ADMIN, { name: 'admin', policy: 'allow if domain is "example.com"\ndeny if groups has "contractors"' })]);

  it('never: an allowed request whose condition is true breaks it', async () => {
    expect((await prove(plan, { hosts: ADMIN, never: 'groups has "contractors"' })).result).toBe('holds');
    const r = await prove(plan, { hosts: ADMIN, never: 'not domain is "example.com"' });
    expect(r.result).toBe('holds');
    const u = await prove(plan, { hosts: ADMIN, never: 'user is "mallory"' });
    expect(u.result).toBe('violated');
    expect(u.counterexample).toMatchObject({ identity: { user: 'mallory' }, decision: 'allow', condition: 'true' });
  });

  it('never: an anonymous request svc allows breaks it (its condition is unknown)', async () => {
    const open = planOf([route(ADMIN, { name: 'open', allow_public_unauthenticated_access: true })]);
    const r = await prove(open, { hosts: ADMIN, never: 'groups has "contractors"' });
    expect(r.result).toBe('violated');
    expect(r.counterexample!.condition).not.toBe('false');
  });

  it('always: a request with the condition true that svc does not allow breaks it', async () => {
    expect((await prove(plan, { hosts: ADMIN, always: 'domain is "example.com" and not groups has "contractors"' })).result).toBe('holds');
    const r = await prove(plan, { hosts: ADMIN, always: 'domain is "example.com"' });
    expect(r.result).toBe('violated');
    expect(r.counterexample).toMatchObject({ decision: 'deny', allowedBy: null, condition: 'true', identity: { groups: ['contractors'] } });
  });

  it('always: a host no route answers is 404 for everyone', async () => {
    const r = await prove(plan, { hosts: 'gone.example.com', always: 'authenticated_user' });
    expect(r.result).toBe('violated');
    expect(r.counterexample).toMatchObject({ route: null, decision: 'absent' });
  });
});

describe('budgets', () => {
  it('a spent budget is "not proved", never "holds"', async () => {
    const plan = planOf([route(ADMIN, { name: 'admin', policy: 'allow if groups has "admins"' })]);
    let t = 0;
    const r = await prove(plan, { hosts: ADMIN, only: 'groups has "admins"' }, { budgetMs: 1, now: () => (t += 10) });
    expect(r.result).toBe('not-proved');
    expect(r.reason).toBe(`${ADMIN}: the time budget ran out`);
  });
});
