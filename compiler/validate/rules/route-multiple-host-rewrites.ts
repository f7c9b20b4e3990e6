import { RouteMultipleHostRewrites } from '../../diagnostics/codes/routes.ts';
import type { RouteInput } from '../rule.ts';
import type { ValidationRule } from '../rule.ts';
import { fieldKeySpan, fieldList, fieldPath, writtenOrder } from './helpers.ts';

const FIELDS = ['preserve_host_header', 'host_rewrite', 'host_rewrite_header', 'host_path_regex_rewrite_pattern', 'host_path_regex_rewrite_substitution'] as const;

/** Tells whether a host-rewrite field is "on": `preserve_host_header: true`, or any string. */
function isOn(route: RouteInput, field: string): boolean {
  const v = route.raw[field];
  return field === 'preserve_host_header' ? v === true : typeof v === 'string';
}

/**
 * `route-multiple-host-rewrites`: `host_rewrite`, `host_rewrite_header`, the path-regex pair and
 * `preserve_host_header` are mutually exclusive (docs/architecture.md §3 counts
 * `preserve_host_header` too). The two halves of the path-regex pair count as one option.
 * Reported at the second option written.
 */
export const routeMultipleHostRewrites: ValidationRule = {
  reports: [RouteMultipleHostRewrites],
  check(input, r) {
    for (const route of input.routes) {
      const on = writtenOrder(input, route, FIELDS).filter((f) => isOn(route, f));
      // One entry per option: the first-written half of the path-regex pair stands for the pair.
      const options: string[] = [];
      let pairSeen = false;
      for (const f of on) {
        if (f.startsWith('host_path_regex_rewrite_')) {
          if (pairSeen) continue;
          pairSeen = true;
        }
        options.push(f);
      }
      if (options.length < 2) continue;
      const second = options[1]!;
      r.report(RouteMultipleHostRewrites, fieldKeySpan(input, route, second), { fields: fieldList(options) }, fieldPath(route, second));
    }
  },
};
