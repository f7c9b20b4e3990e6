/**
 * Runs every shared decision case (`cases/*.case.ts`) against both back ends: the reference
 * interpreter (test/reference/) and the runtime (`buildIndex` + `decide`); a case with an `entry`
 * goes through both gates instead (`gateReference`, and the runtime's `admit` through
 * test/differential/support.ts). One suite, two implementations (docs/architecture.md §7: Hono, OPA).
 */
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { PlanBody } from '../../compiler/plan/types.ts';
import { decide } from '../../runtime/request/decide.ts';
import type { Decision, DecisionRequest, Identity } from '../../runtime/core/types.ts';
import { buildIndex } from '../../runtime/plan/index.ts';
import { runtimeGate, type GateOutcome } from '../differential/support.ts';
import { connectionOf, gateReference, type GateEntry } from '../reference/gate.ts';
import { decideReference } from '../reference/interpreter.ts';
import { compileBody, makeRequest } from '../reference/support.ts';
import { GATE_CONNECTION, type DecisionCase } from './case.ts';
import { withClaimHeaders } from '../support/claim-headers.ts';

/** The runtime's decision with the claim headers of the identity step (test/support/claim-headers.ts). */
const withIdentity = (index: ReturnType<typeof buildIndex>, request: DecisionRequest, identity: Identity | null): Decision => withClaimHeaders(index, decide(index, request, identity), identity);

const casesDir = join(dirname(fileURLToPath(import.meta.url)), 'cases');
const modules: [string, { cases: readonly DecisionCase[] }][] = [];
for (const file of readdirSync(casesDir).filter((f) => f.endsWith('.case.ts')).sort()) {
  modules.push([file, (await import(pathToFileURL(join(casesDir, file)).href)) as { cases: readonly DecisionCase[] }]);
}

const backEnds: readonly {
  readonly name: string;
  readonly run: (body: PlanBody, request: DecisionRequest, identity: Identity | null) => Decision;
  readonly gate: (c: DecisionCase, body: PlanBody, entry: GateEntry) => GateOutcome;
}[] = [
  { name: 'reference', run: decideReference, gate: (c, body, entry) => gateReference(body, entry, connectionOf(c.connection ?? GATE_CONNECTION), c.identity) },
  { name: 'runtime', run: (body, request, identity) => withIdentity(buildIndex(body), request, identity), gate: (c, _body, entry) => runtimeGate(c.config, entry, c.connection ?? GATE_CONNECTION, c.identity) },
];

/** The gate entry of a case: its request, as its `entry` says it came in. */
function entryOf(c: DecisionCase & { readonly entry: NonNullable<DecisionCase['entry']> }): GateEntry {
  const { clientCertificate: _certificate, ...request } = makeRequest(c.request);
  return { ...request, kind: c.entry.kind, httpVersion: c.entry.httpVersion ?? '1.1' };
}

const bodies = new Map<string, PlanBody>();
const bodyOf = (text: string): PlanBody => {
  let body = bodies.get(text);
  if (body === undefined) bodies.set(text, (body = compileBody(text)));
  return body;
};

describe.each(modules)('%s', (_file, mod) => {
  it('has cases', () => expect(mod.cases.length).toBeGreaterThan(0));
  describe.each(backEnds)('$name', ({ run, gate }) => {
    it.each(mod.cases.map((c) => [c.name, c] as const))('%s', (_name, c) => {
      const decision = c.entry === undefined ? run(bodyOf(c.config), makeRequest(c.request), c.identity) : gate(c, bodyOf(c.config), entryOf({ ...c, entry: c.entry }));
      expect(decision).toMatchObject(c.expect);
      if (c.absentHeaders !== undefined) {
        if (!('outcome' in decision) || decision.outcome !== 'allow') expect.fail(`absentHeaders needs an allow decision, got ${JSON.stringify(decision)}`);
        for (const h of c.absentHeaders) expect(decision.upstream.headers, h).not.toHaveProperty([h]);
      }
    });
  });
});
