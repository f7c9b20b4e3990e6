import * as D from '../diagnostics/codes/settings.ts';
import { spanAt, type LowerCtx } from './lower-ctx.ts';
import { hasControlChar, isHeaderName } from './values.ts';

/**
 * Checks a header map (`set_response_headers`, `set_request_headers`): every name an HTTP token,
 * every value free of control characters (docs/security.md S28). Returns the valid entries.
 */
export function headerMap(
  map: Readonly<Record<string, string>>, path: string, cx: LowerCtx, leftToRules: (name: string) => boolean = () => false,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(map)) {
    if (leftToRules(name)) continue;
    const p = `${path}.${name}`;
    const at = cx.index.get(p)?.keySpan ?? spanAt(cx, p) ?? spanAt(cx, path);
    if (!isHeaderName(name)) {
      cx.r.report(D.InvalidHeaderName, at, { key: path, name }, p);
      continue;
    }
    if (hasControlChar(value)) {
      cx.r.report(D.InvalidHeaderValue, spanAt(cx, p) ?? at, { key: path, name }, p);
      continue;
    }
    out[name] = value;
  }
  return out;
}
