/** render-text.ts and render-json.ts: layout, markers, determinism, and no secrets. */
import { describe, expect, it } from 'vitest';
import { diffPlans } from '../../../cli/diff/diff.ts';
import { renderDiffJson } from '../../../cli/diff/render-json.ts';
import { renderDiffText } from '../../../cli/diff/render-text.ts';
import { prettyJson } from '../../../compiler/plan/canonical-json.ts';
import type { PlanEnvelope } from '../../../compiler/plan/types.ts';
import { parsePlan } from '../../../runtime/plan/load.ts';
import { TEST_SECRET } from '../../support/compile-text.ts';
import { planOf, route } from './helpers.ts';

const auth = { allow_any_authenticated_user: true };
const NEW_SECRET = Buffer.alloc(32, 3).toString('base64');
const oldPlan = planOf([route('a.example.com', { name: 'a', ...auth }), route('b.example.com', { name: 'b', policy: 'allow if groups has "x"' })]);
const newPlan = planOf(
  [route('b.example.com', { name: 'b', policy: 'allow if groups has "x" or groups has "y"' }), route('c.example.com', { name: 'c', ...auth })],
  { cookie_secret: NEW_SECRET, log_level: 'debug' },
);

describe('renderDiffText', () => {
  const text = renderDiffText(diffPlans(oldPlan, newPlan));

  it('starts with both checksums and lists the sections in review order', () => {
    expect(text.split('\n').slice(0, 3)).toEqual(['svc diff: plans differ', `--- old ${oldPlan.checksum}`, `+++ new ${newPlan.checksum}`]);
    const order = ['Access changes', 'Flags', 'Routes', 'Settings'].map((h) => text.indexOf(`\n${h}\n`));
    expect(order.every((i) => i > 0)).toBe(true);
    expect([...order].sort((x, y) => x - y)).toEqual(order);
  });

  it('marks gains, losses, additions, removals and changes', () => {
    expect(text).toContain('  ~ b (#0)\n      + gains access: group y\n');
    expect(text).toContain('  - a (old #0) [route removed]\n      - loses access: any authenticated user\n');
    expect(text).toContain('  + #1 c (added)\n');
    expect(text).toContain('  - old #0 a (removed)\n');
    expect(text).toContain('  ~ #1 → #0 b\n');
    expect(text).toContain('          - allow if groups has "x"\n          + allow if groups has "x" or groups has "y"\n');
    expect(text).toContain('  ~ log_level: "info" → "debug"\n');
    expect(text).toContain('  ~ cookie_secret: secret changed (inline)\n');
    expect(text).toContain('Flags\n  ! sign-out: cookie_secret changed: ');
  });

  it('never prints a secret value', () => {
    expect(text).not.toContain(NEW_SECRET);
    expect(text).not.toContain(TEST_SECRET);
    expect(text).not.toContain('client-secret');
  });

  it('prints only the header for equal plans', () => {
    expect(renderDiffText(diffPlans(oldPlan, oldPlan))).toBe(`svc diff: plans are identical\n--- old ${oldPlan.checksum}\n+++ new ${oldPlan.checksum}\n`);
  });
});

describe('renderDiffJson', () => {
  const reload = (p: PlanEnvelope): PlanEnvelope => parsePlan(prettyJson(p), 'plan.json');

  it('has a fixed top-level shape and no secret', () => {
    const json = renderDiffJson(diffPlans(oldPlan, newPlan));
    const j = JSON.parse(json) as Record<string, unknown>;
    expect(Object.keys(j)).toEqual(['formatVersion', 'equal', 'old', 'new', 'access', 'flags', 'routes', 'settings']);
    expect(Object.keys(j['routes'] as object)).toEqual(['added', 'removed', 'changed', 'unchanged']);
    for (const s of [NEW_SECRET, TEST_SECRET, 'client-secret']) expect(json).not.toContain(s);
    expect(json.endsWith('}\n')).toBe(true);
  });

  it('prints the same bytes for compiled plans and the same plans loaded from files', () => {
    expect(renderDiffJson(diffPlans(reload(oldPlan), reload(newPlan)))).toBe(renderDiffJson(diffPlans(oldPlan, newPlan)));
    expect(renderDiffText(diffPlans(reload(oldPlan), reload(newPlan)))).toBe(renderDiffText(diffPlans(oldPlan, newPlan)));
  });
});
