/** IR helpers used by validation rules and the runtime. */
import { describe, expect, it } from 'vitest';
import { CRITERION_NAMES, andOf, criteriaOf, isSessionCriterion, orOf, usesGroups, usesSession } from '../../../compiler/policy/ir.ts';
import { text } from './helpers.ts';

describe('policy IR helpers', () => {
  const ir = text('allow if domain is "x" or (not groups has "a" and http_path starts_with "/")\ndeny if claim/x has "y"').ir!;

  it('criteriaOf lists every leaf in written order', () => {
    expect(criteriaOf(ir).map((c) => c.name)).toEqual(['domain', 'groups', 'http_path', 'claim']);
    expect(criteriaOf(ir.rules[1]!).map((c) => c.name)).toEqual(['claim']);
    expect(criteriaOf(ir.rules[0]!.when)).toHaveLength(3);
  });

  it('usesGroups and usesSession', () => {
    expect(usesGroups(ir)).toBe(true);
    expect(usesGroups(ir.rules[1]!)).toBe(false);
    expect(usesSession(text('allow if http_path is "/" or cors_preflight').ir!)).toBe(false);
    expect(usesSession(text('allow if not authenticated_user').ir!)).toBe(true);
  });

  it('isSessionCriterion: exactly the criteria that need a signed-in user', () => {
    const session = CRITERION_NAMES.filter(isSessionCriterion);
    expect(session).toEqual(['authenticated_user', 'domain', 'email', 'user', 'groups', 'claim', 'device']);
    expect(isSessionCriterion('claim/family_name')).toBe(true);
    expect(isSessionCriterion('source_ip')).toBe(false);
  });

  it('andOf/orOf keep the normal form', () => {
    const a = { op: 'criterion', name: 'accept' } as const;
    expect(andOf([a])).toBe(a);
    expect(orOf([a, a])).toEqual({ op: 'or', args: [a, a] });
    expect(() => andOf([])).toThrow();
  });
});
