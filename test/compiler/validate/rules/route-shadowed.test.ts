import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import type { PathMatch } from '../../../../compiler/plan/types.ts';
import { matchCovers } from '../../../../compiler/validate/rules/route-shadowed.ts';
import { BASE_SETTINGS, compileText } from '../../../support/compile-text.ts';

const any: PathMatch = { kind: 'any' };
const path = (p: string): PathMatch => ({ kind: 'path', path: p });
const prefix = (p: string): PathMatch => ({ kind: 'prefix', prefix: p });
const regex = (r: string): PathMatch => ({ kind: 'regex', regex: r });

describe('matchCovers', () => {
  it('any covers everything', () => {
    for (const b of [any, path('/a'), prefix('/a/'), regex('/a.*')]) expect(matchCovers(any, b)).toBe(true);
  });
  it('prefix `/` (and the empty prefix) covers everything, including any and regexes', () => {
    for (const p of ['/', '']) for (const b of [any, path('/a'), prefix('/x'), regex('/a.*')]) expect(matchCovers(prefix(p), b)).toBe(true);
  });
  it('a prefix covers longer prefixes and paths that start with it', () => {
    expect(matchCovers(prefix('/api'), prefix('/api/v1'))).toBe(true);
    expect(matchCovers(prefix('/api'), prefix('/api'))).toBe(true);
    expect(matchCovers(prefix('/api'), path('/api/users'))).toBe(true);
    expect(matchCovers(prefix('/api/'), path('/api'))).toBe(false);
    expect(matchCovers(prefix('/api/v1'), prefix('/api'))).toBe(false);
    expect(matchCovers(prefix('/api'), any)).toBe(false);
    expect(matchCovers(prefix('/api'), regex('/api/.*'))).toBe(false);
  });
  it('a path covers only the same path', () => {
    expect(matchCovers(path('/a'), path('/a'))).toBe(true);
    expect(matchCovers(path('/a'), path('/a/'))).toBe(false);
    expect(matchCovers(path('/a'), prefix('/a'))).toBe(false);
    expect(matchCovers(path('/'), any)).toBe(false);
  });
  it('regexes are compared by source only', () => {
    expect(matchCovers(regex('/a/[0-9]+'), regex('/a/[0-9]+'))).toBe(true);
    expect(matchCovers(regex('/.*'), path('/a'))).toBe(false);
    expect(matchCovers(regex('/.*'), regex('/a'))).toBe(false);
  });
});

function shadowed(routes: Record<string, unknown>[]): string[] {
  const res = compileText(stringify({ ...BASE_SETTINGS, routes: routes.map((r) => ({ policy: 'allow if email is "a@example.com"', to: 'http://10.0.0.1', ...r })) }));
  return res.diagnostics.filter((d) => d.name === 'route-shadowed').map((d) => `${d.path}: ${d.message}`);
}

describe('route-shadowed', () => {
  it('reports a route after a catch-all on the same host, once, naming the first cover', () => {
    const out = shadowed([
      { from: 'https://a.example.com' },
      { from: 'https://a.example.com', prefix: '/' },
      { from: 'https://a.example.com', path: '/x' },
    ]);
    expect(out).toEqual([
      'routes[1].from: route is never used: route 0 (config.yaml:13:11) matches every request it matches',
      'routes[2].from: route is never used: route 0 (config.yaml:13:11) matches every request it matches',
    ]);
  });
  it('does not compare routes of different hosts, ports or schemes', () => {
    expect(
      shadowed([
        { from: 'https://a.example.com' },
        { from: 'https://b.example.com' },
        { from: 'https://a.example.com:8443' },
        { from: 'tcp+https://a.example.com:22', to: 'tcp://10.0.0.1:22' },
        { from: 'tcp+https://a.example.com:23', to: 'tcp://10.0.0.1:23' },
      ]),
    ).toEqual([]);
  });
  it('treats the default port and host case as the same listener', () => {
    expect(shadowed([{ from: 'https://A.example.com:443', prefix: '/api' }, { from: 'https://a.example.com', path: '/api/users' }])).toHaveLength(1);
  });
  it('keeps the specific-first order quiet', () => {
    expect(
      shadowed([
        { from: 'https://a.example.com', path: '/api/users' },
        { from: 'https://a.example.com', prefix: '/api/' },
        { from: 'https://a.example.com', regex: '/x/[0-9]+' },
        { from: 'https://a.example.com' },
      ]),
    ).toEqual([]);
  });
});
