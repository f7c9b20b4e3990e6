import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { checkConsistency } from '../../../compiler/plan/consistency.ts';
import type { PlanBody, Route } from '../../../compiler/plan/types.ts';
import { BASE_SETTINGS, compileText } from '../../support/compile-text.ts';

function body(): PlanBody {
  const routes = [
    { from: 'https://a.example.com', to: 'http://u1', allow_any_authenticated_user: true },
    { from: 'https://b.example.com', to: 'http://u2', allow_any_authenticated_user: true },
  ];
  return JSON.parse(JSON.stringify(compileText(stringify({ ...BASE_SETTINGS, routes })).plan!.body)) as PlanBody;
}

describe('plan consistency check (stage 9)', () => {
  it('accepts what the compiler emits', () => {
    expect(checkConsistency(body())).toEqual([]);
  });
  it('finds duplicate ids, disorder, empty upstreams and mode mismatches', () => {
    const b = body() as unknown as { routes: Route[]; settings: { mode: { allInOne: boolean } } };
    (b.routes[1] as { id: string }).id = b.routes[0]!.id;
    (b.routes[1] as { index: number }).index = 0;
    (b.routes[0] as { action: unknown }).action = { kind: 'forward', upstreams: [] };
    b.settings.mode.allInOne = false;
    const problems = checkConsistency(b as unknown as PlanBody);
    expect(problems).toHaveLength(4);
    expect(problems.join('\n')).toMatch(/not unique/);
    expect(problems.join('\n')).toMatch(/out of order/);
    expect(problems.join('\n')).toMatch(/no upstream/);
    expect(problems.join('\n')).toMatch(/allInOne/);
  });
});
