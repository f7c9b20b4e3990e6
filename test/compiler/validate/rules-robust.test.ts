/**
 * Rules see the config as written, where a value may have any shape (a schema error leaves it in
 * place). Whatever the shapes, no rule throws.
 */
import fc from 'fast-check';
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { Reporter } from '../../../compiler/diagnostics/diagnostic.ts';
import { ROUTE_FIELDS } from '../../../compiler/schema/config-schema.ts';
import { SETTINGS } from '../../../compiler/settings/table.ts';
import { RULES } from '../../../compiler/validate/rules/index.ts';
import type { RuleInput } from '../../../compiler/validate/rule.ts';
import { BASE_SETTINGS, compileText } from '../../support/compile-text.ts';

const valid = compileText(stringify({ ...BASE_SETTINGS, routes: [{ from: 'https://a.example.com', to: 'http://10.0.0.1', policy: 'allow if email is "a@example.com"' }] })).plan!;

const value = fc.oneof(
  fc.anything({ maxDepth: 2 }),
  fc.constantFrom('https://a.example.com/x', 'tcp+https://a.example.com', 'http://b,0', '/p', 'p', '^(?=a)', 'a.b', 'Host', ''),
  fc.array(fc.constantFrom('http://a,1', 'tcp://b', 'x', 7), { maxLength: 3 }),
  fc.dictionary(fc.constantFrom('Host', ':path', 'http_health_check', 'tcp_health_check', 'x'), fc.anything({ maxDepth: 1 }), { maxKeys: 3 }),
);
const routeArb = fc.dictionary(fc.constantFrom(...Object.keys(ROUTE_FIELDS)), value, { maxKeys: 8 });
const configArb = fc.dictionary(fc.constantFrom(...SETTINGS.map((s) => s.key)), value, { maxKeys: 8 });

describe('validation rules on arbitrary shapes', () => {
  it('never throw', () => {
    fc.assert(
      fc.property(configArb, fc.array(routeArb, { maxLength: 4 }), fc.boolean(), (config, raws, lowered) => {
        const input: RuleInput = {
          body: valid.body,
          config,
          routes: raws.map((raw, i) => ({ raw, path: `routes[${i}]`, lowered: lowered ? valid.body.routes[0] : undefined })),
          index: { get: () => undefined, distinct: false },
        };
        const r = new Reporter();
        for (const rule of RULES) expect(() => rule.check(input, r)).not.toThrow();
      }),
      { numRuns: 500 },
    );
  });
});
