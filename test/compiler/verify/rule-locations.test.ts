/**
 * Locating single rules of a route's policy for `svc verify`'s counterexamples
 * (compiler/verify/rule-locations.ts): each written form, and no location (the caller keeps the
 * `policy` field's) whenever the file's policy is not exactly the plan's.
 */
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { PlanEnvelope } from '../../../compiler/plan/types.ts';
import { policyRuleLocations } from '../../../compiler/verify/rule-locations.ts';
import { BASE_SETTINGS, compileText } from '../../support/compile-text.ts';

const NAME = 'config.yaml';

function configWith(route: Record<string, unknown>): string {
  return `${stringify(BASE_SETTINGS)}routes:\n${stringify([{ from: 'https://a.example.com', to: 'http://127.0.0.1:9000', ...route }]).replace(/^/gm, '  ')}`;
}

/** The rule locations of route 0, as `line:col`, read from `text` at the plan's `policy` field. */
function locate(text: string, plan: PlanEnvelope = compileText(text, NAME).plan!): string[] | undefined {
  const at = plan.sourceMap.routes[0]!.fields['policy']!;
  const [, line, col] = /:(\d+):(\d+)$/.exec(at)!;
  return policyRuleLocations(NAME, text, Number(line), Number(col), plan.body.routes[0]!.policy)?.map((l) => l.slice(NAME.length + 1));
}

describe('rule locations', () => {
  it('policy text: where each rule starts', () => {
    const text = configWith({ policy: 'allow if groups has "a"\ndeny if groups has "b"; allow if user is "u"\n' });
    const lines = text.split('\n');
    const first = lines.findIndex((l) => l.includes('allow if groups has "a"')) + 1;
    expect(locate(text)).toEqual([`${first}:7`, `${first + 1}:7`, `${first + 1}:31`]);
  });

  it('statements: each allow and deny key, texts in a list each rule', () => {
    const text = configWith({ policy: [{ allow: { or: [{ groups: { has: 'a' } }] }, deny: { and: [{ user: { is: 'u' } }] } }, 'allow if true'] });
    const lines = text.split('\n');
    const row = (needle: string) => lines.findIndex((l) => l.includes(needle)) + 1;
    const col = (needle: string) => lines[row(needle) - 1]!.indexOf(needle) + 1;
    expect(locate(text)).toEqual([`${row('allow:')}:${col('allow:')}`, `${row('deny:')}:${col('deny:')}`, `${row('allow if true')}:${col('allow if true')}`]);
  });

  it('nothing when the file does not hold exactly the plan policy', () => {
    const text = configWith({ policy: 'allow if groups has "a"\n' });
    const other = compileText(configWith({ policy: 'allow if groups has "b"\n' }), NAME).plan!;
    expect(locate(text, other)).toBeUndefined();
    // Legacy fields merge into the policy: the `policy` value alone is not the plan's.
    const merged = configWith({ policy: 'allow if groups has "a"\n', allowed_users: ['u1'] });
    expect(compileText(merged, NAME).plan!.body.routes[0]!.policy.rules.length).toBeGreaterThan(1);
    expect(locate(merged)).toBeUndefined();
    expect(policyRuleLocations('config.json', '{}', 1, 1, { rules: [] })).toBeUndefined();
    expect(policyRuleLocations(NAME, 'a: [', 1, 1, { rules: [] })).toBeUndefined();
    expect(policyRuleLocations(NAME, text, 999, 1, { rules: [] })).toBeUndefined();
  });
});
