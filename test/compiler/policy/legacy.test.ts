/** Legacy route options desugar into allow rules, one per option, in a fixed order. */
import { describe, expect, it } from 'vitest';
import { flattenClaims, legacyRules } from '../../../compiler/policy/legacy.ts';
import { printPolicy } from '../../../compiler/policy/print.ts';
import { text } from './helpers.ts';

describe('legacyRules', () => {
  it('lowers every option to its own allow rule', () => {
    const rules = legacyRules({
      corsAllowPreflight: true,
      allowedIdpClaims: { org: { team: ['blue', 'red'] }, level: 3 },
      allowAnyAuthenticatedUser: true,
      allowedGroups: ['admins', 'ops'],
      allowPublicUnauthenticatedAccess: true,
      allowedDomains: ['example.com'],
      allowedUsers: ['u1', 'a@example.com'],
    });
    expect(printPolicy({ rules })).toBe(
      [
        'allow if user in ["u1", "a@example.com"] or email in ["u1", "a@example.com"]',
        'allow if domain in ["example.com"]',
        'allow if groups has "admins" or groups has "ops"',
        'allow if claim/level has "3" or claim/org.team has "blue" or claim/org.team has "red"',
        'allow if accept',
        'allow if authenticated_user',
        'allow if cors_preflight',
      ].join('\n'),
    );
    // the lowered rules are ordinary IR: the text syntax gives the same
    expect(text(printPolicy({ rules })).ir).toEqual({ rules });
  });

  it('gives nothing for absent, false or empty options', () => {
    expect(legacyRules({})).toEqual([]);
    expect(legacyRules({ allowedUsers: [], allowedGroups: [], allowedIdpClaims: {}, allowAnyAuthenticatedUser: false })).toEqual([]);
  });

  it('a single group is one criterion', () => {
    expect(legacyRules({ allowedGroups: ['admins'] })).toEqual([{ action: 'allow', when: { op: 'criterion', name: 'groups', match: { op: 'has', value: 'admins' } } }]);
  });

  it('does not depend on claim key order', () => {
    const a = legacyRules({ allowedIdpClaims: { b: 'x', a: { z: 'y', c: ['1', 2, true] } } });
    const b = legacyRules({ allowedIdpClaims: { a: { c: ['1', 2, true], z: 'y' }, b: 'x' } });
    expect(a).toEqual(b);
  });

  it('flattens nested claims to dotted names, scalars to one-element lists', () => {
    expect(flattenClaims({ a: { b: { c: 'x' } }, d: ['1', '1', 2], e: null, f: false })).toEqual([
      ['a.b.c', ['x']],
      ['d', ['1', '2']],
      ['f', ['false']],
    ]);
  });
});
