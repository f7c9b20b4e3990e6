/**
 * The diagnostic list is capped (SVC5004): errors are kept before warnings, so a flood of warnings
 * never hides the error that fails the compile, and the cap itself is only a warning.
 */
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { BASE_SETTINGS, compileText } from '../support/compile-text.ts';

function config(routes: number, withError: boolean): string {
  const list = Array.from({ length: routes }, (_, i) => ({
    from: `https://app${i}.example.com`,
    to: 'http://10.0.0.1:8080',
    allowed_domains: ['example.com'], // deprecated: one warning per route
  }));
  // The error comes last in the file, after every warning.
  return stringify({ ...BASE_SETTINGS, routes: list, ...(withError ? { log_level: 'verbose' } : {}) });
}

describe('diagnostic cap', () => {
  it('keeps an error that comes after more than the cap of warnings', () => {
    const result = compileText(config(250, true));
    const codes = result.diagnostics.map((d) => d.code);
    expect(codes).toContain('SVC2003');
    expect(codes.at(-1)).toBe('SVC5004');
    expect(result.diagnostics.length).toBe(201);
    expect(result.plan).toBeUndefined();
  });

  it('a config with only warnings still compiles when the cap is reached', () => {
    const result = compileText(config(250, false));
    const cap = result.diagnostics.find((d) => d.code === 'SVC5004');
    expect(cap?.severity).toBe('warning');
    expect(result.diagnostics.some((d) => d.severity === 'error')).toBe(false);
    expect(result.plan?.checksum).toMatch(/^sha256:/);
  });
});
