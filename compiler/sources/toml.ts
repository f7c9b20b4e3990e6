/**
 * The TOML adapter: TOML 1.0 text to the format-neutral tree. @iarna/toml reads the values (and is
 * the authority on syntax); `locateToml` gives each key and value its span.
 *
 * Contract: a syntax error is reported at the offset @iarna/toml names (`toml-syntax`); redefining
 * a key is a syntax error in TOML, reported the same way. Dates and times become ISO 8601 strings
 * (`1979-05-27T07:32:00.000Z`, local dates `1979-05-27`). `inf`, `nan` and integers beyond 2^53 are
 * `number-not-representable`. Map entries keep the order they are written in. A tree is returned
 * only when the text was read without errors; otherwise `undefined`.
 */
import TOML from '@iarna/toml';
import { NestingTooDeep, NumberNotRepresentable, TomlSyntax } from '../diagnostics/codes/sources.ts';
import type { Reporter } from '../diagnostics/diagnostic.ts';
import { span, wholeSpan, type SourceFile, type Span } from '../source/source-file.ts';
import { listNode, mapNode, scalar, type MapEntry, type Node } from '../source/tree.ts';
import { MAX_DEPTH, tidyMessage } from './entries.ts';
import { locateToml, pathKey, type TomlLocation, type TomlPathSegment } from './toml-locate.ts';

/** Parses TOML text into a tree; reports problems to `r` and returns `undefined` after any error. */
export function parseToml(source: SourceFile, r: Reporter): Node | undefined {
  // A byte-order mark becomes a space: @iarna/toml refuses it, and offsets stay the same.
  const text = source.text.replace(/^\uFEFF/, ' ');
  let data: unknown;
  try {
    data = TOML.parse(text);
  } catch (e) {
    const pos = tomlErrorOffset(e);
    const at = pos === undefined ? wholeSpan(source) : span(source, pos, pos + 1);
    const message = e instanceof Error ? e.message : String(e);
    if (e instanceof RangeError) r.report(NestingTooDeep, at, { limit: MAX_DEPTH });
    else r.report(TomlSyntax, at, { problem: tidyMessage(message) });
    return undefined;
  }
  if (depthExceeds(data, MAX_DEPTH)) {
    r.report(NestingTooDeep, wholeSpan(source), { limit: MAX_DEPTH });
    return undefined;
  }
  const errorsBefore = r.errorCount;
  const converter = new Converter(source, locateToml(source), r);
  const root = converter.convert(data, [], { key: undefined, value: wholeSpan(source) });
  return r.errorCount > errorsBefore ? undefined : { ...root, span: wholeSpan(source) };
}

/** The offset an @iarna/toml syntax error names, if it is one. */
function tomlErrorOffset(e: unknown): number | undefined {
  if (typeof e !== 'object' || e === null) return undefined;
  const pos = (e as { pos?: unknown }).pos;
  return typeof pos === 'number' && Number.isInteger(pos) && pos >= 0 ? pos : undefined;
}

function depthExceeds(v: unknown, limit: number): boolean {
  if (limit < 0) return true;
  if (Array.isArray(v)) return v.some((x) => depthExceeds(x, limit - 1));
  if (typeof v === 'object' && v !== null && !(v instanceof Date)) return Object.values(v).some((x) => depthExceeds(x, limit - 1));
  return false;
}

/** Converts @iarna/toml's values into tree nodes, taking spans from the locator. */
class Converter {
  constructor(
    private readonly source: SourceFile,
    private readonly locations: ReadonlyMap<string, TomlLocation>,
    private readonly r: Reporter,
  ) {}

  /** `parent` locates the enclosing value: the fallback for anything the locator did not find. */
  convert(v: unknown, path: TomlPathSegment[], parent: TomlLocation): Node {
    const loc = this.locations.get(pathKey(path)) ?? parent;
    const sp = loc.value;
    if (v instanceof Date) return scalar(isoString(v), sp);
    if (Array.isArray(v)) return listNode(v.map((x, i) => this.convert(x, [...path, i], loc)), sp);
    if (typeof v === 'bigint') {
      if (v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER)) return scalar(Number(v), sp);
      this.r.report(NumberNotRepresentable, sp, { text: v.toString() });
      return scalar(null, sp);
    }
    if (typeof v === 'number') {
      if (Number.isFinite(v)) return scalar(v, sp);
      this.r.report(NumberNotRepresentable, sp, { text: this.source.text.slice(sp.start, sp.end) || String(v) });
      return scalar(null, sp);
    }
    if (typeof v === 'string' || typeof v === 'boolean') return scalar(v, sp);
    if (typeof v === 'object' && v !== null) {
      const entries: MapEntry[] = Object.keys(v).map((key) => {
        const childPath = [...path, key];
        const child = this.convert((v as Record<string, unknown>)[key], childPath, loc);
        const keySpan: Span = this.locations.get(pathKey(childPath))?.key ?? { ...child.span, end: child.span.start };
        return { key, keySpan, value: child };
      });
      // Object key order puts integer-like keys first; restore the written order.
      entries.sort((a, b) => a.keySpan.start - b.keySpan.start);
      return mapNode(entries, sp);
    }
    return scalar(null, sp);
  }
}

/**
 * A TOML date or time as ISO 8601 text. @iarna/toml's local date, time and date-time values override
 * `toISOString` to print their local form (no zone); offset date-times print in UTC.
 */
function isoString(d: Date): string {
  try {
    return d.toISOString();
  } catch {
    return String(d);
  }
}
