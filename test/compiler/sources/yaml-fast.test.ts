import { globSync, readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { generateConfig } from '../../../bench/compile/generate.ts';
import { Reporter } from '../../../compiler/diagnostics/diagnostic.ts';
import { sourceFile, type SourceFile } from '../../../compiler/source/source-file.ts';
import { toPlain, type Node } from '../../../compiler/source/tree.ts';
import { parseYaml, parseYamlWithLibrary } from '../../../compiler/sources/yaml.ts';
import { readYamlFast } from '../../../compiler/sources/yaml-fast.ts';
import { edited, genCleanYaml, genWildYaml } from './yaml-gen.ts';

/** What a reader gives for a text: its tree (spans included) and every diagnostic, located. */
function outcome(read: (s: SourceFile, r: Reporter) => Node | undefined, source: SourceFile) {
  const r = new Reporter();
  const node = read(source, r);
  const diagnostics = r.diagnostics.map((d) => ({ code: d.code, message: d.message, help: d.help, start: d.span?.start, end: d.span?.end }));
  return { node, diagnostics };
}

/**
 * The contract of the fast path, checked on one text: when it reads the text, its tree equals the
 * library reader's, span for span, and the library reader reports nothing; and `parseYaml` as a
 * whole (fast path, else library) gives exactly what the library reader gives. Returns whether
 * the fast path read the text.
 */
function agrees(text: string): boolean {
  const source = sourceFile('config.yaml', text);
  const library = outcome(parseYamlWithLibrary, source);
  const fast = readYamlFast(source);
  if (fast !== undefined) {
    expect(library.diagnostics).toEqual([]);
    expect(fast).toEqual(library.node);
  }
  expect(outcome(parseYaml, source)).toEqual(library);
  return fast !== undefined;
}

/** `text` with CRLF line ends, as saved on Windows. */
function crlf(text: string): string {
  return text.replaceAll('\n', '\r\n');
}

/** Runs `agrees` over generated documents; returns how many the fast path read. */
function checkGenerated(docs: fc.Arbitrary<string>, numRuns: number): number {
  let read = 0;
  fc.assert(
    fc.property(docs, (text) => {
      if (agrees(text)) read++;
    }),
    { numRuns },
  );
  return read;
}

describe('YAML fast path against the library reader', () => {
  it('builds the same tree, span for span, for generated config-like documents', () => {
    const runs = 2500;
    const read = checkGenerated(genCleanYaml, runs);
    // The comparison means something only if the fast path reads a good share of them.
    expect(read).toBeGreaterThan(runs / 10);
  });

  it('gives up, or agrees, on documents with everything it does not read and broken text', () => {
    const runs = 2500;
    const read = checkGenerated(genWildYaml, runs);
    expect(read).toBeGreaterThan(runs / 50);
  });

  it('builds the same tree, span for span, for generated documents with CRLF line ends (moved onto the text as written)', () => {
    const runs = 1500;
    const read = checkGenerated(
      genCleanYaml.map((t) => crlf(t)),
      runs,
    );
    expect(read).toBeGreaterThan(runs / 10);
    // And with a few line ends left LF, or a carriage return that ends no line.
    checkGenerated(
      fc.tuple(genCleanYaml, fc.nat(), fc.boolean()).map(([t, n, lone]) => {
        const lines = t.split('\n');
        const i = n % lines.length;
        lines[i] = lone ? `${lines[i]}\r${i === lines.length - 1 ? '' : ' '}` : lines[i]!;
        return lines.map((l, j) => (j === lines.length - 1 || j === i ? l : `${l}\r`)).join('\n');
      }),
      500,
    );
  });

  const files = globSync(['fixtures/**/*.{yaml,yml}', 'test/**/*.{yaml,yml}']).sort();

  it('agrees on every YAML file of the fixtures and tests', () => {
    expect(files.length).toBeGreaterThan(50);
    let read = 0;
    for (const file of files) if (agrees(readFileSync(file, 'utf8'))) read++;
    expect(read).toBeGreaterThan(files.length / 2);
    let readCrlf = 0;
    for (const file of files) if (agrees(crlf(readFileSync(file, 'utf8')))) readCrlf++;
    expect(readCrlf).toBe(read);
  });

  it('gives up, or agrees, on those files with a few characters inserted or deleted', () => {
    const texts = files.map((f) => readFileSync(f, 'utf8')).filter((t) => t.length < 20_000);
    const runs = 1500;
    const read = checkGenerated(edited(texts), runs);
    expect(read).toBeGreaterThan(runs / 20);
  });

  it('reads the compile benchmark config at several sizes, with LF or CRLF line ends', () => {
    for (const n of [1, 7, 60, 1000]) {
      expect(agrees(generateConfig(n))).toBe(true);
      expect(agrees(crlf(generateConfig(n)))).toBe(true);
    }
  });

  it('reads the shapes configs use, with the spans of the library', () => {
    const docs = [
      'a: 1\nb:\nc: x # c\nd:   \ne:\n  - x\n  - y\n',
      'policy: |\n  allow if x\n\n  deny if y\n\n\nnext: 2\n',
      'a: >-\n  folded\n  text\n',
      'keep: |+\n  t\n\n\n',
      'to: [http://a, "b", \'c\']\nheaders: {X-A: 1, "X-B": two}\n',
      'routes:\n- from: a\n  to: b\n- from: c\n',
      'routes:\n  - from: a # first\n    # the upstream\n    to: b\n\n  # the second route\n  - from: c\n# end\n',
      '- - a\n  - b\n- c\n',
      '"quoted key": \'it\'\'s\'\nescaped: "tab\\there \\u00e9 \\U0001F600"\n',
      'ports: [0o17, 0x1F, 1_000, 1.10, +4, -0, .5, 1e3]\nflags: [true, True, yes, on, ~, null, Null]\n1.10: key as written\n',
      '# leading comment\n\n  indented: root\n  other: 1\n',
    ];
    for (const text of docs) expect(agrees(text), text).toBe(true);
  });

  it('resolves plain scalars with the core schema, as the library does', () => {
    const { node } = outcome(parseYaml, sourceFile('c.yaml', 'a: 0o17\nb: 1_000\nc: ~\nd: 1.10\ne: yes\nf: 0x1F\ng: 1e3\nh: "0o17"\n1.10: k\n'));
    expect(toPlain(node!)).toEqual({ a: 15, b: '1_000', c: null, d: 1.1, e: 'yes', f: 31, g: 1000, h: '0o17', '1.10': 'k' });
    expect(readYamlFast(sourceFile('c.yaml', 'a: 0o17\n'))).toBeDefined();
  });
});

describe('YAML fast path gives up on what it does not read', () => {
  /** The fast path gives `text` up, and `parseYaml` returns what the library reader returns. */
  function givesUp(text: string): void {
    const source = sourceFile('config.yaml', text);
    expect(readYamlFast(source), text).toBeUndefined();
    expect(outcome(parseYaml, source)).toEqual(outcome(parseYamlWithLibrary, source));
  }

  it('anchors and aliases', () => {
    givesUp('base: &b\n  to: x\nroute: *b\n');
    givesUp('a: &x 1\n');
    givesUp('a: *nothing\n');
    givesUp('a: &x [1, *x]\n');
  });

  it('tags, core or not', () => {
    givesUp('a: !!str 1\n');
    givesUp('a: !custom x\n');
    givesUp('a: ! x\n');
  });

  it('merge keys, but not a quoted `<<`', () => {
    givesUp('x: {a: 1}\ny:\n  <<: {b: 2}\n');
    givesUp('y:\n  <<: 3\n');
    expect(readYamlFast(sourceFile('c.yaml', '"<<": 1\n'))).toBeDefined();
  });

  it('duplicate keys, whatever their quoting', () => {
    givesUp('a: 1\na: 2\n');
    givesUp('a: 1\n"a": 2\n');
    givesUp('m: {x: 1, \'x\': 2}\n');
  });

  it('a BOM, tabs, carriage returns and control characters', () => {
    givesUp('\ufeffa: 1\n');
    givesUp('a:\t1\n');
    givesUp('a: 1\rb: 2\r');
    givesUp('a: "x\ry"\r\n');
    givesUp('a: "\u0001"\n');
  });

  it('syntax errors, documents and directives', () => {
    givesUp('a: [1\nb: "x\n');
    givesUp('a: 1\n---\nb: 2\n');
    givesUp('---\na: 1\n');
    givesUp('%YAML 1.2\n---\na: 1\n');
    givesUp('a: "x"#glued\n');
  });

  it('explicit and complex keys', () => {
    givesUp('? a\n: 1\n');
    givesUp('a: 1\n? ');
    givesUp('a: |\n  text\n?\n');
    givesUp('? [a, b]\n: 1\n');
    givesUp('[a]: 1\n');
  });

  it('multi-line scalars and flow collections, empty list items and flow values', () => {
    givesUp('a: one\n  two\n');
    givesUp('a: "one\n  two"\n');
    givesUp('a: [1,\n  2]\n');
    givesUp('a:\n  -\n  - x\n');
    givesUp('a: {b: }\n');
    givesUp('a: {b}\n');
  });

  it('numbers that are not finite, and too deep nesting', () => {
    givesUp('a: .inf\n');
    givesUp('a: 1e999\n');
    givesUp('- '.repeat(3000) + 'x');
    givesUp('['.repeat(300) + ']'.repeat(300));
    givesUp(`${' '.repeat(1001)}a: 1\n`);
  });

  it('empty documents and documents that are not a list or a map', () => {
    givesUp('');
    givesUp('# only a comment\n');
    givesUp('just text\n');
    givesUp('|\n  block\n');
  });

  it('block scalars with an indentation indicator or without content', () => {
    givesUp('a: |2\n   x\n');
    givesUp('a: |\nb: 1\n');
  });

  it('comments the library may count into a span', () => {
    givesUp('a:\n  b: 1\n    # deeper than the next line\nc: 2\n');
    givesUp('a:\n  b: 1\n  # at the end of a nested map\n');
    givesUp('a: 1\nb:\n# after an empty value\n');
  });
});
