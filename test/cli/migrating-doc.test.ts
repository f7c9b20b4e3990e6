/**
 * docs/migrating.md stays in sync with the diagnostics registry: every `SVCnnnn name` it cites is a
 * registered diagnostic with that name.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REGISTRY } from '../../compiler/diagnostics/codes.ts';

const doc = readFileSync(join(import.meta.dirname, '../../docs/migrating.md'), 'utf8');

describe('docs/migrating.md', () => {
  const cited = [...doc.matchAll(/\b(SVC\d{4}) ([a-z0-9-]+)/g)].map((m) => `${m[1]} ${m[2]}`);

  it('cites diagnostics', () => {
    expect(cited.length).toBeGreaterThan(10);
  });

  it('cites each by its registered code and name', () => {
    const registered = new Set(REGISTRY.map((d) => `${d.code} ${d.name}`));
    expect(cited.filter((c) => !registered.has(c))).toEqual([]);
  });
});
