import { describe, expect, it } from 'vitest';
import { Reporter } from '../../../compiler/diagnostics/diagnostic.ts';
import { formatLocation, sourceFile } from '../../../compiler/source/source-file.ts';
import { toPlain } from '../../../compiler/source/tree.ts';
import { envLayer, parseListText, parseMapText, type EnvKeySpec } from '../../../compiler/sources/env.ts';
import { find, loc, run, text } from './support.ts';

const SPECS: EnvKeySpec[] = [
  { key: 'address', kind: 'scalar' },
  { key: 'insecure_server', kind: 'scalar' },
  { key: 'idp_scopes', kind: 'list' },
  { key: 'set_response_headers', kind: 'map' },
  { key: 'routes', kind: 'document' },
  { key: 'policy', kind: 'document' },
];

function layer(env: Record<string, string | undefined>) {
  const r = new Reporter();
  const node = envLayer(env, SPECS, r);
  return { node, r, diags: r.diagnostics.map((d) => `${d.code} ${d.span ? formatLocation(d.span) : ''} ${d.message}`) };
}

const ROUTES_YAML = '- from: https://app.example.com\n  to:\n    - http://a\n    - http://b\n';

describe('envLayer', () => {
  it('reads each kind of variable, in spec order, ignoring unknown, unset and empty ones', () => {
    const { node, diags } = layer({
      ROUTES: ROUTES_YAML,
      IDP_SCOPES: ' openid, email,, ',
      ADDRESS: ':8443',
      INSECURE_SERVER: 'true',
      SET_RESPONSE_HEADERS: 'X-Frame-Options:DENY, X-Test : a:b',
      POLICY: '   ',
      UNKNOWN_THING: 'x',
      address: 'lower-case names are not read',
    });
    expect(diags).toEqual([]);
    expect(node.entries.map((e) => e.key)).toEqual(['address', 'insecure_server', 'idp_scopes', 'set_response_headers', 'routes']);
    expect(toPlain(node)).toEqual({
      address: ':8443',
      insecure_server: 'true',
      idp_scopes: ['openid', 'email'],
      set_response_headers: { 'X-Frame-Options': 'DENY', 'X-Test': 'a:b' },
      routes: [{ from: 'https://app.example.com', to: ['http://a', 'http://b'] }],
    });
    expect(find(node, 'insecure_server').node).toMatchObject({ untyped: true, value: 'true' });
  });

  it('names each variable as its own source, located as env:NAME', () => {
    const { node } = layer({ ADDRESS: ':8443', IDP_SCOPES: 'openid,email' });
    const e = find(node, 'idp_scopes');
    expect(e.keySpan?.source).toMatchObject({ name: 'env:IDP_SCOPES', isEnv: true });
    expect(formatLocation(e.keySpan!)).toBe('env:IDP_SCOPES');
    expect(text(find(node, 'idp_scopes[1]').node.span)).toBe('email');
  });

  it('reads ROUTES as base64 of YAML, located in the decoded text', () => {
    const { node, diags } = layer({ ROUTES: Buffer.from(ROUTES_YAML).toString('base64') });
    expect(diags).toEqual([]);
    const to = find(node, 'routes[0].to[1]').node;
    expect(to.span.source).toMatchObject({ name: 'env:ROUTES (base64)', isEnv: false, text: ROUTES_YAML });
    expect(formatLocation(to.span)).toBe('env:ROUTES (base64):4:7');
  });

  it('accepts line-wrapped base64 and base64 of JSON', () => {
    const json = JSON.stringify([{ from: 'https://a.example.com', to: 'http://b', policy: [{ allow: { or: [{ domain: { is: 'example.com' } }] } }] }]);
    const wrapped = Buffer.from(json).toString('base64').replace(/.{20}/g, '$&\n');
    const { node, diags } = layer({ POLICY: wrapped });
    expect(diags).toEqual([]);
    expect(toPlain(find(node, 'policy').node)).toEqual(JSON.parse(json));
  });

  it('locates errors inside a base64 document as env:ROUTES (base64):line:col', () => {
    const bad = '- from: https://a\n  to: http://b\n  from: https://c\n';
    expect(layer({ ROUTES: Buffer.from(bad).toString('base64') }).diags).toEqual(['SVC1003 env:ROUTES (base64):3:3 duplicate key `from`']);
  });

  it('reads plain YAML/JSON text, located as env:ROUTES:line:col', () => {
    const { node, diags } = layer({ ROUTES: '[{"from": "https://a", "to": "http://b"}]' });
    expect(diags).toEqual([]);
    expect(formatLocation(find(node, 'routes[0].to').node.span)).toBe('env:ROUTES:1:30');
    expect(layer({ ROUTES: '- from: a\n  to: [b\n' }).diags[0]).toMatch(/^SVC1010 env:ROUTES:\d+:\d+ yaml syntax error/);
  });

  it('reports garbage in a document variable, located at the variable', () => {
    expect(layer({ ROUTES: 'not routes at all' }).diags).toEqual([
      'SVC1052 env:ROUTES `ROUTES` is plain text, not a YAML or JSON list or map (plain or base64)',
    ]);
    expect(layer({ ROUTES: '42' }).diags).toEqual(['SVC1052 env:ROUTES `ROUTES` is a number, not a YAML or JSON list or map (plain or base64)']);
    // valid base64 alphabet, but the bytes are not text: read as plain text
    expect(layer({ ROUTES: '//79/A==' }).diags[0]).toMatch(/^SVC1052 env:ROUTES /);
  });

  it('reads a JSON array list and a JSON object or YAML map', () => {
    const { node, diags } = layer({
      IDP_SCOPES: '["openid", "email"]',
      SET_RESPONSE_HEADERS: '{"X-Frame-Options": "DENY", "Content-Security-Policy": "default-src \'self\', img-src *"}',
    });
    expect(diags).toEqual([]);
    expect(toPlain(node)).toEqual({
      idp_scopes: ['openid', 'email'],
      set_response_headers: { 'X-Frame-Options': 'DENY', 'Content-Security-Policy': "default-src 'self', img-src *" },
    });
    expect(toPlain(layer({ SET_RESPONSE_HEADERS: 'X-A: 1\nX-B: two\n' }).node)).toEqual({ set_response_headers: { 'X-A': 1, 'X-B': 'two' } });
  });

  it('reports list and map text of the wrong shape', () => {
    expect(layer({ IDP_SCOPES: '{"a": 1}', SET_RESPONSE_HEADERS: '{"a": 1' }).diags).toEqual([
      'SVC1051 env:IDP_SCOPES `IDP_SCOPES` holds a map; expected a list',
      expect.stringMatching(/^SVC1010 env:SET_RESPONSE_HEADERS yaml syntax error/),
    ]);
    expect(layer({ SET_RESPONSE_HEADERS: 'X-Frame-Options=DENY,:x,X-A:1,X-A:2' }).diags).toEqual([
      'SVC1050 env:SET_RESPONSE_HEADERS `SET_RESPONSE_HEADERS` item `X-Frame-Options=DENY` is not `Name:value`',
      'SVC1050 env:SET_RESPONSE_HEADERS `SET_RESPONSE_HEADERS` item `:x` is not `Name:value`',
      'SVC1003 env:SET_RESPONSE_HEADERS duplicate key `X-A`',
    ]);
  });
});

describe('parseListText and parseMapText', () => {
  it('give every item its own span', () => {
    const list = run(parseListText, ' a , b,,c ');
    expect(list.node?.items.map((i) => `${loc(i, '').value} ${text(i.span)}`)).toEqual(['1:2 a', '1:6 b', '1:9 c']);
    const map = run(parseMapText, 'X-A: 1 ,X-B:');
    expect(toPlain(map.node!)).toEqual({ 'X-A': '1', 'X-B': '' });
    expect(loc(map.node, 'X-A')).toMatchObject({ key: '1:1', value: '1:6', valueText: '1' });
  });

  it('work on any source, e.g. a .properties value', () => {
    const r = new Reporter();
    expect(toPlain(parseListText(sourceFile('x', 'a,b'), r)!)).toEqual(['a', 'b']);
  });
});
