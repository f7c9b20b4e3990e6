/**
 * The "document" rule shared by environment variables (`ROUTES`, `POLICY`) and `.properties` values
 * (`routes=[{"from": …}]`): a value that holds a whole YAML or JSON document, written either as
 * plain text or as standard base64 of it.
 *
 * Deciding base64 or plain: the value is base64 when, with white space (line wrapping) removed, it
 * uses only the standard base64 alphabet with correct padding, re-encodes to itself, and decodes to
 * valid UTF-8 text without control characters other than tab and line breaks. Plain YAML or JSON of
 * routes can never pass all of these (it needs `-`, `:`, `[` or `{`), and the bytes of random
 * base64-looking words are almost never valid, printable UTF-8.
 */
import { DocumentValueInvalid } from '../diagnostics/codes/sources.ts';
import type { Reporter } from '../diagnostics/diagnostic.ts';
import { sourceFile, type SourceFile, type Span } from '../source/source-file.ts';
import type { Node } from '../source/tree.ts';
import { describeNode } from './entries.ts';
import { parseYaml } from './yaml.ts';

/** Where a document value was written, and how to name its decoded form. */
export interface DocumentSlot {
  /** How the value is named in messages: `` `ROUTES` ``, `` `routes` ``. */
  readonly what: string;
  /** The value as written; spans of plain YAML or JSON text index into it. */
  readonly plain: SourceFile;
  /** The name of the decoded source when the value is base64: `env:ROUTES (base64)`. */
  readonly base64Name: string;
  /** Where to report a value that is neither form. */
  readonly whole: Span;
}

/**
 * Parses a document value: base64 of YAML/JSON or plain YAML/JSON text, to a list or a map. Problems
 * inside the document are located in the decoded or plain text; a value that is not a list or a
 * map is `document-value-invalid`. Returns `undefined` after any error.
 */
export function parseDocumentValue(slot: DocumentSlot, r: Reporter): Node | undefined {
  const decoded = decodeBase64Text(slot.plain.text);
  const source = decoded === undefined ? slot.plain : sourceFile(slot.base64Name, decoded, false);
  const errorsBefore = r.errorCount;
  const node = parseYaml(source, r);
  if (node === undefined || r.errorCount > errorsBefore) return undefined;
  if (node.kind === 'scalar') {
    const got = decoded === undefined && typeof node.value === 'string' ? 'plain text' : describeNode(node);
    r.report(DocumentValueInvalid, slot.whole, { what: slot.what, got });
    return undefined;
  }
  return node;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** The text a strict, standard base64 value decodes to; `undefined` if the value is not that. */
export function decodeBase64Text(value: string): string | undefined {
  const compact = value.replace(/[ \t\r\n]+/g, '');
  if (compact === '' || compact.length % 4 !== 0 || !BASE64.test(compact)) return undefined;
  const bytes = Buffer.from(compact, 'base64');
  if (bytes.toString('base64') !== compact) return undefined; // non-canonical padding bits
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    return undefined;
  }
  return /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(text) ? undefined : text;
}
