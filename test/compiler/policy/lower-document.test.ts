/** YAML/JSON policy documents: statements, operators, and located diagnostics with config paths. */
import { describe, expect, it } from 'vitest';
import { Reporter } from '../../../compiler/diagnostics/diagnostic.ts';
import type { Expr } from '../../../compiler/policy/ir.ts';
import { lowerPolicyNode } from '../../../compiler/policy/lower-document.ts';
import { formatLocation } from '../../../compiler/source/source-file.ts';
import { doc, text, underlined } from './helpers.ts';
import { envScalar } from './yaml-tree.ts';

const email = (value: string): Expr => ({ op: 'criterion', name: 'email', match: { op: 'is', value } });
const A = email('a');
const B = email('b');
const C = email('c');

describe('policy documents: shapes', () => {
  it('lowers the spec 2.9 shape', () => {
    const res = doc(`
- allow:
    or:
      - domain: {is: example.com}
      - email: {is: a@example.com}
      - groups: {has: admins}
`);
    expect(res.diags).toEqual([]);
    expect(res.ir).toEqual(text('allow if domain is "example.com" or email is "a@example.com" or groups has "admins"').ir);
  });

  it('accepts one statement object, or a list of statements', () => {
    expect(doc('allow: {or: [{email: a}]}').ir).toEqual({ rules: [{ action: 'allow', when: A }] });
    expect(doc('[{allow: {or: [{email: a}]}}, {deny: {or: [{email: b}]}}]').ir).toEqual({
      rules: [{ action: 'allow', when: A }, { action: 'deny', when: B }],
    });
  });

  it('gives one rule per action when a statement has both, in written order', () => {
    expect(doc('{deny: {or: [{email: b}]}, allow: {or: [{email: a}]}}').ir?.rules.map((r) => r.action)).toEqual(['deny', 'allow']);
  });

  it('reads `not` as none of and `nor` as not all of (docs/architecture.md §3)', () => {
    expect(doc('allow: {not: [{email: a}, {email: b}]}').ir?.rules[0]?.when).toEqual({ op: 'not', arg: { op: 'or', args: [A, B] } });
    expect(doc('allow: {nor: [{email: a}, {email: b}]}').ir?.rules[0]?.when).toEqual({ op: 'not', arg: { op: 'and', args: [A, B] } });
    expect(doc('allow: {not: [{email: a}]}').ir?.rules[0]?.when).toEqual({ op: 'not', arg: A });
  });

  it('or-s several operator keys of one condition in written order (the established proxy\'s reading), with a warning', () => {
    const r = doc('allow: {or: [{email: a}, {email: b}], not: [{email: c}]}');
    expect(r.ir?.rules[0]?.when).toEqual({
      op: 'or',
      args: [{ op: 'or', args: [A, B] }, { op: 'not', arg: C }],
    });
    expect(r.codes).toEqual(['SVC4023']);
    // For deny too: a request matching any of the operators is refused.
    const deny = doc('deny: {and: [{email: a}, {email: b}], or: [{email: c}]}');
    expect(deny.ir?.rules[0]?.when).toEqual({ op: 'or', args: [{ op: 'and', args: [A, B] }, C] });
    // One operator: no warning.
    expect(doc('allow: {and: [{email: a}, {email: b}]}').codes).toEqual([]);
  });

  it('nests conditions inside operator lists', () => {
    expect(doc('allow: {and: [{email: a}, {or: [{email: b}, {email: c}]}]}').ir).toEqual(text('allow if email is "a" and (email is "b" or email is "c")').ir);
  });

  it('takes the text syntax as a string, also as a list item', () => {
    expect(doc('"allow if email is \\"a\\""').ir).toEqual({ rules: [{ action: 'allow', when: A }] });
    expect(doc('["allow if email is \\"a\\"", {deny: {or: [{email: b}]}}]').ir).toEqual({ rules: [{ action: 'allow', when: A }, { action: 'deny', when: B }] });
  });

  it('takes text from an untyped env scalar', () => {
    const r = new Reporter();
    expect(lowerPolicyNode(envScalar('POLICY', 'allow if accept'), r, 'policy')).toEqual({ rules: [{ action: 'allow', when: { op: 'criterion', name: 'accept' } }] });
  });

  it('accepts an empty statement list as a policy without rules', () => {
    expect(doc('[]').ir).toEqual({ rules: [] });
  });
});

describe('policy documents: diagnostics', () => {
  const one = (y: string) => {
    const res = doc(y);
    expect(res.ir).toBeUndefined();
    return res.diags.map((d) => ({ code: d.code, path: d.path, at: underlined(d) }));
  };

  it('statement without allow/deny, unknown statement key', () => {
    expect(one('- {alow: {or: [{email: a}]}}')).toEqual([
      { code: 'SVC4007', path: 'routes[0].policy[0].alow', at: 'alow' },
      { code: 'SVC4006', path: 'routes[0].policy[0]', at: '{alow: {or: [{email: a}]}}' },
    ]);
    expect(doc('- {alow: x}').diags[0]!.help).toBe('did you mean `allow`?');
  });

  it('unknown operator, with a hint when it is a criterion', () => {
    expect(one('allow: {orr: [{email: a}]}')).toEqual([{ code: 'SVC4016', path: 'routes[0].policy.allow.orr', at: 'orr' }]);
    const d = doc('allow: {email: {is: a}}').diags[0]!;
    expect(d.code).toBe('SVC4016');
    expect(d.help).toBe('criteria go inside an operator list: `or: [{email: ...}]`');
  });

  it('empty operator lists, conditions and statements match nothing, with a warning saying so (the established proxy\'s reading)', () => {
    const never = { op: 'criterion', name: 'reject' };
    const warned = (y: string) => {
      const res = doc(y);
      expect(res.diags.every((d) => d.severity === 'warning'), y).toBe(true);
      return { ir: res.ir, diags: res.diags.map((d) => ({ code: d.code, path: d.path, at: underlined(d), message: d.message })) };
    };
    expect(warned('allow: {or: []}')).toEqual({
      ir: { rules: [{ action: 'allow', when: never }] },
      diags: [{ code: 'SVC4025', path: 'routes[0].policy.allow.or', at: '[]', message: '`or` is empty: it matches no request, so this `allow` allows nobody' }],
    });
    for (const op of ['and', 'not', 'nor']) expect(warned(`deny: {${op}: []}`).ir).toEqual({ rules: [{ action: 'deny', when: never }] });
    expect(warned('allow: {}')).toEqual({
      ir: { rules: [{ action: 'allow', when: never }] },
      diags: [{ code: 'SVC4025', path: 'routes[0].policy.allow', at: '{}', message: 'the condition of `allow` is empty: it matches no request, so this `allow` allows nobody' }],
    });
    expect(warned('- deny:\n- allow: {or: [{accept: true}]}')).toEqual({
      ir: { rules: [{ action: 'deny', when: never }, { action: 'allow', when: { op: 'criterion', name: 'accept' } }] },
      diags: [{ code: 'SVC4025', path: 'routes[0].policy[0].deny', at: '', message: 'the condition of `deny` is empty: it matches no request, so this `deny` denies nobody' }],
    });
    expect(warned('{}')).toEqual({ ir: { rules: [] }, diags: [{ code: 'SVC4025', path: 'routes[0].policy', at: '{}', message: 'the policy statement is empty: it adds no rule' }] });
    // Beside another operator, an empty list only drops out of the "any of".
    const mixed = warned('allow: {and: [], or: [{email: a}]}');
    expect(mixed.ir).toEqual({ rules: [{ action: 'allow', when: { op: 'or', args: [never, { op: 'criterion', name: 'email', match: { op: 'is', value: 'a' } }] } }] });
    expect(mixed.diags.map((d) => [d.code, d.message])).toEqual([
      ['SVC4025', '`and` is empty: it matches no request'],
      ['SVC4023', expect.stringContaining('any one of them')],
    ]);
    // A nested empty condition is still a malformed criterion, not an empty rule.
    expect(one('allow: {or: [{}]}')).toEqual([{ code: 'SVC4017', path: 'routes[0].policy.allow.or[0]', at: '{}' }]);
  });

  it('wrong shapes', () => {
    expect(one('allow: [{email: a}]')).toEqual([{ code: 'SVC4004', path: 'routes[0].policy.allow', at: '[{email: a}]' }]);
    expect(one('allow: {or: {email: a}}')).toEqual([{ code: 'SVC4004', path: 'routes[0].policy.allow.or', at: '{email: a}' }]);
    expect(one('allow: {or: [email]}')).toEqual([{ code: 'SVC4017', path: 'routes[0].policy.allow.or[0]', at: 'email' }]);
    expect(one('allow: {or: [{email: a, domain: b}]}')).toEqual([{ code: 'SVC4017', path: 'routes[0].policy.allow.or[0]', at: '{email: a, domain: b}' }]);
    expect(one('42')).toEqual([{ code: 'SVC4004', path: 'routes[0].policy', at: '42' }]);
    expect(one('[42]')).toEqual([{ code: 'SVC4004', path: 'routes[0].policy[0]', at: '42' }]);
  });

  it('locates criterion problems at the key or value, with the extended path', () => {
    const y = `- allow:
    or:
      - email: {is: a}
      - emial: {is: b}
      - email: {iss: c}
      - source_ip: {in: [10.0.0.0/8, 10.0.0.0/99]}
`;
    const res = doc(y);
    expect(res.diags.map((d) => [d.code, d.path, underlined(d), formatLocation(d.span!)])).toEqual([
      ['SVC4002', 'routes[0].policy[0].allow.or[1].emial', 'emial', 'config.yaml:4:9'],
      ['SVC4003', 'routes[0].policy[0].allow.or[2].email.iss', 'iss', 'config.yaml:5:17'],
      ['SVC4009', 'routes[0].policy[0].allow.or[3].source_ip.in[1]', '10.0.0.0/99', 'config.yaml:6:38'],
    ]);
  });

  it('reports every problem in every statement', () => {
    expect(doc('[{allow: {or: [{emial: a}]}}, {deny: {or: [{accept: false}]}}, {allw: 1}]').codes).toEqual(['SVC4002', 'SVC4008', 'SVC4007', 'SVC4006']);
  });
});
