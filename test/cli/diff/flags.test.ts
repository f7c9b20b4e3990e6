/** flags.ts: what a reviewer must see. */
import { describe, expect, it } from 'vitest';
import { diffPlans } from '../../../cli/diff/diff.ts';
import type { Flag } from '../../../cli/diff/types.ts';
import { planOf, route } from './helpers.ts';

const auth = { allow_any_authenticated_user: true };
const flagsOf = (a: readonly unknown[], b: readonly unknown[]): readonly Flag[] => diffPlans(planOf(a), planOf(b)).flags;
const brief = (fs: readonly Flag[]) => fs.map((f) => [f.kind, f.route?.label ?? null]);

describe('reviewFlags', () => {
  it('a route made public raises `public`, and the access delta shows anonymous gaining', () => {
    const a = [route('app.example.com', { name: 'app', policy: 'allow if domain is "example.com"' })];
    const b = [route('app.example.com', { name: 'app', allow_public_unauthenticated_access: true })];
    const d = diffPlans(planOf(a), planOf(b));
    expect(brief(d.flags)).toEqual([['public', 'app']]);
    expect(d.flags[0]?.message).toMatch(/became public/);
    expect(d.access[0]?.gains.map((g) => g.identity)).toContain('anonymous');
  });

  it('an added public route raises `public`', () => {
    const fs = flagsOf([route('a.example.com', auth)], [route('a.example.com', auth), route('pub.example.com', { name: 'pub', allow_public_unauthenticated_access: true })]);
    expect(brief(fs)).toEqual([['public', 'pub']]);
  });

  it('a policy that lets anonymous requests in raises `public` and `fail-open` for `allow if accept`', () => {
    const fs = flagsOf([route('a.example.com', { name: 'a', ...auth })], [route('a.example.com', { name: 'a', policy: 'allow if accept' })]);
    expect(brief(fs)).toEqual([
      ['public', 'a'],
      ['fail-open', 'a'],
    ]);
    expect(fs[0]?.message).toMatch(/anonymous/);
    expect(fs[1]?.message).toContain('`allow if accept`');
  });

  it('a weaker deny rule raises `fail-open` naming who is no longer denied', () => {
    const fs = flagsOf(
      [route('a.example.com', { name: 'a', policy: 'allow if domain is "example.com"\ndeny if groups has "contractors"' })],
      [route('a.example.com', { name: 'a', policy: 'allow if domain is "example.com"\ndeny if groups has "contractors" and http_method is "DELETE"' })],
    );
    expect(brief(fs)).toEqual([['fail-open', 'a']]);
    expect(fs[0]?.message).toBe('deny rules became weaker: no longer denied: group contractors (for GET /)');
  });

  it('a stricter deny rule raises nothing', () => {
    const fs = flagsOf(
      [route('a.example.com', { name: 'a', policy: 'allow if domain is "example.com"\ndeny if groups has "contractors" and http_method is "DELETE"' })],
      [route('a.example.com', { name: 'a', policy: 'allow if domain is "example.com"\ndeny if groups has "contractors"' })],
    );
    expect(fs).toEqual([]);
  });

  it('a route newly covered by an earlier route on the same host raises `shadowed`', () => {
    const api = route('a.example.com', { name: 'api', prefix: '/api/v1', ...auth });
    const fs = flagsOf([api, route('a.example.com', { name: 'all', prefix: '/api', ...auth })], [route('a.example.com', { name: 'all', prefix: '/api', ...auth }), api]);
    expect(brief(fs)).toEqual([['shadowed', 'api']]);
    expect(fs[0]?.message).toContain('shadowed by all (#0)');
  });

  it('a case-sensitive prefix does not shadow a later case-insensitive one (path_case)', () => {
    const folded = route('a.example.com', { name: 'folded', prefix: '/api/v1', path_case: 'insensitive', ...auth });
    const fs = flagsOf([folded], [route('a.example.com', { name: 'all', prefix: '/api', ...auth }), folded]);
    expect(fs.filter((f) => f.kind === 'shadowed')).toEqual([]);
  });

  it('a catch-all route on another host shadows nothing', () => {
    const fs = flagsOf([route('b.example.com', { prefix: '/x', ...auth })], [route('a.example.com', auth), route('b.example.com', { prefix: '/x', ...auth })]);
    expect(fs.filter((f) => f.kind === 'shadowed')).toEqual([]);
  });

  it('a route already shadowed in the old plan is not flagged again', () => {
    const rs = [route('a.example.com', auth), route('a.example.com', { prefix: '/x', ...auth })];
    const fs = flagsOf(rs, [...rs.slice(0, 1), { ...rs[1], timeout: '5s' }]);
    expect(fs).toEqual([]);
  });

  it('tls_skip_verify turned on and pass_identity_headers changes are flagged', () => {
    const fs = flagsOf(
      [route('a.example.com', { name: 'a', ...auth }), route('b.example.com', { name: 'b', pass_identity_headers: true, ...auth })],
      [route('a.example.com', { name: 'a', tls_skip_verify: true, pass_identity_headers: true, ...auth }), route('b.example.com', { name: 'b', ...auth })],
    );
    expect(brief(fs)).toEqual([
      ['tls-skip-verify', 'a'],
      ['pass-identity-headers', 'a'],
      ['pass-identity-headers', 'b'],
    ]);
    expect(fs[1]?.message).toMatch(/turned on/);
    expect(fs[2]?.message).toMatch(/turned off/);
  });
});
