import { describe, expect, it } from 'vitest';
import { toPlain } from '../../../compiler/source/tree.ts';
import { parseProperties } from '../../../compiler/sources/properties.ts';
import { parseKeyPath } from '../../../compiler/sources/properties-path.ts';
import { find, loc, run, show } from './support.ts';

const CONFIG = `# svc configuration
! also a comment
address=:8443
insecure_server = true
cookie_expire: 1h45m
xff_num_trusted_hops 1
set_response_headers.X-Frame-Options=DENY
routes[0].from=https://app.example.com
routes[0].to[0]=http://10.0.0.1:8080,2
routes[0].to[1]=http://10.0.0.2:8080,1
routes[0].policy[0].allow.or[0].email.is=alice@example.com
routes[1].from=https://docs.example.com
`;

describe('parseProperties', () => {
  it('reads a config with nesting, untyped values and spans', () => {
    const { node, diags } = run(parseProperties, CONFIG, 'config.properties');
    expect(diags).toEqual([]);
    expect(toPlain(node!)).toEqual({
      address: ':8443',
      insecure_server: 'true',
      cookie_expire: '1h45m',
      xff_num_trusted_hops: '1',
      set_response_headers: { 'X-Frame-Options': 'DENY' },
      routes: [
        {
          from: 'https://app.example.com',
          to: ['http://10.0.0.1:8080,2', 'http://10.0.0.2:8080,1'],
          policy: [{ allow: { or: [{ email: { is: 'alice@example.com' } }] } }],
        },
        { from: 'https://docs.example.com' },
      ],
    });
    expect(find(node, 'insecure_server').node).toMatchObject({ value: 'true', untyped: true });
    expect(loc(node, 'address')).toEqual({ key: '3:1', keyText: 'address', value: '3:9', valueText: ':8443' });
    expect(loc(node, 'insecure_server')).toMatchObject({ value: '4:19', valueText: 'true' });
    expect(loc(node, 'xff_num_trusted_hops')).toMatchObject({ value: '6:22', valueText: '1' });
    expect(loc(node, 'set_response_headers.X-Frame-Options')).toMatchObject({ key: '7:22', keyText: 'X-Frame-Options', value: '7:38' });
    expect(loc(node, 'routes')).toMatchObject({ key: '8:1', keyText: 'routes' });
    expect(loc(node, 'routes[0].to[1]')).toMatchObject({ value: '10:17', valueText: 'http://10.0.0.2:8080,1' });
    expect(loc(node, 'routes[0].policy[0].allow.or[0].email.is')).toMatchObject({ key: '11:39', keyText: 'is', valueText: 'alice@example.com' });
  });

  it('follows Java rules: continuations, escapes, separators', () => {
    const text = [
      'a = one \\',
      '    two\\',
      '  three',
      'b\\:c = x\\ty\\u00e9',
      'd\\ e x',
      'f=',
      'g',
      'h = trailing spaces dropped   ',
      'i = kept\\ ',
      'j = back\\\\',
      'k = \\#not a comment',
      'l = a=b:c',
    ].join('\r\n');
    const { node, diags } = run(parseProperties, text);
    expect(diags).toEqual([]);
    expect(toPlain(node!)).toEqual({
      a: 'one twothree', // Java drops the leading blanks of a continuation line
      'b:c': 'x\ty\u00e9',
      'd e': 'x',
      f: '',
      g: '',
      h: 'trailing spaces dropped',
      i: 'kept ',
      j: 'back\\',
      k: '#not a comment',
      l: 'a=b:c',
    });
    expect(loc(node, 'a')).toMatchObject({ value: '1:5' });
    expect(loc(node, 'a').valueText).toBe('one \\\r\n    two\\\r\n  three');
  });

  it('quotes map keys that hold dots', () => {
    const { node, diags } = run(parseProperties, 'allowed_idp_claims["https://example.com/roles"][0]=admin\nallowed_idp_claims.org.team=a\n');
    expect(diags).toEqual([]);
    expect(toPlain(node!)).toEqual({ allowed_idp_claims: { 'https://example.com/roles': ['admin'], org: { team: 'a' } } });
  });

  it('reads a routes document (JSON or YAML, plain or base64) with spans in the file', () => {
    const json = '[{"from": "https://a.example.com", "to": ["http://b", "http://c"]}]';
    const { node, diags } = run(parseProperties, `address=:8443\nroutes = ${json}\n`, 'config.properties');
    expect(diags).toEqual([]);
    expect(toPlain(find(node, 'routes').node)).toEqual(JSON.parse(json));
    expect(loc(node, 'routes[0].to[1]')).toMatchObject({ value: '2:64', valueText: '"http://c"' });
    expect(find(node, 'routes[0].to[1]').node.span.source.name).toBe('config.properties');

    const b64 = Buffer.from('- from: https://a.example.com\n  to: http://b\n').toString('base64');
    const decoded = run(parseProperties, `routes=${b64}\n`, 'config.properties');
    expect(toPlain(decoded.node!)).toEqual({ routes: [{ from: 'https://a.example.com', to: 'http://b' }] });
    expect(find(decoded.node, 'routes[0].to').node.span.source.name).toBe('config.properties (routes, base64)');
  });

  it('locates errors inside a routes document in the file', () => {
    const { diags } = run(parseProperties, 'a=1\nroutes=[{"from": "x", "from": "y"}]\n');
    expect(diags).toEqual(['SVC1003 2:23 `"from"`']);
    expect(run(parseProperties, 'routes=just words\n').diags).toEqual(['SVC1052 1:8 `just words`']);
  });

  it('reads an empty routes value as an (untyped) empty string', () => {
    expect(find(run(parseProperties, 'routes=\n').node, 'routes').node).toMatchObject({ value: '', untyped: true });
  });

  it.each([
    ['a=1\na=2\n', ['SVC1003 2:1 `a`']],
    ['routes[0].from=x\nroutes[0].from=y\n', ['SVC1003 2:11 `from`']],
    ['a=1\na.b=2\n', ['SVC1042 2:3 `b`']],
    ['a.b=2\na=1\n', ['SVC1042 2:1 `a`']],
    ['a.b=1\na[0]=2\n', ['SVC1042 2:2 `[0]`']],
    ['a[0]=1\na[2]=2\n', ['SVC1043 2:2 `[2]`']],
    ['a[1].b=1\n', ['SVC1043 1:2 `[1]`']],
    ['a..b=1\n', ['SVC1041 1:1 `a..b`']],
    ['a.=1\n', ['SVC1041 1:1 `a.`']],
    ['[0]=1\n', ['SVC1041 1:1 `[0]`']],
    ['a[01]=1\n', ['SVC1041 1:1 `a[01]`']],
    ['a[x]=1\n', ['SVC1041 1:1 `a[x]`']],
    ['a[0=1\n', ['SVC1041 1:1 `a[0`']],
    ['=value\n', ['SVC1041 1:1 ``']],
    ['a=\\u12G4\n', ['SVC1040 1:3 `\\u12G4`']],
    [`${'a.'.repeat(200)}a=1\n`, [`SVC1004 1:1 \`${'a.'.repeat(200)}a\``]],
  ])('reports %j', (input, expected) => {
    const { node, diags } = run(parseProperties, input);
    expect(node).toBeUndefined();
    expect(diags).toEqual(expected);
  });

  it('names the first definition in a conflict', () => {
    const { r } = run(parseProperties, 'routes[0].to=http://a\nroutes[0].to[0]=http://b\n', 'c.properties');
    expect(r.diagnostics.map(show)).toEqual(['SVC1042 2:13 `[0]`']);
    expect(r.diagnostics[0]!.message).toBe('key `routes[0].to[0]` conflicts with `routes[0].to`');
    expect(r.diagnostics[0]!.help).toContain('c.properties:1:11');
  });
});

describe('parseKeyPath', () => {
  it('splits names, indices and quoted names', () => {
    const p = parseKeyPath('routes[0].set_response_headers["X.Y"].z');
    expect(p.ok && p.segments.map((s) => (s.kind === 'name' ? s.name : s.index))).toEqual(['routes', 0, 'set_response_headers', 'X.Y', 'z']);
  });

  it('refuses huge indices', () => {
    expect(parseKeyPath('a[100001]')).toMatchObject({ ok: false });
  });
});
