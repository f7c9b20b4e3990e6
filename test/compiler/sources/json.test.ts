import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { toPlain } from '../../../compiler/source/tree.ts';
import { parseJson } from '../../../compiler/sources/json.ts';
import { loc, run, text, walk } from './support.ts';

const CONFIG = `{
  "address": ":8443",
  "insecure_server": true,
  "xff_num_trusted_hops": 1,
  "routes": [
    {
      "from": "https://app.example.com",
      "to": ["http://10.0.0.1:8080,2", "http://10.0.0.2:8080,1"],
      "policy": [{ "allow": { "or": [{ "email": { "is": "alice@example.com" } }] } }]
    }
  ],
  "set_response_headers": { "X-Frame-Options": "DENY" },
  "empty": null
}`;

describe('parseJson', () => {
  it('reads a config with a span for every key and value', () => {
    const { node, diags } = run(parseJson, CONFIG, 'config.json');
    expect(diags).toEqual([]);
    expect(toPlain(node!)).toEqual(JSON.parse(CONFIG));
    expect(loc(node, 'address')).toEqual({ key: '2:3', keyText: '"address"', value: '2:14', valueText: '":8443"' });
    expect(loc(node, 'insecure_server')).toMatchObject({ value: '3:22', valueText: 'true' });
    expect(loc(node, 'routes[0].to[1]')).toMatchObject({ value: '8:40', valueText: '"http://10.0.0.2:8080,1"' });
    expect(loc(node, 'routes[0].policy[0].allow.or[0].email.is')).toMatchObject({ key: '9:51', value: '9:57' });
    expect(loc(node, 'routes[0]').valueText.startsWith('{\n      "from"')).toBe(true);
  });

  it('decodes string escapes', () => {
    const { node } = run(parseJson, '{"a": "x\\/y\\u00e9\\n", "b": "\\ud83d\\ude00"}');
    expect(toPlain(node!)).toEqual({ a: 'x/y\u00e9\n', b: '\u{1f600}' });
  });

  it('ignores a byte-order mark', () => {
    expect(toPlain(run(parseJson, '\uFEFF{"a": 1}').node!)).toEqual({ a: 1 });
  });

  it.each([
    ['{"a": }', 'SVC1020 1:7 `}`'],
    ['{"a": 1,}', 'SVC1020 1:9 `}`'],
    ['[1 2]', 'SVC1020 1:4 `2`'],
    ['{"a": 1} x', 'SVC1020 1:10 `x`'],
    ['{"a": "abc', 'SVC1020 1:7 `"`'],
    ['', 'SVC1020 1:1 ``'],
    ['{\n  // comment\n  "a": 1\n}', 'SVC1020 2:3 `/`'],
    ["{'a': 1}", "SVC1020 1:2 `'`"],
    ['{a: 1}', 'SVC1020 1:2 `a`'],
    ['{"a": tru}', 'SVC1020 1:7 `t`'],
    ['{"a": 01}', 'SVC1020 1:8 `1`'],
    ['{"a": "\\x"}', 'SVC1020 1:8 `\\`'],
    ['{"a": "\\u12"}', 'SVC1020 1:8 `\\`'],
    ['{"a": "tab\there"}', 'SVC1020 1:11 `\t`'],
    ['{"a": NaN}', 'SVC1020 1:7 `N`'],
    ['{"a": 1e999}', 'SVC1005 1:7 `1e999`'],
    ['{"a": 1, "a": 2}', 'SVC1003 1:10 `"a"`'],
  ])('reports %j at the failing offset', (input, expected) => {
    const { node, diags } = run(parseJson, input);
    expect(node).toBeUndefined();
    expect(diags).toEqual([expected]);
  });

  it('reports nesting beyond the limit instead of overflowing the stack', () => {
    expect(run(parseJson, '['.repeat(100_000)).diags).toEqual(['SVC1004 1:130 `[`']);
  });

  it('agrees with JSON.parse on every JSON value, and every span re-parses to its value', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), fc.boolean(), (value, pretty) => {
        const source = JSON.stringify(value, null, pretty ? 2 : undefined);
        const { node, diags } = run(parseJson, source);
        expect(diags).toEqual([]);
        // -0 is written as 0 by JSON.stringify
        expect(toPlain(node!)).toEqual(JSON.parse(source));
        for (const n of walk(node!)) expect(JSON.parse(text(n.span))).toEqual(toPlain(n));
      }),
      { numRuns: 200 },
    );
  });
});

describe('toPlain', () => {
  it('keeps a `__proto__` key as data, as JSON.parse does (seed -1777051547 found it)', () => {
    const source = '[{"__proto__":null}]';
    const { node } = run(parseJson, source);
    expect(toPlain(node!)).toEqual(JSON.parse(source));
    expect(Object.getPrototypeOf((toPlain(node!) as object[])[0])).toBe(Object.prototype);
  });
});
