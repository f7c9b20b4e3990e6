/**
 * The environment adapter: one variable per setting, named as the key in upper case
 * (`cookie_secret` → `COOKIE_SECRET`), read into one layer of the format-neutral tree.
 *
 * Each variable is its own source, `env:NAME` (rendered without line and column). How its text is
 * read depends on the setting's kind, which the settings table decides (`EnvKeySpec`):
 * - `scalar`: the text as an untyped string (the schema stage coerces `"true"`, `"30"`);
 * - `list`: comma-separated items, trimmed, empty items dropped (`openid, email`), or a JSON
 *   (or YAML flow) array when the text starts with `[`;
 * - `map`: comma-separated `Name:value` pairs split at the first `:` (`X-Frame-Options:DENY`), a
 *   JSON object when the text starts with `{`, or a YAML map when it spans several lines;
 * - `document` (`ROUTES`, `POLICY`): YAML or JSON text, plain or base64 (see document.ts). Problems
 *   inside are located in `env:ROUTES (base64):3:5` or `env:ROUTES:3:5`.
 * Variables that are unset, empty or only white space are ignored (as if unset), so an empty
 * `FOO=` in a container manifest never overrides the file. Unknown variables are ignored.
 */
import { EnvMapItemInvalid, EnvValueWrongShape } from '../diagnostics/codes/sources.ts';
import type { Reporter } from '../diagnostics/diagnostic.ts';
import { sourceFile, span, wholeSpan, type SourceFile } from '../source/source-file.ts';
import { listNode, mapNode, scalar, type ListNode, type MapEntry, type MapNode, type Node } from '../source/tree.ts';
import { parseDocumentValue } from './document.ts';
import { EntryList, describeNode } from './entries.ts';
import { parseYaml } from './yaml.ts';

/** How one setting is read from its environment variable. */
export interface EnvKeySpec {
  /** The config key; the variable is this in upper case. */
  readonly key: string;
  readonly kind: 'scalar' | 'list' | 'map' | 'document';
}

/** The source every env layer's own span points at (the layer as a whole has no text). */
const ENV_LAYER = sourceFile('env', '', true);

/**
 * Reads the environment variables of `specs` into a map layer, in the order of `specs`. Each entry's
 * key span is the variable (`env:NAME`). Reports problems to `r`; a variable with an error is left
 * out of the layer.
 */
export function envLayer(env: Readonly<Record<string, string | undefined>>, specs: readonly EnvKeySpec[], r: Reporter): MapNode {
  const entries: MapEntry[] = [];
  for (const spec of specs) {
    const name = spec.key.toUpperCase();
    const text = Object.prototype.hasOwnProperty.call(env, name) ? env[name] : undefined;
    if (text === undefined || text.trim() === '') continue;
    const source = sourceFile(`env:${name}`, text, true);
    const value = readVariable(source, spec.kind, r);
    if (value !== undefined) entries.push({ key: spec.key, keySpan: wholeSpan(source), value });
  }
  return mapNode(entries, wholeSpan(ENV_LAYER));
}

function readVariable(source: SourceFile, kind: EnvKeySpec['kind'], r: Reporter): Node | undefined {
  switch (kind) {
    case 'scalar':
      return scalar(source.text, wholeSpan(source), true);
    case 'list':
      return parseListText(source, r);
    case 'map':
      return parseMapText(source, r);
    case 'document': {
      const name = source.name.replace(/^env:/, '');
      return parseDocumentValue(
        { what: `\`${name}\``, plain: sourceFile(source.name, source.text, false), base64Name: `${source.name} (base64)`, whole: wholeSpan(source) },
        r,
      );
    }
  }
}

/** The name a variable's source is shown with in messages (`` `IDP_SCOPES` ``). */
function variableName(source: SourceFile): string {
  return `\`${source.name.replace(/^env:/, '')}\``;
}

/**
 * Reads list text: comma-separated items (trimmed, empty items dropped; each item an untyped
 * scalar with its own span), or, when the text starts with `[`, a JSON (or YAML flow) array (text
 * starting with `{` is read as JSON too, and reported as not a list).
 * Returns `undefined` after reporting a problem.
 */
export function parseListText(source: SourceFile, r: Reporter): ListNode | undefined {
  const text = source.text;
  // `{` cannot start a sensible list item: read it as JSON too, to report a map given for a list.
  if (/^\s*[[{]/.test(text)) {
    const node = parseStructured(source, r);
    if (node === undefined) return undefined;
    if (node.kind !== 'list') {
      r.report(EnvValueWrongShape, wholeSpan(source), { variable: variableName(source), expected: 'a list', got: describeNode(node) });
      return undefined;
    }
    return node;
  }
  const items: Node[] = [];
  for (const part of splitTrimmed(text, ',', 0, text.length)) {
    if (part.start < part.end) items.push(scalar(text.slice(part.start, part.end), span(source, part.start, part.end), true));
  }
  return listNode(items, wholeSpan(source));
}

/**
 * Reads map text: comma-separated `Name:value` pairs split at the first `:` (names and values
 * trimmed, values untyped scalars), or a JSON object (text starting with `{`), or a YAML map
 * (text spanning several lines). Returns `undefined` after reporting a problem.
 */
export function parseMapText(source: SourceFile, r: Reporter): MapNode | undefined {
  const text = source.text;
  if (text.trimStart().startsWith('{') || text.trim().includes('\n')) {
    const node = parseStructured(source, r);
    if (node === undefined) return undefined;
    if (node.kind !== 'map') {
      r.report(EnvValueWrongShape, wholeSpan(source), { variable: variableName(source), expected: 'a map', got: describeNode(node) });
      return undefined;
    }
    return node;
  }
  const entries = new EntryList(r);
  let ok = true;
  for (const part of splitTrimmed(text, ',', 0, text.length)) {
    if (part.start === part.end) continue;
    const colon = text.indexOf(':', part.start);
    const item = text.slice(part.start, part.end);
    const [name] = colon >= 0 && colon < part.end ? splitTrimmed(text, '', part.start, colon) : [];
    if (name === undefined || name.start === name.end) {
      r.report(EnvMapItemInvalid, span(source, part.start, part.end), { variable: variableName(source), item });
      ok = false;
      continue;
    }
    const [value] = splitTrimmed(text, '', colon + 1, part.end);
    const vs = value ?? { start: part.end, end: part.end };
    if (!entries.add(text.slice(name.start, name.end), span(source, name.start, name.end), scalar(text.slice(vs.start, vs.end), span(source, vs.start, vs.end), true))) ok = false;
  }
  return ok ? mapNode(entries.entries, wholeSpan(source)) : undefined;
}

/** JSON or YAML text in a list or map variable, parsed in place (spans index the variable's text). */
function parseStructured(source: SourceFile, r: Reporter): Node | undefined {
  const errorsBefore = r.errorCount;
  const node = parseYaml(source, r);
  return node === undefined || r.errorCount > errorsBefore ? undefined : node;
}

/**
 * Splits `text[from, to)` at `sep` (no split for `''`) into white-space-trimmed ranges.
 */
function splitTrimmed(text: string, sep: string, from: number, to: number): { start: number; end: number }[] {
  const out: { start: number; end: number }[] = [];
  let start = from;
  for (;;) {
    const at = sep === '' ? -1 : text.indexOf(sep, start);
    const end = at < 0 || at >= to ? to : at;
    let s = start;
    let e = end;
    while (s < e && /\s/.test(text[s]!)) s++;
    while (e > s && /\s/.test(text[e - 1]!)) e--;
    out.push({ start: s, end: e });
    if (end === to) return out;
    start = end + 1;
  }
}
