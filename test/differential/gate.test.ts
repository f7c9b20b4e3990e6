/**
 * The gate's reference ≡ the runtime's gate (docs/architecture.md §2 invariant 7, §5 "One gate"): for generated
 * configs with `https` and `tcp+https` routes, and entries of every kind (request, upgrade, CONNECT;
 * HTTP/1.0, 1.1, 2.0) on plain-HTTP and TLS connections (certificate names, client certificate,
 * routes that require one), `admit` and `gateReference` give the same refusal or the same Decision.
 * A failure saves fast-check's shrunk case under fixtures/corpus/ (replayed by corpus.test.ts).
 *
 * Sized for < 20 s on two cores; `FC_SEED` replays one seed, `FC_RUNS_SCALE` scales the runs.
 */
import fc from 'fast-check';
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import { gateScenarioArb, type GateCase, type GateScenario } from '../reference/arbitrary.ts';
import { bothGates, saveCounterexample } from './support.ts';

const seed = process.env['FC_SEED'] === undefined ? undefined : Number(process.env['FC_SEED']);
const runs = (n: number): number => Math.round(n * Number(process.env['FC_RUNS_SCALE'] ?? '1'));
const skipKnown = process.env['SVC_DIFF_INCLUDE_KNOWN'] !== '1';

/**
 * Disagreements already known: a case they apply to is compared as `instead` makes it, so that
 * the property hunts for new ones (`SVC_DIFF_INCLUDE_KNOWN=1` compares it as generated). Remove an
 * entry once the runtime is aligned.
 */
const KNOWN: readonly { readonly name: string; readonly applies: (c: GateCase) => boolean; readonly instead: (c: GateCase) => GateCase }[] = [

];

/** The case as compared: a known disagreement's `instead`, unless known ones are included. */
const compared = (c: GateCase): GateCase => (skipKnown ? KNOWN.find((k) => k.applies(c))?.instead(c) ?? c : c);

function firstDisagreement(s: GateScenario): { index: number; detail: string } | undefined {
  for (let i = 0; i < s.cases.length; i++) {
    const c = compared(s.cases[i]!);
    const { runtime, reference } = bothGates(s.config.text, c.entry, c.connection, c.identity);
    if (!isDeepStrictEqual(runtime, reference)) return { index: i, detail: `runtime:   ${JSON.stringify(runtime)}\nreference: ${JSON.stringify(reference)}` };
  }
  return undefined;
}

describe('differential: the gate (runtime admit ≡ reference)', () => {
  it('gives the same refusal or the same Decision for every kind of entry', () => {
    const result = fc.check(
      fc.property(gateScenarioArb(), (s) => firstDisagreement(s) === undefined),
      { numRuns: runs(120), ...(seed !== undefined ? { seed } : {}) },
    );
    if (!result.failed) {
      expect(result.numRuns).toBeGreaterThan(0);
      return;
    }
    const [s] = result.counterexample ?? [];
    if (s === undefined) throw new Error(`property failed without a counterexample: ${String(result.errorInstance)}`);
    const found = firstDisagreement(s);
    if (found === undefined) throw new Error('counterexample no longer fails');
    const { entry, connection, identity } = compared(s.cases[found.index]!);
    const { kind, httpVersion, ...request } = entry;
    const file = saveCounterexample('gate', { note: 'shrunk by fast-check; see the test output for the two sides', config: s.config.text, request, identity, entry: { kind, httpVersion }, connection });
    expect.fail(`gate: runtime and reference disagree (seed ${result.seed}, saved fixtures/corpus/${file})\n${found.detail}`);
  });
});
