/**
 * Replays every counterexample kept in fixtures/corpus/ (shrunk by decide.test.ts, or written by
 * hand) against both back ends: the runtime and the reference must give the same whole Decision,
 * and the same response headers for an entry that has them; an entry with a gate `entry` or
 * `connection` gives the same refusal or Decision through both gates (rule book §9). An entry stays
 * failing until the runtime, the reference or the rule book is aligned; its `note` says which line
 * decides.
 */
import { describe, expect, it } from 'vitest';
import { bothDecisions, bothGates, bothResponseHeaders, readCorpus } from './support.ts';

const corpus = readCorpus();

describe('fixtures/corpus replay: runtime ≡ reference', () => {
  it('has entries to replay', () => {
    expect(corpus.length).toBeGreaterThan(0);
  });

  it.each(corpus.map(({ file, entry }) => [file, entry] as const))('%s', (_file, entry) => {
    // A §9 entry (with `entry` and `connection`) is replayed through both gates; any other through
    // both decision cores.
    if (entry.entry !== undefined || entry.connection !== undefined) {
      const gateEntry = { ...entry.request, kind: entry.entry?.kind ?? 'request', httpVersion: entry.entry?.httpVersion ?? '1.1' } as const;
      const sides = bothGates(entry.config, gateEntry, entry.connection ?? { tls: null }, entry.identity);
      expect(sides.runtime, entry.note).toEqual(sides.reference);
      return;
    }
    const { runtime, reference } = bothDecisions(entry.config, entry.request, entry.identity);
    expect(runtime, entry.note).toEqual(reference);
    if (entry.response !== undefined) {
      const sides = bothResponseHeaders(entry.config, entry.response.routeIndex, entry.response.headers);
      expect(sides.runtime, entry.note).toEqual(sides.reference);
    }
  });
});
