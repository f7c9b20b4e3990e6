import { RouteToScheme } from '../../diagnostics/codes/routes.ts';
import { splitWeight } from '../../ir/lower-routes.ts';
import type { ValidationRule } from '../rule.ts';
import { spanOf } from '../rule.ts';
import { isTcpRoute, parseHostUrl, strField, toEntriesOf, toEntryPath, type ParsedUrl } from './helpers.ts';

/**
 * `route-to-scheme`: every `to` URL uses `http` or `https`, or `tcp` exactly when the route's
 * `from` is `tcp+https` (docs/running.md "TCP routes"). URLs that do not parse were reported by lowering.
 */
export const routeToScheme: ValidationRule = {
  reports: [RouteToScheme],
  check(input, r) {
    // Routes share upstream URLs: each is parsed once.
    const parsed = new Map<string, ParsedUrl | null>();
    const parse = (url: string): ParsedUrl | undefined => {
      let u = parsed.get(url);
      if (u === undefined) parsed.set(url, (u = parseHostUrl(url) ?? null));
      return u ?? undefined;
    };
    for (const route of input.routes) {
      if (strField(route.raw, 'from') === undefined) continue;
      const tcp = isTcpRoute(route);
      for (const e of toEntriesOf(route)) {
        const u = parse(splitWeight(e.text).url);
        if (!u) continue;
        const scheme = u.scheme;
        const ok = tcp ? scheme === 'tcp' : scheme === 'http' || scheme === 'https';
        if (!ok) {
          const expected = tcp ? '`tcp` because `from` is `tcp+https`' : scheme === 'tcp' ? '`http` or `https` (`tcp` needs a `tcp+https` `from`)' : '`http` or `https`';
          const path = toEntryPath(route, e);
          r.report(RouteToScheme, spanOf(input, path), { to: e.text, expected }, path);
        }
      }
    }
  },
};
