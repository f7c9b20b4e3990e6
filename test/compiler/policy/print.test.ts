/** The printer: canonical text, minimal parentheses, JSON-quoted strings. */
import { describe, expect, it } from 'vitest';
import type { Expr, PolicyIR } from '../../../compiler/policy/ir.ts';
import { printCriterion, printExpr, printPolicy } from '../../../compiler/policy/print.ts';
import { text } from './helpers.ts';

const e = (v: string): Expr => ({ op: 'criterion', name: 'email', match: { op: 'is', value: v } });
const [A, B, C] = [e('a'), e('b'), e('c')];

describe('printPolicy', () => {
  it('prints one rule per line', () => {
    const ir: PolicyIR = { rules: [{ action: 'allow', when: A }, { action: 'deny', when: { op: 'criterion', name: 'reject' } }] };
    expect(printPolicy(ir)).toBe('allow if email is "a"\ndeny if reject');
    expect(printPolicy({ rules: [] })).toBe('');
  });

  it('uses parentheses where the tree needs them, and around an and inside an or', () => {
    // Precedence alone would not need these, but a reviewer must not have to know it (mixed operators).
    expect(printExpr({ op: 'or', args: [A, { op: 'and', args: [B, C] }] })).toBe('email is "a" or (email is "b" and email is "c")');
    expect(printExpr({ op: 'or', args: [{ op: 'and', args: [A, B] }, { op: 'not', arg: C }] })).toBe('(email is "a" and email is "b") or not email is "c"');
    expect(printExpr({ op: 'and', args: [A, { op: 'or', args: [B, C] }] })).toBe('email is "a" and (email is "b" or email is "c")');
    expect(printExpr({ op: 'and', args: [{ op: 'and', args: [A, B] }, C] })).toBe('(email is "a" and email is "b") and email is "c"');
    expect(printExpr({ op: 'not', arg: { op: 'or', args: [A, B] } })).toBe('not (email is "a" or email is "b")');
    expect(printExpr({ op: 'not', arg: { op: 'not', arg: A } })).toBe('not not email is "a"');
    expect(printExpr({ op: 'and', args: [{ op: 'not', arg: A }, B] })).toBe('not email is "a" and email is "b"');
  });

  it('JSON-quotes strings and quotes claim names that are not plain names', () => {
    expect(printExpr(e('say "hi"\\'))).toBe('email is "say \\"hi\\"\\\\"');
    expect(printCriterion({ op: 'criterion', name: 'claim', claim: 'family_name', match: { op: 'has', value: 'x' } })).toBe('claim/family_name has "x"');
    expect(printCriterion({ op: 'criterion', name: 'claim', claim: 'odd name', match: { op: 'has', value: 'x' } })).toBe('claim/"odd name" has "x"');
    expect(printCriterion({ op: 'criterion', name: 'claim', claim: 'not', match: { op: 'has', value: 'x' } })).toBe('claim/"not" has "x"');
    expect(printCriterion({ op: 'criterion', name: 'claim', claim: '9lives', match: { op: 'has', value: 'x' } })).toBe('claim/"9lives" has "x"');
  });

  it('prints every matcher shape', () => {
    const cases: [string, Expr][] = [
      ['groups in ["a", "b"]', { op: 'criterion', name: 'groups', match: { op: 'in', values: ['a', 'b'] } }],
      ['device approved', { op: 'criterion', name: 'device', match: { op: 'approved' } }],
      ['device type "any"', { op: 'criterion', name: 'device', match: { op: 'type', value: 'any' } }],
      ['date after "2025-01-01T00:00:00.000Z" before "2026-01-01T00:00:00.000Z"', { op: 'criterion', name: 'date', match: { op: 'range', after: '2025-01-01T00:00:00.000Z', before: '2026-01-01T00:00:00.000Z' } }],
      ['time_of_day before "17:00" timezone "Europe/Paris"', { op: 'criterion', name: 'time_of_day', match: { op: 'range', before: '17:00', timezone: 'Europe/Paris' } }],
      ['day_of_week in ["sat", "sun"] timezone "UTC"', { op: 'criterion', name: 'day_of_week', match: { op: 'in', values: ['sat', 'sun'], timezone: 'UTC' } }],
      ['source_ip not_in ["10.0.0.0/8"]', { op: 'criterion', name: 'source_ip', match: { op: 'not_in', values: ['10.0.0.0/8'] } }],
      ['cors_preflight', { op: 'criterion', name: 'cors_preflight' }],
    ];
    for (const [want, x] of cases) {
      expect(printExpr(x)).toBe(want);
      expect(text(`allow if ${want}`).ir?.rules[0]?.when).toEqual(x);
    }
  });
});
