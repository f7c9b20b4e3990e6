import * as D from '../diagnostics/codes/settings.ts';
import type { Span } from '../source/source-file.ts';
import { spanAt, type LowerCtx } from './lower-ctx.ts';
import { hasControlChar, isHeaderName } from './values.ts';

/** No header is left to the rules. */
const noneLeft = (): boolean => false;

/**
 * Checks a header map (`set_response_headers`, `set_request_headers`): every name an HTTP token,
 * every value free of control characters (docs/security.md S28). Returns the valid entries.
 */
export function headerMap(
  map: Readonly<Record<string, string>>, path: string, cx: LowerCtx, leftToRules: (name: string) => boolean = noneLeft,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(map)) {
    if (leftToRules(name)) continue;
    if (!isHeaderName(name)) {
      const p = `${path}.${name}`;
      cx.r.report(D.InvalidHeaderName, keyAt(cx, p, path), { key: path, name }, p);
      continue;
    }
    if (hasControlChar(value)) {
      const p = `${path}.${name}`;
      cx.r.report(D.InvalidHeaderValue, spanAt(cx, p) ?? keyAt(cx, p, path), { key: path, name }, p);
      continue;
    }
    out[name] = value;
  }
  return out;
}

/** Where a header's name is written (its key), else its value, else the map: looked up for a report only. */
function keyAt(cx: LowerCtx, p: string, path: string): Span | undefined {
  return cx.index.get(p)?.keySpan ?? spanAt(cx, p) ?? spanAt(cx, path);
}
