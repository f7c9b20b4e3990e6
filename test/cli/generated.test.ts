import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { generatedFiles } from '../../cli/generated.ts';

const ROOT = join(import.meta.dirname, '../..');

describe('generated files are in sync with the code (run `npm run gen:schemas`)', () => {
  it.each(Object.entries(generatedFiles()))('%s', (rel, content) => {
    expect(readFileSync(join(ROOT, rel), 'utf8')).toBe(content);
  });
});
