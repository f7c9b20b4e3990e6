/**
 * Properties files of `svc verify` (compiler/verify/properties.ts): what a good file reads as, and
 * for each kind of mistake the located, coded diagnostic (every SVC6xxx code is triggered here);
 * arbitrary text never throws (docs/security.md S67).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { REGISTRY } from '../../../compiler/diagnostics/codes.ts';
import type { Diagnostic } from '../../../compiler/diagnostics/diagnostic.ts';
import { formatLocation } from '../../../compiler/source/source-file.ts';
import { bindProperties, hostPatternMatches, readProperties, unreadableProperties } from '../../../compiler/verify/properties.ts';
import { planOf, route } from '../../cli/diff/helpers.ts';

const FILE = 'props.yaml';
const seen = new Set<string>();

/** `code file:line:col` of each diagnostic, remembering the codes met. */
function located(ds: readonly Diagnostic[]): string[] {
  return ds.map((d) => {
    seen.add(d.code);
    return `${d.code} ${d.span ? formatLocation(d.span) : '-'}`;
  });
}

function problems(text: string): string[] {
  const r = readProperties(FILE, text);
  if (r.diagnostics.some((d) => d.severity === 'error')) expect(r.properties).toBeUndefined();
  return located(r.diagnostics);
}

const PLAN = planOf([route('app.example.com', { name: 'app', policy: 'allow if groups has "a"' }), route('wiki.corp.example.com', { name: 'wiki', policy: 'allow if authenticated_user' })]);

describe('a good properties file', () => {
  it('reads scope, exceptions, form and condition', () => {
    const r = readProperties(FILE, 'properties:\n  - name: p\n    hosts: ["*.Corp.example.com"]\n    paths: /admin\n    methods: [DELETE, PUT]\n    except: {routes: [wiki]}\n    never: not groups has "ops"\n');
    expect(r.diagnostics).toEqual([]);
    const p = r.properties![0]!;
    expect(p.name).toBe('p');
    expect(p.at).toBe(`${FILE}:2:5`);
    expect(p.scope.hosts!.map((h) => h.pattern)).toEqual(['*.corp.example.com']);
    expect(p.scope.paths).toEqual(['/admin']);
    expect(p.scope.methods).toEqual(['DELETE', 'PUT']);
    expect(p.scope.routes).toBeNull();
    expect(p.except.map((s) => s.routes!.map((x) => x.name))).toEqual([['wiki']]);
    expect(p.form).toBe('never');
    expect(p.condition).toEqual({ op: 'not', arg: { op: 'criterion', name: 'groups', match: { op: 'has', value: 'ops' } } });
    expect(bindProperties(r.properties!, PLAN)).toEqual([]);
  });

  it('matches host patterns: exact, or one label or more below the domain', () => {
    expect(hostPatternMatches('a.example.com', 'a.example.com')).toBe(true);
    expect(hostPatternMatches('*.example.com', 'a.example.com')).toBe(true);
    expect(hostPatternMatches('*.example.com', 'a.b.example.com')).toBe(true);
    expect(hostPatternMatches('*.example.com', 'example.com')).toBe(false);
    expect(hostPatternMatches('*.example.com', 'aexample.com')).toBe(false);
  });
});

describe('mistakes are located diagnostics', () => {
  const cases: [string, string, string[]][] = [
    ['not a map', '- a\n', ['SVC6002 props.yaml:1:1']],
    ['property not a map', 'properties:\n  - just text\n', ['SVC6002 props.yaml:2:5']],
    ['unknown top key', 'properties:\n  - {name: p, only: "true"}\nproperty: []\n', ['SVC6003 props.yaml:3:1']],
    ['unknown key', 'properties:\n  - name: p\n    method: GET\n    only: "true"\n', ['SVC6003 props.yaml:3:5']],
    ['unknown key in except', 'properties:\n  - name: p\n    except: {route: [a]}\n    only: "true"\n', ['SVC6003 props.yaml:3:14']],
    ['empty except scope', 'properties:\n  - name: p\n    except: {}\n    only: "true"\n', ['SVC6014 props.yaml:3:13']],
    ['no properties key', 'other: 1\n', ['SVC6003 props.yaml:1:1', 'SVC6004 props.yaml:1:1']],
    ['no name', 'properties:\n  - only: "true"\n', ['SVC6004 props.yaml:2:5']],
    ['wrong type', 'properties:\n  - name: p\n    hosts: {a: b}\n    only: "true"\n', ['SVC6005 props.yaml:3:12']],
    ['properties not a list', 'properties: {}\n', ['SVC6005 props.yaml:1:13']],
    ['condition not a string', 'properties:\n  - name: p\n    only: [a]\n', ['SVC6005 props.yaml:3:11']],
    ['duplicate name', 'properties:\n  - {name: p, only: "true"}\n  - {name: p, only: "true"}\n', ['SVC6006 props.yaml:3:12']],
    ['host with scheme', 'properties:\n  - {name: p, hosts: "https://a.com", only: "true"}\n', ['SVC6007 props.yaml:2:22']],
    ['host with port', 'properties:\n  - {name: p, hosts: "a.com:443", only: "true"}\n', ['SVC6007 props.yaml:2:22']],
    ['host star inside', 'properties:\n  - {name: p, hosts: "a.*.com", only: "true"}\n', ['SVC6007 props.yaml:2:22']],
    ['host star alone', 'properties:\n  - {name: p, hosts: "*", only: "true"}\n', ['SVC6007 props.yaml:2:22']],
    ['host empty label', 'properties:\n  - {name: p, hosts: "a..com", only: "true"}\n', ['SVC6007 props.yaml:2:22']],
    ['bad path', 'properties:\n  - {name: p, paths: admin, only: "true"}\n', ['SVC6008 props.yaml:2:22']],
    ['bad method', 'properties:\n  - {name: p, methods: "GE T", only: "true"}\n', ['SVC6009 props.yaml:2:24']],
    ['no form', 'properties:\n  - {name: p}\n', ['SVC6010 props.yaml:2:5']],
    ['two forms', 'properties:\n  - {name: p, only: "true", never: "false"}\n', ['SVC6010 props.yaml:2:29']],
    ['rules for a condition', 'properties:\n  - name: p\n    only: |\n      groups has "a"\n      allow if true\n', ['SVC6011 props.yaml:3:11']],
    ['no property', 'properties: []\n', ['SVC6013 props.yaml:1:13']],
    ['empty list', 'properties:\n  - {name: p, hosts: [], only: "true"}\n', ['SVC6014 props.yaml:2:22']],
    ['condition syntax', 'properties:\n  - name: p\n    only: groups has "a" and\n', ['SVC4001 props.yaml:3:29']],
    ['condition value', 'properties:\n  - {name: p, only: "groups has"}\n', ['SVC4004 props.yaml:2:29']],
    ['unknown criterion', 'properties:\n  - name: p\n    only: group has "a"\n', ['SVC4002 props.yaml:3:11']],
    ['unknown matcher', 'properties:\n  - name: p\n    only: groups hass "a"\n', ['SVC4003 props.yaml:3:18']],
    ['yaml syntax', 'properties: [\n', ['SVC1010 props.yaml:2:1']],
  ];

  it.each(cases)('%s', (_name, text, expected) => {
    expect(problems(text)).toEqual(expected);
  });

  it('an unreadable file', () => {
    const r = unreadableProperties(FILE, 'no such file');
    expect(r.properties).toBeUndefined();
    expect(located(r.diagnostics)).toEqual(['SVC6001 -']);
    expect(r.diagnostics[0]!.message).toContain('no such file');
  });

  it('route names the plan does not have, and host patterns that match no route host', () => {
    const r = readProperties(FILE, 'properties:\n  - name: p\n    routes: [ap]\n    hosts: ["*.nowhere.example"]\n    only: "true"\n');
    expect(r.diagnostics).toEqual([]);
    const ds = bindProperties(r.properties!, PLAN);
    expect(located(ds)).toEqual(['SVC6012 props.yaml:3:14', 'SVC6015 props.yaml:4:13']);
    expect(ds[0]!.help).toBe('did you mean `app`?');
    expect(ds[1]!.severity).toBe('warning');
  });

  it('every SVC6xxx code is triggered above', () => {
    const verify = REGISTRY.filter((d) => d.code.startsWith('SVC6')).map((d) => d.code);
    expect(verify.length).toBeGreaterThan(10);
    expect(verify.filter((c) => !seen.has(c))).toEqual([]);
  });
});

describe('docs/security.md S67: hostile properties files', () => {
  it('an alias bomb and deep nesting are located diagnostics, not a hang or a crash', () => {
    const bomb = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]'];
    for (let i = 1; i < 8; i++) bomb.push(`${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(10).fill(`*${String.fromCharCode(96 + i)}`).join(',')}]`);
    expect(problems(`${bomb.join('\n')}\nproperties: []\n`)).toEqual([expect.stringMatching(/^SVC1015 props\.yaml:\d+:\d+$/)]);
    expect(problems(`${'['.repeat(5000)}${']'.repeat(5000)}\n`)[0]).toMatch(/^SVC1004 /);
  });

  it('a misspelt key is an error, never a property read without it', () => {
    const r = readProperties(FILE, 'properties:\n  - name: p\n    method: DELETE\n    only: groups has "ops"\n');
    expect(r.properties).toBeUndefined();
    expect(r.diagnostics.map((d) => d.code)).toEqual(['SVC6003']);
  });
});

describe('never a crash', () => {
  it('any text, and any YAML value, reads to properties or diagnostics', () => {
    const value = fc.letrec<{ v: unknown }>((tie) => ({
      v: fc.oneof({ depthSize: 'small' }, fc.string(), fc.integer(), fc.boolean(), fc.constant(null), fc.array(tie('v'), { maxLength: 3 }), fc.dictionary(fc.constantFrom('name', 'hosts', 'paths', 'methods', 'routes', 'except', 'only', 'never', 'always', 'x'), tie('v'), { maxKeys: 4 })),
    })).v;
    fc.assert(
      fc.property(fc.oneof(fc.string(), value.map((v) => stringify({ properties: [v] }))), (text) => {
        const r = readProperties(FILE, text);
        expect(r.properties !== undefined || r.diagnostics.some((d) => d.severity === 'error')).toBe(true);
        if (r.properties) bindProperties(r.properties, PLAN);
      }),
      { numRuns: 300 },
    );
  });
});
