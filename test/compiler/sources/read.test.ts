import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Reporter } from '../../../compiler/diagnostics/diagnostic.ts';
import { sourceFile, type Span } from '../../../compiler/source/source-file.ts';
import type { Node } from '../../../compiler/source/tree.ts';
import { parseDocumentValue } from '../../../compiler/sources/document.ts';
import { envLayer, parseListText, parseMapText } from '../../../compiler/sources/env.ts';
import { parseJson } from '../../../compiler/sources/json.ts';
import { parseProperties } from '../../../compiler/sources/properties.ts';
import { adapterFor, parseConfigText } from '../../../compiler/sources/read.ts';
import { parseToml } from '../../../compiler/sources/toml.ts';
import { parseYaml } from '../../../compiler/sources/yaml.ts';
import { asStrings, run, walk } from './support.ts';

/** One configuration in the four file formats. */
const FORMATS: Record<string, string> = {
  'config.yaml': `
address: ":8443"
insecure_server: true
cookie_expire: 1h45m
timeout_idle: 10m
xff_num_trusted_hops: 1
default_upstream_timeout: 30s
idp_scopes: [openid, email]
set_response_headers:
  X-Frame-Options: DENY
  X-Content-Type-Options: nosniff
routes:
  - from: https://app.example.com
    to:
      - http://10.0.0.1:8080,2
      - http://10.0.0.2:8080,1
    prefix: /api/
    timeout: 10s
    pass_identity_headers: true
    outlier_detection:
      consecutive_5xx: 5
    policy:
      - allow:
          or:
            - email:
                is: alice@example.com
            - groups:
                has: admins
  - from: https://docs.example.com
    to: [http://10.0.0.3:8080, http://10.0.0.4:8080]
    allow_public_unauthenticated_access: true
`,
  'config.json': `{
  "address": ":8443",
  "insecure_server": true,
  "cookie_expire": "1h45m",
  "timeout_idle": "10m",
  "xff_num_trusted_hops": 1,
  "default_upstream_timeout": "30s",
  "idp_scopes": ["openid", "email"],
  "set_response_headers": { "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff" },
  "routes": [
    {
      "from": "https://app.example.com",
      "to": ["http://10.0.0.1:8080,2", "http://10.0.0.2:8080,1"],
      "prefix": "/api/",
      "timeout": "10s",
      "pass_identity_headers": true,
      "outlier_detection": { "consecutive_5xx": 5 },
      "policy": [{ "allow": { "or": [{ "email": { "is": "alice@example.com" } }, { "groups": { "has": "admins" } }] } }]
    },
    {
      "from": "https://docs.example.com",
      "to": ["http://10.0.0.3:8080", "http://10.0.0.4:8080"],
      "allow_public_unauthenticated_access": true
    }
  ]
}`,
  'config.toml': `
address = ":8443"
insecure_server = true
cookie_expire = "1h45m"
timeout_idle = "10m"
xff_num_trusted_hops = 1
default_upstream_timeout = "30s"
idp_scopes = ["openid", "email"]

[set_response_headers]
X-Frame-Options = "DENY"
X-Content-Type-Options = "nosniff"

[[routes]]
from = "https://app.example.com"
to = ["http://10.0.0.1:8080,2", "http://10.0.0.2:8080,1"]
prefix = "/api/"
timeout = "10s"
pass_identity_headers = true
outlier_detection.consecutive_5xx = 5

  [[routes.policy]]
  [routes.policy.allow]
  or = [{ email = { is = "alice@example.com" } }, { groups = { has = "admins" } }]

[[routes]]
from = "https://docs.example.com"
to = ["http://10.0.0.3:8080", "http://10.0.0.4:8080"]
allow_public_unauthenticated_access = true
`,
  'config.properties': `
address = :8443
insecure_server = true
cookie_expire = 1h45m
timeout_idle = 10m
xff_num_trusted_hops = 1
default_upstream_timeout = 30s
idp_scopes[0] = openid
idp_scopes[1] = email
set_response_headers.X-Frame-Options = DENY
set_response_headers.X-Content-Type-Options = nosniff
routes[0].from = https://app.example.com
routes[0].to[0] = http://10.0.0.1:8080,2
routes[0].to[1] = http://10.0.0.2:8080,1
routes[0].prefix = /api/
routes[0].timeout = 10s
routes[0].pass_identity_headers = true
routes[0].outlier_detection.consecutive_5xx = 5
routes[0].policy[0].allow.or[0].email.is = alice@example.com
routes[0].policy[0].allow.or[1].groups.has = admins
routes[1].from = https://docs.example.com
routes[1].to[0] = http://10.0.0.3:8080
routes[1].to[1] = http://10.0.0.4:8080
routes[1].allow_public_unauthenticated_access = true
`,
};

describe('parseConfigText', () => {
  it('reads one configuration in four formats to equal trees (scalars compared as strings)', () => {
    const trees = Object.entries(FORMATS).map(([name, text]) => {
      const { node, diags } = run(parseConfigText, text, name);
      expect(diags, name).toEqual([]);
      return [name, asStrings(node!)] as const;
    });
    const [, first] = trees[0]!;
    expect(first).toMatchObject({ routes: [{ to: ['http://10.0.0.1:8080,2', 'http://10.0.0.2:8080,1'] }, {}] });
    for (const [name, tree] of trees) expect(tree, name).toEqual(first);
  });

  it('reads the properties routes as a document too', () => {
    const routes = JSON.stringify(JSON.parse(FORMATS['config.json']!).routes);
    const props = FORMATS['config.properties']!.split('\n').filter((l) => !l.startsWith('routes[')).join('\n') + `routes = ${routes}\n`;
    expect(asStrings(run(parseConfigText, props, 'config.properties').node!)).toEqual(asStrings(run(parseConfigText, FORMATS['config.yaml']!, 'config.yaml').node!));
  });

  it('chooses the adapter by extension, case-insensitively', () => {
    expect(adapterFor('dir.d/config.YML')).toBe(parseYaml);
    expect(adapterFor('c.yaml')).toBe(parseYaml);
    expect(adapterFor('c.json')).toBe(parseJson);
    expect(adapterFor('c.toml')).toBe(parseToml);
    expect(adapterFor('c.properties')).toBe(parseProperties);
    expect(adapterFor('c.props')).toBe(parseProperties);
    expect(adapterFor('yaml')).toBeUndefined();
    expect(adapterFor('dir.yaml/config')).toBeUndefined();
  });

  it('reports an unknown extension at the whole file, naming the supported ones', () => {
    const { node, r, diags } = run(parseConfigText, 'a: 1\n', 'config.ini');
    expect(node).toBeUndefined();
    expect(diags).toEqual(['SVC1001 1:1 `a: 1\n`']);
    expect(r.diagnostics[0]!.message).toBe('cannot tell the format of `config.ini` from its extension');
    expect(r.diagnostics[0]!.help).toContain('`.yaml`, `.yml`, `.json`, `.toml`, `.properties` or `.props`');
  });

  it('reports a top level that is not a map', () => {
    expect(run(parseConfigText, '- a\n- b\n', 'c.yaml').diags).toEqual(['SVC1002 1:1 `- a\n- b\n`']);
    expect(run(parseConfigText, '"text"', 'c.json').diags).toEqual(['SVC1002 1:1 `"text"`']);
  });

  it('reads empty files as empty maps, except JSON (empty text is not JSON)', () => {
    for (const name of ['c.yaml', 'c.toml', 'c.properties']) expect(run(parseConfigText, '', name).diags, name).toEqual([]);
    expect(run(parseConfigText, '', 'c.json').diags).toEqual(['SVC1020 1:1 ``']);
  });

  it('never throws and keeps every span inside its source, for any text in any adapter', () => {
    const adapters: ((text: string, r: Reporter) => Node | undefined)[] = [
      ...['c.yaml', 'c.json', 'c.toml', 'c.properties', 'c.ini'].map((name) => (text: string, r: Reporter) => parseConfigText(sourceFile(name, text), r)),
      (text, r) => parseListText(sourceFile('env:X', text, true), r),
      (text, r) => parseMapText(sourceFile('env:X', text, true), r),
      (text, r) => {
        const plain = sourceFile('env:ROUTES', text);
        return parseDocumentValue({ what: '`ROUTES`', plain, base64Name: 'env:ROUTES (base64)', whole: { source: plain, start: 0, end: text.length } }, r);
      },
      (text, r) =>
        envLayer(
          { A: text, B: text, C: text, D: text },
          [
            { key: 'a', kind: 'scalar' },
            { key: 'b', kind: 'list' },
            { key: 'c', kind: 'map' },
            { key: 'd', kind: 'document' },
          ],
          r,
        ),
    ];
    // Text built from the characters that matter to the formats, plus anything at all.
    const syntax = fc.constantFrom(...'-:?[]{},.="\'#!&*|>\\ \t\n\r0123456789abcxyzu@%`~+/\uFEFF'.split(''), '<<', '"""', "'''", '[[', ']]', '\\u', 'true', 'null', 'inf');
    const texts = fc.oneof(fc.string({ unit: syntax, maxLength: 60 }), fc.string({ unit: 'binary', maxLength: 40 }), fc.base64String({ maxLength: 40 }));
    const inside = (sp: Span): boolean => sp.start >= 0 && sp.start <= sp.end && sp.end <= sp.source.text.length;
    fc.assert(
      fc.property(texts, (text) => {
        for (const adapter of adapters) {
          const r = new Reporter();
          const node = adapter(text, r);
          for (const d of r.diagnostics) if (d.span) expect(inside(d.span)).toBe(true);
          if (node === undefined) continue;
          for (const n of walk(node)) {
            expect(inside(n.span)).toBe(true);
            if (n.kind === 'map') for (const e of n.entries) expect(inside(e.keySpan)).toBe(true);
          }
        }
      }),
      { numRuns: 1500 },
    );
  });
});
