/** The text syntax: grammar, precedence, separators, syntax errors and their locations. */
import { describe, expect, it } from 'vitest';
import { Reporter } from '../../../compiler/diagnostics/diagnostic.ts';
import type { Expr } from '../../../compiler/policy/ir.ts';
import { lowerPolicyNode } from '../../../compiler/policy/lower-document.ts';
import { parsePolicyText } from '../../../compiler/policy/parse-text.ts';
import { formatLocation, sourceFile, span } from '../../../compiler/source/source-file.ts';
import { text, underlined } from './helpers.ts';
import { nodeAt, yamlTree } from './yaml-tree.ts';

const c = (name: string, value: string): Expr => ({ op: 'criterion', name: name as 'email', match: { op: 'is', value } });
const A = c('email', 'a');
const B = c('email', 'b');
const C = c('email', 'c');
const when = (t: string): Expr | undefined => {
  const res = text(`allow if ${t}`);
  expect(res.diags).toEqual([]);
  return res.ir?.rules[0]?.when;
};

describe('policy text: grammar', () => {
  it('parses the docs/architecture.md §4 example', () => {
    const res = text('allow if domain is "example.com" or groups has "admins"\ndeny  if http_method in ["DELETE", "PUT"] and not groups has "ops"');
    expect(res.diags).toEqual([]);
    expect(res.ir).toEqual({
      rules: [
        { action: 'allow', when: { op: 'or', args: [c('domain', 'example.com'), { op: 'criterion', name: 'groups', match: { op: 'has', value: 'admins' } }] } },
        {
          action: 'deny',
          when: {
            op: 'and',
            args: [
              { op: 'criterion', name: 'http_method', match: { op: 'in', values: ['DELETE', 'PUT'] } },
              { op: 'not', arg: { op: 'criterion', name: 'groups', match: { op: 'has', value: 'ops' } } },
            ],
          },
        },
      ],
    });
  });

  it('binds not tighter than and, and tighter than or', () => {
    expect(when('email is "a" or email is "b" and email is "c"')).toEqual({ op: 'or', args: [A, { op: 'and', args: [B, C] }] });
    expect(when('not email is "a" and email is "b"')).toEqual({ op: 'and', args: [{ op: 'not', arg: A }, B] });
    expect(when('not (email is "a" and email is "b")')).toEqual({ op: 'not', arg: { op: 'and', args: [A, B] } });
    expect(when('not not email is "a"')).toEqual({ op: 'not', arg: { op: 'not', arg: A } });
  });

  it('keeps n-ary chains flat and parenthesised groups nested', () => {
    expect(when('email is "a" and email is "b" and email is "c"')).toEqual({ op: 'and', args: [A, B, C] });
    expect(when('(email is "a" and email is "b") and email is "c"')).toEqual({ op: 'and', args: [{ op: 'and', args: [A, B] }, C] });
    expect(when('((email is "a"))')).toEqual(A);
  });

  it('separates rules by line breaks or `;`, allows comments and continuation lines', () => {
    const res = text('# staff only\nallow if email is "a" # inline\n  or email is "b"; deny if reject;\n\n;allow if accept\n');
    expect(res.diags).toEqual([]);
    expect(res.ir?.rules.map((r) => r.action)).toEqual(['allow', 'deny', 'allow']);
    expect(res.ir?.rules[0]?.when).toEqual({ op: 'or', args: [A, B] });
  });

  it('decodes JSON string escapes', () => {
    expect(when('email is "\\"q\\" \\\\ \\/ \\u00e9"')).toEqual(c('email', '"q" \\ / é'));
  });

  it('keywords are exact lower-case words; longer names are identifiers', () => {
    expect(text('allow if notable is "x"').codes).toEqual(['SVC4002']);
    expect(text('Allow if accept').codes).toEqual(['SVC4001']);
  });
});

describe('policy text: syntax errors', () => {
  it('reports two errors in one text, each at its token', () => {
    const t = 'allow if domain is "a" or\ndeny if and email is "b"';
    const res = text(t);
    expect(res.ir).toBeUndefined();
    expect(res.codes).toEqual(['SVC4001', 'SVC4001']);
    expect(res.diags.map((d) => [d.span!.start, d.span!.end])).toEqual([
      [t.indexOf('deny'), t.indexOf('deny') + 4],
      [t.indexOf('and'), t.indexOf('and') + 3],
    ]);
    expect(res.diags.map(underlined)).toEqual(['deny', 'and']);
    expect(res.diags[0]!.message).toBe('syntax error in policy text: unexpected `deny`; expected a criterion, `not`, `true`, `false` or `(`');
    expect(res.diags.map((d) => formatLocation(d.span!))).toEqual(['policy.txt:2:1', 'policy.txt:2:9']);
    expect(res.diags.every((d) => d.path === 'routes[0].policy')).toBe(true);
  });

  it('reports errors on three lines', () => {
    const res = text('allow email is "a"\ndeny if email is "b" or\nallow if (email is "c"\n');
    expect(res.codes.length).toBeGreaterThanOrEqual(3);
    expect(res.diags.map(underlined).slice(0, 3)).toEqual(['email', 'allow', '']);
  });

  it('requires a separator between rules on one line', () => {
    const res = text('allow if accept deny if reject');
    expect(res.codes).toEqual(['SVC4001']);
    expect(underlined(res.diags[0]!)).toBe('deny');
  });

  it('reports unknown characters, unterminated strings and bad escapes', () => {
    expect(text('allow if email == "a"').diags.map(underlined)).toEqual(['==', '"a"']);
    const un = text('allow if email is "abc');
    expect(un.codes).toEqual(['SVC4001']);
    expect(un.diags[0]!.message).toMatch(/unterminated string/);
    const esc = text('allow if email is "a\\qb"');
    expect(esc.codes).toEqual(['SVC4001']);
    expect(underlined(esc.diags[0]!)).toBe('\\q');
  });

  it('reports an empty policy and a dangling condition', () => {
    expect(text('').codes).toEqual(['SVC4001']);
    expect(text('  # nothing\n').codes).toEqual(['SVC4001']);
    expect(text(';').codes).toEqual(['SVC4001']);
    const d = text('allow if').diags[0]!;
    expect(d.message).toMatch(/unexpected end of text/);
  });

  it('does not run semantic checks on text with syntax errors', () => {
    expect(text('allow if emial is "a" or').codes).toEqual(['SVC4001']);
  });

  it('reports several semantic errors at once', () => {
    const res = text('allow if emaill is "a" or source_ip in ["x"]\ndeny if day_of_week is "funday"');
    expect(res.codes).toEqual(['SVC4002', 'SVC4009', 'SVC4013']);
  });
});

describe('policy text: locations inside a config file', () => {
  it('maps offsets into a plain YAML scalar', () => {
    const y = 'routes:\n  - policy: allow if emaill is "a"\n';
    const { node } = yamlTree(y);
    const pol = nodeAt(node, 'routes', 0, 'policy');
    const r = new Reporter();
    expect(lowerPolicyNode(pol, r, 'routes[0].policy')).toBeUndefined();
    expect(r.diagnostics.map((d) => [d.code, formatLocation(d.span!), underlined(d), d.path])).toEqual([['SVC4002', 'config.yaml:2:22', 'emaill', 'routes[0].policy']]);
  });

  it('maps offsets into an indented YAML block scalar line by line', () => {
    const y = 'policy: |\n  allow if email is "a"\n  deny if grups has "x"\n';
    const { node } = yamlTree(y);
    const pol = nodeAt(node, 'policy');
    const r = new Reporter();
    lowerPolicyNode(pol, r, 'policy');
    expect(r.diagnostics.map((d) => [formatLocation(d.span!), underlined(d)])).toEqual([['config.yaml:3:11', 'grups']]);
  });

  it('falls back to the whole string span when the source does not hold the text verbatim', () => {
    const src = sourceFile('config.json', '{"policy": "allow if emaill is \\u0022a\\u0022"}');
    const at = span(src, 11, src.text.length - 1);
    const r = new Reporter();
    parsePolicyText('allow if emaill is "a"', at, r, 'policy');
    expect(r.diagnostics[0]!.span).toEqual(at);
  });
});

describe('policy text: the same text on many routes', () => {
  const at = (t: string, offset: number) => span(sourceFile('config.yaml', `${' '.repeat(offset)}${t}`), offset, offset + t.length);

  it('reports a bad text at every place it appears, not only the first', () => {
    const bad = 'allow if email is "a" oops';
    const r = new Reporter();
    expect(parsePolicyText(bad, at(bad, 0), r, 'routes[0].policy')).toBeUndefined();
    expect(parsePolicyText(bad, at(bad, 40), r, 'routes[1].policy')).toBeUndefined();
    const [first, second] = r.diagnostics;
    expect(r.diagnostics).toHaveLength(2);
    expect([first!.code, first!.path, first!.span?.start]).toEqual(['SVC4003', 'routes[0].policy', 22]);
    expect([second!.code, second!.path, second!.span?.start]).toEqual(['SVC4003', 'routes[1].policy', 62]);
  });

  it('gives a clean text the same rules wherever it appears, reporting nothing', () => {
    const clean = 'allow if groups has "admins"';
    const r = new Reporter();
    const first = parsePolicyText(clean, at(clean, 0), r, 'routes[0].policy');
    expect(parsePolicyText(clean, at(clean, 30), r, 'routes[1].policy')).toEqual(first);
    expect(r.diagnostics).toEqual([]);
  });
});
