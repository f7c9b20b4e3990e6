/** routes.ts: pairing by name, then by from + matcher; moves; field and policy changes. */
import { describe, expect, it } from 'vitest';
import { diffRoutes, movedPairs, pairRoutes } from '../../../cli/diff/routes.ts';
import type { Route } from '../../../compiler/plan/types.ts';
import { planOf, route } from './helpers.ts';

const auth = { allow_any_authenticated_user: true };
const routesOf = (rs: readonly unknown[]): readonly Route[] => planOf(rs).body.routes;

describe('pairRoutes', () => {
  it('pairs by name even when from and matcher changed', () => {
    const a = routesOf([route('a.example.com', { name: 'app', ...auth })]);
    const b = routesOf([route('b.example.com', { name: 'app', prefix: '/x', ...auth })]);
    const p = pairRoutes(a, b);
    expect(p.pairs.map((x) => x.matchedBy)).toEqual(['name']);
    expect(p.added).toEqual([]);
    expect(p.removed).toEqual([]);
    const d = diffRoutes(p);
    expect(d.changed[0]?.fields.map((f) => f.path)).toEqual(expect.arrayContaining(['from.host', 'from.url', 'match.kind']));
  });

  it('pairs unnamed routes by from listener and path matcher', () => {
    const a = routesOf([route('a.example.com', { prefix: '/api', ...auth }), route('a.example.com', auth)]);
    const b = routesOf([route('a.example.com', auth), route('a.example.com', { prefix: '/api', timeout: '5s', ...auth })]);
    const p = pairRoutes(a, b);
    expect(p.pairs.map((x) => [x.old.index, x.new.index, x.matchedBy])).toEqual([
      [1, 0, 'from-and-matcher'],
      [0, 1, 'from-and-matcher'],
    ]);
    const d = diffRoutes(p);
    const api = d.changed.find((c) => c.new.match === 'prefix /api');
    expect(api?.fields).toEqual([{ path: 'timeoutMs', key: 'timeout', change: 'changed', redacted: false, old: '30s', new: '5s' }]);
  });

  it('treats a different matcher without a name as a removal and an addition', () => {
    const a = routesOf([route('a.example.com', { prefix: '/v1', ...auth })]);
    const b = routesOf([route('a.example.com', { prefix: '/v2', ...auth })]);
    const d = diffRoutes(pairRoutes(a, b));
    expect(d.added.map((s) => s.route.label)).toEqual(['https://a.example.com prefix /v2']);
    expect(d.removed.map((s) => s.route.label)).toEqual(['https://a.example.com prefix /v1']);
    expect(d.changed).toEqual([]);
  });

  it('pairs a rename by from and matcher, showing the name change', () => {
    const a = routesOf([route('a.example.com', { name: 'old', ...auth })]);
    const b = routesOf([route('a.example.com', { name: 'new', ...auth })]);
    const d = diffRoutes(pairRoutes(a, b));
    expect(d.changed[0]?.matchedBy).toBe('from-and-matcher');
    expect(d.changed[0]?.fields.map((f) => [f.path, f.old, f.new])).toEqual([
      ['id', 'old', 'new'],
      ['name', 'old', 'new'],
    ]);
  });
});

describe('moved routes', () => {
  const r = (h: string) => route(`${h}.example.com`, { name: h, ...auth });

  it('an insertion shifts indexes without moving anything', () => {
    const d = diffRoutes(pairRoutes(routesOf([r('a'), r('b'), r('c')]), routesOf([r('x'), r('a'), r('b'), r('c')])));
    expect(d.changed).toEqual([]);
    expect(d.added.map((s) => s.route.name)).toEqual(['x']);
    expect(d.unchanged).toBe(3);
  });

  it('a route brought to the front is the one reported as moved', () => {
    const d = diffRoutes(pairRoutes(routesOf([r('a'), r('b'), r('c')]), routesOf([r('c'), r('a'), r('b')])));
    expect(d.changed.map((c) => [c.new.name, c.old.index, c.new.index, c.moved])).toEqual([['c', 2, 0, true]]);
  });

  it('movedPairs leaves a longest in-order run unmoved', () => {
    const p = pairRoutes(routesOf([r('a'), r('b'), r('c'), r('d')]), routesOf([r('b'), r('d'), r('a'), r('c')]));
    expect([...movedPairs(p.pairs)].map((x) => x.new.name).sort()).toHaveLength(2);
  });
});

describe('policy changes', () => {
  it('shows old and new policy text with a line diff', () => {
    const a = routesOf([route('a.example.com', { name: 'app', policy: 'allow if domain is "example.com"\ndeny if http_method is "DELETE"' })]);
    const b = routesOf([route('a.example.com', { name: 'app', policy: 'allow if domain is "example.com" or groups has "contractors"\ndeny if http_method is "DELETE"' })]);
    const c = diffRoutes(pairRoutes(a, b)).changed[0];
    expect(c?.fields).toEqual([]);
    expect(c?.policy).toEqual({
      old: 'allow if domain is "example.com"\ndeny if http_method is "DELETE"',
      new: 'allow if domain is "example.com" or groups has "contractors"\ndeny if http_method is "DELETE"',
      lines: [
        { op: 'remove', text: 'allow if domain is "example.com"' },
        { op: 'add', text: 'allow if domain is "example.com" or groups has "contractors"' },
        { op: 'keep', text: 'deny if http_method is "DELETE"' },
      ],
    });
  });

  it('a policy document and the equivalent policy text are the same policy', () => {
    const a = routesOf([route('a.example.com', { policy: [{ allow: { or: [{ domain: { is: 'example.com' } }] } }] })]);
    const b = routesOf([route('a.example.com', { policy: 'allow if domain is "example.com"' })]);
    const d = diffRoutes(pairRoutes(a, b));
    expect(d.changed).toEqual([]);
    expect(d.unchanged).toBe(1);
  });
});
