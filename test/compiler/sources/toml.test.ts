import TOML from '@iarna/toml';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { toPlain } from '../../../compiler/source/tree.ts';
import { parseToml } from '../../../compiler/sources/toml.ts';
import { find, loc, run, text } from './support.ts';

const CONFIG = `# svc
address = ":8443"
insecure_server = true
xff_num_trusted_hops = 1
cookie_expire = "1h45m"

[set_response_headers]
X-Frame-Options = "DENY"
"X.Dotted" = 'literal'

[[routes]]
from = "https://app.example.com"
to = [
  "http://10.0.0.1:8080,2",  # first
  "http://10.0.0.2:8080,1",
]
outlier_detection.consecutive_5xx = 5

  [[routes.policy]]
  allow = { or = [{ email = { is = "alice@example.com" } }, { groups = { has = "admins" } }] }

[[routes]]
from = "https://docs.example.com"
to = "http://10.0.0.3:8080"
[routes.redirect]
https_redirect = true
`;

describe('parseToml', () => {
  it('reads a config with a span for every key and value', () => {
    const { node, diags } = run(parseToml, CONFIG, 'config.toml');
    expect(diags).toEqual([]);
    expect(toPlain(node!)).toEqual({
      address: ':8443',
      insecure_server: true,
      xff_num_trusted_hops: 1,
      cookie_expire: '1h45m',
      set_response_headers: { 'X-Frame-Options': 'DENY', 'X.Dotted': 'literal' },
      routes: [
        {
          from: 'https://app.example.com',
          to: ['http://10.0.0.1:8080,2', 'http://10.0.0.2:8080,1'],
          outlier_detection: { consecutive_5xx: 5 },
          policy: [{ allow: { or: [{ email: { is: 'alice@example.com' } }, { groups: { has: 'admins' } }] } }],
        },
        { from: 'https://docs.example.com', to: 'http://10.0.0.3:8080', redirect: { https_redirect: true } },
      ],
    });
    expect(loc(node, 'address')).toEqual({ key: '2:1', keyText: 'address', value: '2:11', valueText: '":8443"' });
    expect(loc(node, 'set_response_headers')).toMatchObject({ key: '7:2', value: '7:1', valueText: '[set_response_headers]' });
    expect(loc(node, 'routes[0]')).toMatchObject({ value: '11:1', valueText: '[[routes]]' });
    expect(loc(node, 'routes[1]')).toMatchObject({ value: '22:1' });
    expect(loc(node, 'routes[0].to[1]')).toMatchObject({ value: '15:3', valueText: '"http://10.0.0.2:8080,1"' });
    expect(loc(node, 'routes[0].outlier_detection')).toMatchObject({ key: '17:1', keyText: 'outlier_detection' });
    expect(loc(node, 'routes[0].outlier_detection.consecutive_5xx')).toMatchObject({ key: '17:19', value: '17:37', valueText: '5' });
    expect(loc(node, 'routes[0].policy[0]')).toMatchObject({ value: '19:3', valueText: '[[routes.policy]]' });
    expect(loc(node, 'routes[0].policy[0].allow.or[1].groups.has')).toMatchObject({ key: '20:74', value: '20:80', valueText: '"admins"' });
    expect(loc(node, 'routes[1].redirect.https_redirect')).toMatchObject({ key: '26:1', value: '26:18' });
  });

  it('locates quoted keys with dots', () => {
    const { node } = run(parseToml, CONFIG);
    const headers = find(node, 'set_response_headers').node;
    expect(headers.kind === 'map' && headers.entries.map((e) => [e.key, text(e.keySpan), text(e.value.span)])).toEqual([
      ['X-Frame-Options', 'X-Frame-Options', '"DENY"'],
      ['X.Dotted', '"X.Dotted"', "'literal'"],
    ]);
  });

  it('keeps the written order of keys, even integer-like ones', () => {
    const { node } = run(parseToml, 'b = 1\n10 = 2\n2 = 3\n');
    expect(node?.kind === 'map' && node.entries.map((e) => e.key)).toEqual(['b', '10', '2']);
  });

  it('turns dates and times into ISO strings', () => {
    const { node, diags } = run(parseToml, 'a = 1979-05-27T07:32:00Z\nb = 1979-05-27\nc = 1979-05-27T00:32:00-07:00\n');
    expect(diags).toEqual([]);
    expect(toPlain(node!)).toEqual({ a: '1979-05-27T07:32:00.000Z', b: '1979-05-27', c: '1979-05-27T07:32:00.000Z' });
    expect(loc(node, 'a').valueText).toBe('1979-05-27T07:32:00Z');
  });

  it('reads multi-line strings and locates what follows them', () => {
    const { node } = run(parseToml, 'a = """\nline "one"\nline two"""\nb = \'\'\'x\'\'\'\nc = 3\n');
    expect(toPlain(node!)).toEqual({ a: 'line "one"\nline two', b: 'x', c: 3 });
    expect(loc(node, 'c')).toMatchObject({ key: '5:1', value: '5:5' });
  });

  it.each([
    ['a = 1\nb = ', 'SVC1030 2:5 ``', 'key without value'],
    ['a = 1\na = 2', 'SVC1030 2:6 ``', "can't redefine existing key"],
    ['[x]\n[x]', 'SVC1030 2:4 ``', "can't redefine existing key"],
    ['a = "unterminated\n', 'SVC1030 2:1 ``', 'unterminated string'],
  ])('reports syntax errors at the offset @iarna/toml names: %j', (input, expected, message) => {
    const { node, diags, r } = run(parseToml, input);
    expect(node).toBeUndefined();
    expect(diags).toEqual([expected]);
    expect(r.diagnostics[0]!.message.toLowerCase()).toContain(message);
    expect(r.diagnostics[0]!.message).not.toMatch(/\n|row \d/);
  });

  it('rejects infinity, not-a-number and integers beyond 2^53', () => {
    expect(run(parseToml, 'a = inf\nb = nan\nc = 99999999999999999999\nd = 9007199254740991\n').diags).toEqual([
      'SVC1005 1:5 `inf`',
      'SVC1005 2:5 `nan`',
      'SVC1005 3:5 `99999999999999999999`',
    ]);
  });

  it('ignores a byte-order mark', () => {
    expect(toPlain(run(parseToml, '\uFEFFa = 1').node!)).toEqual({ a: 1 });
  });

  it('locates every key and value of generated documents (locator ≡ @iarna/toml)', () => {
    const key = fc.oneof(fc.stringMatching(/^[a-z_-]{1,6}$/), fc.string({ maxLength: 5 }));
    const leaf = fc.oneof(
      fc.string({ maxLength: 8 }),
      fc.integer(),
      fc.boolean(),
      fc.integer().map((i) => i / 8), // @iarna/toml cannot read back every double it writes (7e-323)
      fc.array(fc.string({ maxLength: 4 }), { maxLength: 3 }),
      fc.array(fc.integer(), { maxLength: 3 }),
    );
    const { table } = fc.letrec((tie) => ({
      table: fc.dictionary(key, fc.oneof({ depthSize: 'small' }, leaf, leaf, tie('table'), fc.array(tie('table'), { minLength: 1, maxLength: 2 })), { maxKeys: 4 }),
    }));
    fc.assert(
      fc.property(table, (value) => {
        let source: string;
        try {
          source = TOML.stringify(value as TOML.JsonMap);
        } catch {
          return; // shapes @iarna/toml cannot write
        }
        const { node, diags } = run(parseToml, source);
        expect(diags).toEqual([]);
        expect(toPlain(node!)).toEqual(JSON.parse(JSON.stringify(TOML.parse(source))));
        const check = (n: typeof node, v: unknown): void => {
          if (n === undefined) return;
          if (n.kind === 'map') {
            for (const e of n.entries) {
              expect(Object.keys(TOML.parse(`${text(e.keySpan)} = 1`))).toEqual([e.key]);
              check(e.value, (v as Record<string, unknown>)[e.key]);
            }
          } else if (n.kind === 'list') {
            n.items.forEach((item, i) => check(item, (v as unknown[])[i]));
            if (n.items.every((i) => i.kind !== 'map')) expect(TOML.parse(`x = ${text(n.span)}`)['x']).toEqual(v);
          } else {
            expect(TOML.parse(`x = ${text(n.span)}`)['x']).toEqual(v);
          }
        };
        check(node, TOML.parse(source));
      }),
      { numRuns: 300 },
    );
  });
});
