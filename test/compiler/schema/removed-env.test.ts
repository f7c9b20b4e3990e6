/**
 * A removed key set through its environment variable (`HEADERS=…`) is reported like the removed
 * key of a file, at `env:<NAME>`, naming the replacement's variable; never ignored.
 */
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { REMOVED_KEYS } from '../../../compiler/settings/table.ts';
import { BASE_SETTINGS, compileText } from '../../support/compile-text.ts';

const CONFIG = stringify({ ...BASE_SETTINGS, routes: [{ from: 'https://app.example.com', to: 'http://10.0.0.1', allow_any_authenticated_user: true }] });

describe('removed keys from the environment', () => {
  it.each(Object.keys(REMOVED_KEYS))('%s', (key) => {
    const name = key.toUpperCase();
    const r = compileText(CONFIG, 'config.yaml', { [name]: 'x' });
    const removed = r.diagnostics.filter((d) => d.name === 'removed-key');
    expect(removed.map((d) => [d.severity, d.message, d.path])).toEqual([['error', `\`${name}\` was removed`, key]]);
    expect(removed[0]!.span?.source.name).toBe(`env:${name}`);
    expect(r.plan).toBeUndefined();
  });

  it('names the replacement by its variable', () => {
    const r = compileText(CONFIG, 'config.yaml', { HEADERS: 'X-Frame-Options:DENY' });
    expect(r.diagnostics.find((d) => d.name === 'removed-key')?.help).toBe('use `SET_RESPONSE_HEADERS`');
  });

  it('an empty variable is not set', () => {
    expect(compileText(CONFIG, 'config.yaml', { HEADERS: '' }).plan).toBeDefined();
  });
});
