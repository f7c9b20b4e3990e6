import { describe, expect, it } from 'vitest';
import { toPlain } from '../../../compiler/source/tree.ts';
import { parseYaml } from '../../../compiler/sources/yaml.ts';
import { find, loc, run } from './support.ts';

const CONFIG = `# svc
address: ":8443"
insecure_server: true
cookie_expire: 1h45m
xff_num_trusted_hops: 1
log_level: on
set_response_headers:
  X-Frame-Options: DENY
routes:
  - from: https://app.example.com
    to:
      - http://10.0.0.1:8080,2
      - http://10.0.0.2:8080,1
    policy:
      - allow:
          or:
            - email: { is: alice@example.com }
`;

describe('parseYaml', () => {
  it('reads a config with a span for every key and value', () => {
    const { node, diags } = run(parseYaml, CONFIG, 'config.yaml');
    expect(diags).toEqual([]);
    expect(toPlain(node!)).toEqual({
      address: ':8443',
      insecure_server: true,
      cookie_expire: '1h45m',
      xff_num_trusted_hops: 1,
      log_level: 'on',
      set_response_headers: { 'X-Frame-Options': 'DENY' },
      routes: [
        {
          from: 'https://app.example.com',
          to: ['http://10.0.0.1:8080,2', 'http://10.0.0.2:8080,1'],
          policy: [{ allow: { or: [{ email: { is: 'alice@example.com' } }] } }],
        },
      ],
    });
    expect(loc(node, 'address')).toEqual({ key: '2:1', keyText: 'address', value: '2:10', valueText: '":8443"' });
    expect(loc(node, 'routes[0].from')).toMatchObject({ key: '10:5', value: '10:11', valueText: 'https://app.example.com' });
    expect(loc(node, 'routes[0].to[1]')).toMatchObject({ key: undefined, value: '13:9', valueText: 'http://10.0.0.2:8080,1' });
    expect(loc(node, 'routes[0].policy[0].allow.or[0].email.is')).toMatchObject({ key: '17:24', value: '17:28', valueText: 'alice@example.com' });
    expect(loc(node, 'set_response_headers.X-Frame-Options')).toMatchObject({ key: '8:3', value: '8:20' });
  });

  it('uses the YAML 1.2 core schema: on/yes/off stay strings, scalars are typed (not untyped)', () => {
    const { node } = run(parseYaml, 'a: yes\nb: off\nc: 0x1F\nd: 1.5\ne: ~\nf: "true"\ng: 012\n');
    expect(toPlain(node!)).toEqual({ a: 'yes', b: 'off', c: 31, d: 1.5, e: null, f: 'true', g: 12 });
    expect(find(node, 'a').node).toMatchObject({ untyped: false });
  });

  it('reads an empty document, or one of only comments, as an empty map', () => {
    expect(toPlain(run(parseYaml, '').node!)).toEqual({});
    expect(toPlain(run(parseYaml, '# nothing\n\n').node!)).toEqual({});
  });

  it('reports every syntax error, located, and returns no tree', () => {
    const { node, diags } = run(parseYaml, 'a: [1\nb: "x\n');
    expect(node).toBeUndefined();
    expect(diags.length).toBeGreaterThanOrEqual(2);
    expect(diags.every((d) => d.startsWith('SVC1010 '))).toBe(true);
    expect(diags).toEqual(['SVC1010 2:1 `b`', 'SVC1010 3:1 ``']);
  });

  it('reports a second document as a syntax error', () => {
    expect(run(parseYaml, 'a: 1\n---\nb: 2\n').diags).toEqual(['SVC1010 2:1 `---\nb: 2\n`']);
  });

  it('reports a duplicate key at the second key', () => {
    const { node, r, diags } = run(parseYaml, 'routes:\n  - from: a\n    to: b\n    from: c\n', 'c.yaml');
    expect(node).toBeUndefined();
    expect(diags).toEqual(['SVC1003 4:5 `from`']);
    expect(r.diagnostics[0]!.help).toContain('c.yaml:2:5');
  });

  it('turns non-string keys into their text as written', () => {
    const { node } = run(parseYaml, '1.10: a\ntrue: b\nnull: c\n8080: d\n');
    expect(toPlain(node!)).toEqual({ '1.10': 'a', true: 'b', null: 'c', '8080': 'd' });
  });

  it('rejects list and map keys', () => {
    expect(run(parseYaml, '? [a, b]\n: 1\n').diags).toEqual(['SVC1013 1:3 `[a, b]`']);
  });

  it('rejects tags outside the core schema and accepts core ones', () => {
    expect(run(parseYaml, 'a: !!binary aGVsbG8=\nb: !custom x\n').diags).toEqual(['SVC1012 2:4 `!custom`', 'SVC1012 1:4 `!!binary aGVsbG8=`']);
    expect(run(parseYaml, 'a: !!map [1]\n').diags).toEqual(['SVC1012 1:4 `!!map`']);
    expect(run(parseYaml, 'a: !!timestamp 2001-12-14\n').diags).toEqual(['SVC1012 1:4 `!!timestamp 2001-12-14`']);
    const { node, diags } = run(parseYaml, 'a: !!str 123\nb: !!int "7"\n');
    expect(diags).toEqual([]);
    expect(toPlain(node!)).toEqual({ a: '123', b: 7 });
  });

  it('warns about directives it does not know', () => {
    const { node, diags } = run(parseYaml, '%YAML 1.3\n---\na: 1\n');
    expect(diags).toEqual(['SVC1011 1:7 `1.3`']);
    expect(toPlain(node!)).toEqual({ a: 1 });
  });

  it('rejects infinite and not-a-number values', () => {
    expect(run(parseYaml, 'a: .inf\nb: .nan\n').diags).toEqual(['SVC1005 1:4 `.inf`', 'SVC1005 2:4 `.nan`']);
  });

  it('resolves aliases: the outer span is the alias, inner spans the anchored text', () => {
    const text = 'base: &b\n  to: http://x\n  timeout: 5s\nroutes:\n  - *b\n';
    const { node, diags } = run(parseYaml, text);
    expect(diags).toEqual([]);
    expect(toPlain(node!)).toEqual({ base: { to: 'http://x', timeout: '5s' }, routes: [{ to: 'http://x', timeout: '5s' }] });
    expect(loc(node, 'routes[0]')).toMatchObject({ value: '5:5', valueText: '*b' });
    expect(loc(node, 'routes[0].to')).toMatchObject({ key: '2:3', value: '2:7' });
  });

  it('resolves merge keys; written keys win, then earlier sources', () => {
    const text = 'x: &a { to: http://a, timeout: 5s }\ny: &b { to: http://b, prefix: /p }\nroute:\n  <<: [*a, *b]\n  timeout: 9s\n';
    const { node, diags } = run(parseYaml, text);
    expect(diags).toEqual([]);
    expect(toPlain(find(node, 'route').node)).toEqual({ to: 'http://a', prefix: '/p', timeout: '9s' });
    expect(run(parseYaml, '"<<": 1\n').node).toMatchObject({ entries: [{ key: '<<' }] });
    expect(run(parseYaml, 'a:\n  <<: 3\n').diags).toEqual(['SVC1016 2:7 `3`']);
  });

  it('rejects an alias inside its own anchor', () => {
    expect(run(parseYaml, 'a: &x [1, *x]\n').diags).toEqual(['SVC1014 1:11 `*x`']);
  });

  it('rejects alias expansions that explode ("billion laughs")', () => {
    const lines = ['a: &a [x, x, x, x, x, x, x, x, x, x]'];
    for (let i = 1; i < 8; i++) {
      const prev = String.fromCharCode(96 + i);
      const cur = String.fromCharCode(97 + i);
      lines.push(`${cur}: &${cur} [${Array(10).fill(`*${prev}`).join(', ')}]`);
    }
    const { node, diags } = run(parseYaml, lines.join('\n'));
    expect(node).toBeUndefined();
    expect(diags).toHaveLength(1);
    expect(diags[0]).toMatch(/^SVC1015 /);
  });

  it('rejects nesting deeper than the limit without calling the parser on hostile shapes', () => {
    expect(run(parseYaml, '- '.repeat(3000) + 'x').diags).toEqual(['SVC1004 1:1 `-`']);
    expect(run(parseYaml, '['.repeat(300) + ']'.repeat(300)).diags[0]).toMatch(/^SVC1004 /);
  });

  it('locates a YAML document that is a list (used for ROUTES)', () => {
    const { node } = run(parseYaml, '- from: https://a\n  to: http://b\n');
    expect(node?.kind).toBe('list');
    expect(loc(node, '[0].to')).toMatchObject({ key: '2:3', value: '2:7' });
  });
});
