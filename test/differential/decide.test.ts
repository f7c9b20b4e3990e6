/**
 * Reference interpreter ≡ runtime (docs/architecture.md §2 invariant 7): for generated (config, request,
 * identity) both give the same whole Decision, and both edit response headers alike. A failure
 * saves fast-check's shrunk counterexample under fixtures/corpus/ (replayed by corpus.test.ts) and
 * fails with the two decisions side by side.
 *
 * The runs are sized for < 20 s on two cores; `FC_SEED` replays one seed, `FC_RUNS` scales up.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Decision, DecisionRequest, Identity } from '../../runtime/core/types.ts';
import { configArb, responseHeadersArb, scenarioArb, type Scenario } from '../reference/arbitrary.ts';
import { chosenRoutePolicy, firstMatchingRoute } from '../reference/interpreter.ts';
import { bothDecisions, bothResponseHeaders, compiled, saveCounterexample } from './support.ts';
import { isDeepStrictEqual } from 'node:util';

const seed = process.env['FC_SEED'] === undefined ? undefined : Number(process.env['FC_SEED']);
const runs = (n: number): number => Math.round(n * Number(process.env['FC_RUNS_SCALE'] ?? '1'));
const params = (numRuns: number): fc.Parameters<[Scenario]> => ({ numRuns: runs(numRuns), ...(seed !== undefined ? { seed } : {}) });

/**
 * Cases showing a disagreement already reported (KNOWN, each with its failing file in
 * fixtures/corpus/, which corpus.test.ts replays) are skipped, so this property looks for new
 * disagreements instead of saving the same one again on every run. `SVC_DIFF_INCLUDE_KNOWN=1`
 * includes them. Remove an entry once the runtime or the rule book is aligned.
 */
const skipKnown = process.env['SVC_DIFF_INCLUDE_KNOWN'] !== '1';

/** The first case of a scenario on which the two back ends disagree, if any. */
function firstDisagreement(s: Scenario): { index: number; runtime: Decision; reference: Decision } | undefined {
  for (let i = 0; i < s.cases.length; i++) {
    const { request, identity } = s.cases[i]!;
    if (skipKnown && KNOWN.some((k) => k.applies(request, identity, s.config.text))) continue;
    const { runtime, reference } = bothDecisions(s.config.text, request, identity);
    if (!isDeepStrictEqual(runtime, reference)) return { index: i, runtime, reference };
  }
  return undefined;
}

/** Runs a property; on failure saves the shrunk case to the corpus and fails with its details. */
function checkScenarios(prefix: string, numRuns: number, failing: (s: Scenario) => { index: number; detail: string } | undefined): void {
  const result = fc.check(
    fc.property(scenarioArb(), (s) => failing(s) === undefined),
    params(numRuns),
  );
  if (!result.failed) {
    expect(result.numRuns).toBeGreaterThan(0);
    return;
  }
  const [s] = result.counterexample ?? [];
  if (s === undefined) throw new Error(`property failed without a counterexample: ${String(result.errorInstance)}`);
  const found = failing(s);
  if (found === undefined) throw new Error('counterexample no longer fails');
  const { request, identity } = s.cases[found.index]!;
  const file = saveCounterexample(prefix, { note: 'shrunk by fast-check; see the test output for the two sides', config: s.config.text, request, identity });
  expect.fail(`${prefix}: runtime and reference disagree (seed ${result.seed}, saved fixtures/corpus/${file})\n${found.detail}`);
}

/** Disagreements found and reported; see test/reference/README.md and the `runtime-*` files of fixtures/corpus/. */
const KNOWN: readonly { readonly name: string; readonly applies: (request: DecisionRequest, identity: Identity | null, config: string) => boolean }[] = [
  // Empty: the six disagreements found so far were runtime bugs, fixed; their shrunk cases stay in
  // fixtures/corpus/runtime-*.json as regression cases.
];

describe('differential: runtime ≡ reference interpreter', () => {
  it('gives the same whole Decision for generated config, request and identity', () => {
    checkScenarios('decide', 120, (s) => {
      const d = firstDisagreement(s);
      return d && { index: d.index, detail: `runtime:   ${JSON.stringify(d.runtime)}\nreference: ${JSON.stringify(d.reference)}` };
    });
  });

  it('forwards to the route whose policy decided (S11: policy route = forwarded route)', () => {
    checkScenarios('s11', 60, (s) => {
      const { body } = compiled(s.config.text);
      for (let i = 0; i < s.cases.length; i++) {
        const { request, identity } = s.cases[i]!;
        if (skipKnown && KNOWN.some((k) => k.applies(request, identity, s.config.text))) continue;
        const { runtime } = bothDecisions(s.config.text, request, identity);
        if (!('route' in runtime)) continue;
        // The route the runtime names must be the first route answering the request, and that
        // route's policy alone must give the decision's outcome and reasons.
        const first = firstMatchingRoute(body, request);
        const expected = chosenRoutePolicy(body, runtime.route.index, request, identity);
        const outcome = runtime.outcome === 'redirect' ? 'allow' : runtime.outcome;
        if (first?.index !== runtime.route.index || first.id !== runtime.route.id || expected?.verdict !== outcome || !isDeepStrictEqual(expected.reasons, runtime.reasons)) {
          return { index: i, detail: `runtime: ${JSON.stringify(runtime)}\nfirst matching route: ${JSON.stringify(first)}\nthat route's policy: ${JSON.stringify(expected)}` };
        }
      }
      return undefined;
    });
  });

  it('edits response headers alike (§8)', () => {
    const result = fc.check(
      fc.property(configArb, fc.nat(), responseHeadersArb, (cfg, n, headers) => {
        const { body } = compiled(cfg.text);
        const routeIndex = n % body.routes.length;
        const { runtime, reference } = bothResponseHeaders(cfg.text, routeIndex, headers);
        return isDeepStrictEqual(runtime, reference);
      }),
      { numRuns: runs(150), ...(seed !== undefined ? { seed } : {}) },
    );
    if (!result.failed) {
      expect(result.numRuns).toBeGreaterThan(0);
      return;
    }
    const [cfg, n, headers] = result.counterexample!;
    const routeIndex = n % compiled(cfg.text).body.routes.length;
    const sides = bothResponseHeaders(cfg.text, routeIndex, headers);
    const file = saveCounterexample('response', {
      note: 'shrunk by fast-check: response headers differ',
      config: cfg.text,
      request: { method: 'GET', target: '/', scheme: 'https', headers: {}, peer: '203.0.113.9', nowMs: 0 },
      identity: null,
      response: { routeIndex, headers },
    });
    expect.fail(`response headers disagree (seed ${result.seed}, saved fixtures/corpus/${file})\nruntime:   ${JSON.stringify(sides.runtime)}\nreference: ${JSON.stringify(sides.reference)}`);
  });
});
