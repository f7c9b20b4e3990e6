/**
 * The config-file dispatcher: chooses the format adapter by the file's extension and checks that
 * the file holds a map of settings. The caller reads the file (through its injected file system)
 * and passes the text; nothing here touches the disk.
 */
import { ConfigFormatUnknown, ConfigNotAMap } from '../diagnostics/codes/sources.ts';
import type { Reporter } from '../diagnostics/diagnostic.ts';
import { wholeSpan, type SourceFile } from '../source/source-file.ts';
import type { MapNode, Node } from '../source/tree.ts';
import { describeNode } from './entries.ts';
import { parseJson } from './json.ts';
import { parseProperties } from './properties.ts';
import { parseToml } from './toml.ts';
import { parseYaml } from './yaml.ts';

type Adapter = (source: SourceFile, r: Reporter) => Node | undefined;

/** Config file extensions and their adapters (matched case-insensitively). */
export const CONFIG_FORMATS: Readonly<Record<string, Adapter>> = {
  '.yaml': parseYaml,
  '.yml': parseYaml,
  '.json': parseJson,
  '.toml': parseToml,
  '.properties': parseProperties,
  '.props': parseProperties,
};

/**
 * Parses a config file's text with the adapter its extension names. Reports an unknown extension
 * (`config-format-unknown`, at the whole file) and a top level that is not a map
 * (`config-not-a-map`). Returns the top-level map, or `undefined` after any error.
 */
export function parseConfigText(source: SourceFile, r: Reporter): MapNode | undefined {
  const adapter = adapterFor(source.name);
  if (adapter === undefined) {
    r.report(ConfigFormatUnknown, wholeSpan(source), { file: source.name });
    return undefined;
  }
  const errorsBefore = r.errorCount;
  const node = adapter(source, r);
  if (node === undefined || r.errorCount > errorsBefore) return undefined;
  if (node.kind !== 'map') {
    r.report(ConfigNotAMap, node.span, { got: describeNode(node) });
    return undefined;
  }
  return node;
}

/** The adapter for a file name, by its extension; `undefined` when the extension is not supported. */
export function adapterFor(fileName: string): Adapter | undefined {
  const base = fileName.slice(Math.max(fileName.lastIndexOf('/'), fileName.lastIndexOf('\\')) + 1);
  const dot = base.lastIndexOf('.');
  if (dot < 0) return undefined;
  const ext = base.slice(dot).toLowerCase();
  return Object.prototype.hasOwnProperty.call(CONFIG_FORMATS, ext) ? CONFIG_FORMATS[ext] : undefined;
}
