/**
 * Runs every shared decision case (`cases/*.case.ts`) against both back ends: the reference
 * interpreter (test/reference/) and the runtime (`buildIndex` + `decide`). One suite, two
 * implementations (STYLE.md: Hono, OPA).
 */
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { PlanBody } from '../../compiler/plan/types.ts';
import { decide } from '../../runtime/decide/decide.ts';
import type { Decision, DecisionRequest, Identity } from '../../runtime/decide/types.ts';
import { buildIndex } from '../../runtime/plan/index.ts';
import { decideReference } from '../reference/interpreter.ts';
import { compileBody, makeRequest } from '../reference/support.ts';
import type { DecisionCase } from './case.ts';

const casesDir = join(dirname(fileURLToPath(import.meta.url)), 'cases');
const modules: [string, { cases: readonly DecisionCase[] }][] = [];
for (const file of readdirSync(casesDir).filter((f) => f.endsWith('.case.ts')).sort()) {
  modules.push([file, (await import(pathToFileURL(join(casesDir, file)).href)) as { cases: readonly DecisionCase[] }]);
}

const backEnds: readonly { readonly name: string; readonly run: (body: PlanBody, request: DecisionRequest, identity: Identity | null) => Decision }[] = [
  { name: 'reference', run: decideReference },
  { name: 'runtime', run: (body, request, identity) => decide(buildIndex(body), request, identity) },
];

const bodies = new Map<string, PlanBody>();
const bodyOf = (text: string): PlanBody => {
  let body = bodies.get(text);
  if (body === undefined) bodies.set(text, (body = compileBody(text)));
  return body;
};

describe.each(modules)('%s', (_file, mod) => {
  it('has cases', () => expect(mod.cases.length).toBeGreaterThan(0));
  describe.each(backEnds)('$name', ({ run }) => {
    it.each(mod.cases.map((c) => [c.name, c] as const))('%s', (_name, c) => {
      const decision = run(bodyOf(c.config), makeRequest(c.request), c.identity);
      expect(decision).toMatchObject(c.expect);
      if (c.absentHeaders !== undefined) {
        if (decision.outcome !== 'allow') expect.fail(`absentHeaders needs an allow decision, got ${decision.outcome}`);
        for (const h of c.absentHeaders) expect(decision.upstream.headers, h).not.toHaveProperty([h]);
      }
    });
  });
});
