/**
 * fast-check arbitraries of YAML text for the differential tests of the YAML fast path: documents of
 * nested maps and lists in block and flow style, keys and scalars of every flavour (plain words,
 * numbers in every core-schema notation, booleans, nulls, quoted with escapes, block scalars with
 * every header), comments and blank lines anywhere at any indentation, odd indentation, unicode,
 * now and then an anchor, alias, tag or merge key, and small edits that break the text here and
 * there. Most documents are valid YAML; many are not, and both kinds matter.
 */
import fc from 'fast-check';

/** A rendering choice made per node, so that shrinking can simplify it. */
interface Style {
  readonly flow: boolean;
  /** Extra indentation of a nested block collection (0 lets a list stand at its key's column). */
  readonly step: number;
  readonly comment: string | undefined;
  /** Lines (blank, spaces or comments) written before an entry or item, by indentation. */
  readonly before: readonly Filler[];
  readonly spaceAfterColon: string;
  readonly trailingComma: boolean;
  readonly flowSpaces: string;
  /** A flow collection spread over lines (the fast path leaves these to the library). */
  readonly flowMultiline: boolean;
}

interface Filler {
  readonly indent: number;
  readonly text: '' | 'comment' | 'spaces';
}

type GenNode =
  | { readonly k: 'map'; readonly entries: readonly (readonly [string, GenNode])[]; readonly style: Style }
  | { readonly k: 'list'; readonly items: readonly GenNode[]; readonly style: Style }
  | { readonly k: 'scalar'; readonly text: string; readonly style: Style }
  | { readonly k: 'empty'; readonly style: Style }
  | { readonly k: 'block'; readonly header: string; readonly lines: readonly string[]; readonly style: Style };

/** The arbitraries of one profile: `wild` adds what the fast path gives up on, and broken text. */
function arbitraries(wild: boolean) {
  const words = fc.constantFrom('a', 'b', 'from', 'to', 'path', 'x_y', 'key-1', 'Ünï', '日本', 'emoji😀', 'k', 'policy', 'allow', 'or', 'is');

  const numbers = fc.constantFrom(
    '0', '12', '-3', '+4', '0o17', '0o8', '0x1F', '0xg', '1_000', '1.10', '1.', '.5', '1e3', '1E-3', '-1.5e+10', '.inf', '-.Inf',
    '+.INF', '.nan', '.NaN', '1e999', '-1e999', '012', '0b1', '12345678901234567890', '1:20', '2001-12-14', '0.0', '-0', '+.5',
  );

  const typedWords = fc.constantFrom(
    'true', 'True', 'TRUE', 'false', 'False', 'yes', 'no', 'on', 'off', 'y', 'null', 'Null', 'NULL', '~', 'nul', 'tRUE',
  );

  const oddPlain = fc.constantFrom(
    'a b', 'x-y', 'http://h:8/p?q=1&r=2', 'https://app.example.com/a#frag', '-a', 'a:b', 'a#b', 'a #b', ':x', '?x', '-', '<<', '=', 'a,b',
    'x]', 'x}', 'a  b', 'é', '^/items/[0-9]+$', 'public, max-age=60', '10.0.0.1:8080', 'user@example.com', '@x', '`x', '%x', '*x', '&x',
    '!x', '|x', '>x', 'a: b', '[x', '{x', '- x', '? x', 'x  ', 'a\tb', 'x\ry',
  );

  const safePlain = fc.constantFrom(
    'a b', 'x-y', 'http://h:8/p?q=1&r=2', 'https://app.example.com/a#frag', '-a', 'a:b', 'a#b', ':x', '?x', '<<', '=', 'a,b', 'x]', 'x}',
    'a  b', 'é', '^/items/[0-9]+$', 'public, max-age=60', '10.0.0.1:8080', 'user@example.com', '--', '.', '-.5', '1e', 'tru', '0o', 'x!', 'a*b',
  );

  const plainText = fc.oneof(
    { weight: 8, arbitrary: words },
    { weight: 3, arbitrary: numbers },
    { weight: 2, arbitrary: typedWords },
    { weight: 1, arbitrary: wild ? oddPlain : safePlain },
  );

  const dqChar = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom('a', 'b', ' ', 'é', '日', '😀', ':', '#', "'", ',', '[', '}') },
    {
      weight: 3,
      arbitrary: fc.constantFrom(
        '\\n', '\\t', '\\"', '\\\\', '\\/', '\\x41', '\\u00e9', '\\U0001F600', '\\0', '\\a', '\\e', '\\N', '\\_', '\\L', '\\ ', '\\q', '\\x4',
      ),
    },
    { weight: wild ? 1 : 0, arbitrary: fc.constantFrom('\t', '\n', '\n  ', '\\\n  ', '\u0085', '\u2028', '\u0001', '\u007f') },
  );
  const doubleQuoted = fc.array(dqChar, { maxLength: 6 }).map((cs) => `"${cs.join('')}"`);
  const sqChar = wild
    ? fc.constantFrom('a', ' ', "''", '"', '\\', '#', ':', 'é', '\n', '\n\n  ')
    : fc.constantFrom('a', ' ', "''", '"', '\\', '#', ':', 'é');
  const singleQuoted = fc.array(sqChar, { maxLength: 6 }).map((cs) => `'${cs.join('')}'`);

  const scalarText = fc.oneof({ weight: 6, arbitrary: plainText }, { weight: 2, arbitrary: doubleQuoted }, { weight: 2, arbitrary: singleQuoted });

  /** Node properties and aliases, now and then. */
  const property = fc.oneof(
    { weight: 30, arbitrary: fc.constant('') },
    { weight: wild ? 1 : 0, arbitrary: fc.constantFrom('&a ', '!!str ', '!x ', '!!int ', '! ', '&b !!str ', '!!map ') },
  );

  const keyText = fc.oneof(
    { weight: 8, arbitrary: words },
    { weight: 2, arbitrary: numbers },
    { weight: 1, arbitrary: typedWords },
    { weight: 2, arbitrary: fc.oneof(doubleQuoted, singleQuoted).filter((q) => !q.includes('\n')) },
    { weight: 1, arbitrary: fc.constantFrom('k ', '"q"  ', 'a b', '-k', 'y'.repeat(1000), '"<<"', 'a#b', 'x.y', '/path') },
    {
      weight: wild ? 1 : 0,
      arbitrary: fc.constantFrom('<<', '? x', 'k:', 'x'.repeat(1030), '[a]', '{a: 1}', '*a', '&a k', '!!str k', '', '"a', "'a"),
    },
  );

  const filler = fc.record({ indent: fc.nat(8), text: fc.constantFrom<Filler['text']>('', 'comment', 'comment', 'spaces') });

  const style: fc.Arbitrary<Style> = fc.record({
    flow: fc.constantFrom(false, false, false, true),
    step: fc.constantFrom(2, 2, 2, 4, 1, 3, 0),
    comment: fc.option(fc.constantFrom('# c', '#', '# é: x', '#no-space', '## x', 'spaces'), { freq: 3 }).map((c) => c ?? undefined),
    before: fc.oneof({ weight: 6, arbitrary: fc.constant([]) }, { weight: 1, arbitrary: fc.array(filler, { minLength: 1, maxLength: 2 }) }),
    spaceAfterColon: fc.constantFrom(' ', ' ', ' ', '  ', ''),
    trailingComma: fc.boolean(),
    flowSpaces: fc.constantFrom('', ' ', '  '),
    flowMultiline: wild ? fc.constantFrom(false, false, false, false, true) : fc.constant(false),
  });

  const blockHeader = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom('|', '>', '|-', '>-', '|+', '>+', '| # c', '>+ # k', '|  ') },
    { weight: wild ? 1 : 0, arbitrary: fc.constantFrom('|2', '>1-', '|-2', '|#c', '|++') },
  );
  const blockContent = fc.constantFrom('text', 'more words', 'a: b', '- x', 'é😀', '# not a comment', '  indented');
  const blockLine = fc.oneof(
    { weight: 8, arbitrary: fc.constantFrom('text', 'more words', '', '', '  indented', '# not a comment', '   ', 'a: b', '- x', 'é😀', ' ') },
    { weight: wild ? 1 : 0, arbitrary: fc.constantFrom('\ttab', ' x') },
  );

  /** Block scalar lines: in the clean profile, at least one line of content first. */
  const blockLines = wild
    ? fc.array(blockLine, { maxLength: 4 })
    : fc.tuple(blockContent, fc.array(blockLine, { maxLength: 3 })).map(([first, rest]) => [first, ...rest]);

  const genNode: fc.Arbitrary<GenNode> = fc.letrec<{ node: GenNode; map: GenNode; list: GenNode; leaf: GenNode }>((tie) => ({
    node: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      { weight: 5, arbitrary: tie('leaf') },
      { weight: 2, arbitrary: tie('map') },
      { weight: 2, arbitrary: tie('list') },
    ),
    leaf: fc.oneof(
      { weight: 8, arbitrary: fc.record({ k: fc.constant('scalar' as const), text: fc.tuple(property, scalarText).map(([p, t]) => p + t), style }) },
      {
        weight: 1,
        arbitrary: fc.record({
          k: fc.constant('scalar' as const),
          text: wild ? fc.constantFrom('*a', '*b', '*nope', '"x"', "'y'") : fc.constantFrom('"x"', "'y'", '"<<"', "''"),
          style,
        }),
      },
      { weight: 2, arbitrary: fc.record({ k: fc.constant('empty' as const), style }) },
      { weight: 2, arbitrary: fc.record({ k: fc.constant('block' as const), header: blockHeader, lines: blockLines, style }) },
    ),
    map: fc.record({
      k: fc.constant('map' as const),
      entries: fc.array(fc.tuple(keyText, tie('node')), { minLength: 1, maxLength: 4 }),
      style,
    }),
    list: fc.record({ k: fc.constant('list' as const), items: fc.array(tie('node'), { minLength: 1, maxLength: 4 }), style }),
  })).node;
  return { genNode, filler };
}

/** Renders lines of filler (blank lines, spaces, comments) at their indentation. */
function fillers(before: readonly Filler[], out: string[]): void {
  for (const f of before) out.push(f.text === '' ? '' : f.text === 'spaces' ? ' '.repeat(f.indent) : `${' '.repeat(f.indent)}# note`);
}

function inlineComment(s: Style): string {
  if (s.comment === undefined) return '';
  if (s.comment === 'spaces') return '   ';
  return s.comment === '#no-space' ? '#no-space' : `  ${s.comment}`;
}

/** A node in flow style (used inside flow collections, or when the style asks for it). */
function flow(n: GenNode, indent: number): string {
  const sp = n.style.flowSpaces;
  const sep = n.style.flowMultiline ? `,\n${' '.repeat(indent + 1)}` : `,${sp || ' '}`;
  const close = n.style.trailingComma ? ',' : '';
  switch (n.k) {
    case 'scalar':
      return n.text;
    case 'empty':
      return '';
    case 'block':
      return `"${n.lines.join(' ')}"`;
    case 'list':
      return `[${sp}${n.items.map((i) => flow(i, indent + 1)).join(sep)}${close}${sp}]`;
    case 'map':
      return `{${sp}${n.entries.map(([k, v]) => `${k}:${n.style.spaceAfterColon || ' '}${flow(v, indent + 1)}`).join(sep)}${close}${sp}}`;
  }
}

/** Lines of a value written after `key:` or `- ` at `indent` (the column of the key or dash). */
function blockValue(n: GenNode, indent: number, out: string[], head: string, inList: boolean): void {
  const s = n.style;
  switch (n.k) {
    case 'scalar':
      out.push(`${head}${s.spaceAfterColon || ' '}${n.text}${inlineComment(s)}`);
      return;
    case 'empty':
      out.push(`${head}${s.spaceAfterColon === '  ' ? '  ' : ''}${inlineComment(s)}`);
      return;
    case 'block': {
      out.push(`${head} ${n.header}`);
      const pad = ' '.repeat(indent + Math.max(1, s.step));
      for (const l of n.lines) out.push(l === '' || l === '   ' ? l : pad + l);
      return;
    }
    case 'list':
    case 'map': {
      if (s.flow) {
        out.push(`${head} ${flow(n, indent)}${inlineComment(s)}`);
        return;
      }
      out.push(`${head}${inlineComment(s)}`);
      const step = n.k === 'list' && !inList ? s.step : Math.max(1, s.step);
      block(n, indent + step, out);
    }
  }
}

/** A block map or list whose entries start at column `indent`. */
function block(n: GenNode, indent: number, out: string[]): void {
  const pad = ' '.repeat(indent);
  if (n.k === 'map') {
    for (const [key, value] of n.entries) {
      fillers(value.style.before, out);
      blockValue(value, indent, out, `${pad}${key}:`, false);
    }
  } else if (n.k === 'list') {
    for (const item of n.items) {
      fillers(item.style.before, out);
      if (item.k === 'map' && !item.style.flow && item.style.step === 2) {
        // A compact map: its first key on the dash's line.
        const lines: string[] = [];
        block(item, indent + 2, lines);
        const first = lines.findIndex((l) => l.trim() !== '' && !l.trim().startsWith('#'));
        if (first >= 0) lines[first] = `${pad}- ${lines[first]!.slice(indent + 2)}`;
        out.push(...lines);
      } else if (item.k === 'list' && !item.style.flow && item.style.step === 2) {
        // A compact list: its first item on the dash's line (`- - x`).
        const lines: string[] = [];
        block(item, indent + 2, lines);
        const first = lines.findIndex((l) => l.trim() !== '' && !l.trim().startsWith('#'));
        if (first >= 0) lines[first] = `${pad}- ${lines[first]!.slice(indent + 2)}`;
        out.push(...lines);
      } else blockValue(item, indent, out, `${pad}-`, true);
    }
  } else blockValue(n, indent, out, pad.slice(0, -1) || '', false);
}

interface Edit {
  readonly at: number;
  readonly del: number;
  readonly insert: string;
}

const edit: fc.Arbitrary<Edit> = fc.record({
  at: fc.nat(),
  del: fc.constantFrom(0, 0, 1, 2),
  insert: fc.constantFrom(
    '', ' ', '\n', ':', '- ', '#', '"', "'", '[', ']', '{', '}', ',', '|', '>', '\t', '&a ', '*a', '!', '? ', '  ', '\n  ', '---\n', '\r',
    ' # c', '\n# c\n', '\n    # c', '-', '~', '""', '<<: ', ': ', '\n- ', '0', '.', '|-\n', '\n\n', 'x: ',
  ),
});

function applyEdits(text: string, edits: readonly Edit[]): string {
  let out = text;
  for (const e of edits) {
    const at = out.length === 0 ? 0 : e.at % (out.length + 1);
    out = out.slice(0, at) + e.insert + out.slice(at + e.del);
  }
  return out;
}

/** One of `texts` with one to three small edits (a character or a few inserted or deleted). */
export function edited(texts: readonly string[]): fc.Arbitrary<string> {
  return fc.tuple(fc.constantFrom(...texts), fc.array(edit, { minLength: 1, maxLength: 3 })).map(([t, e]) => applyEdits(t, e));
}

/** A whole document: usually a map, with now and then a BOM, CRLF line ends, `---`, or edits. */
function document(wild: boolean): fc.Arbitrary<string> {
  const { genNode, filler } = arbitraries(wild);
  return fc
    .record({
      root: fc.oneof({ weight: 6, arbitrary: genNode.filter((n) => n.k === 'map' || n.k === 'list') }, { weight: 1, arbitrary: genNode }),
      lead: fc.array(filler, { maxLength: 2 }),
      tail: fc.array(filler, { maxLength: 2 }),
      indent: fc.constantFrom(0, 0, 0, 0, 1, 2),
      finalNewline: fc.constantFrom(true, true, false),
      wrap: fc.oneof(
        { weight: 12, arbitrary: fc.constant('') },
        { weight: wild ? 1 : 0, arbitrary: fc.constantFrom('---\n', '\ufeff', 'crlf', '%YAML 1.2\n---\n', 'anchored', '--- # doc\n', '...\n') },
      ),
      edits: wild
        ? fc.oneof({ weight: 2, arbitrary: fc.constant([]) }, { weight: 1, arbitrary: fc.array(edit, { minLength: 1, maxLength: 2 }) })
        : fc.constant([]),
    })
    .map(({ root, lead, tail, indent, finalNewline, wrap, edits }) => {
      const out: string[] = [];
      fillers(lead, out);
      if (wrap === 'anchored') out.push('base: &a', '  k: v', 'b2: &b [1, 2]');
      if (root.k === 'map' || root.k === 'list') {
        if (root.style.flow) out.push(' '.repeat(indent) + flow(root, indent));
        else block(root, indent, out);
      } else if (root.k === 'scalar') out.push(root.text);
      else if (root.k === 'block') out.push(root.header, ...root.lines.map((l) => `  ${l}`));
      fillers(tail, out);
      let text = out.join('\n') + (finalNewline ? '\n' : '');
      if (wrap === 'crlf') text = text.replace(/\n/g, '\r\n');
      else if (wrap !== 'anchored') text = wrap + text;
      return applyEdits(text, edits);
    });
}

/** YAML documents of the shape configs have: mostly valid, a good share of them the fast path's to read. */
export const genCleanYaml = document(false);

/** YAML documents with everything the fast path gives up on, and broken text. */
export const genWildYaml = document(true);
