/**
 * Replays every counterexample kept in fixtures/corpus/ (shrunk by decide.test.ts, or written by
 * hand) against both back ends: the runtime and the reference must give the same whole Decision,
 * and the same response headers for an entry that has them. An entry stays failing until the
 * runtime, the reference or the rule book is aligned; its `note` says which line decides.
 */
import { describe, expect, it } from 'vitest';
import { bothDecisions, bothResponseHeaders, readCorpus } from './support.ts';

const corpus = readCorpus();

describe('fixtures/corpus replay: runtime ≡ reference', () => {
  it('has entries to replay', () => {
    expect(corpus.length).toBeGreaterThan(0);
  });

  it.each(corpus.map(({ file, entry }) => [file, entry] as const))('%s', (_file, entry) => {
    const { runtime, reference } = bothDecisions(entry.config, entry.request, entry.identity);
    expect(runtime, entry.note).toEqual(reference);
    if (entry.response !== undefined) {
      const sides = bothResponseHeaders(entry.config, entry.response.routeIndex, entry.response.headers);
      expect(sides.runtime, entry.note).toEqual(sides.reference);
    }
  });
});
