import { RouteIncompletePair } from '../../diagnostics/codes/routes.ts';
import type { Reporter } from '../../diagnostics/diagnostic.ts';
import type { RouteInput, RuleInput, ValidationRule } from '../rule.ts';
import { fieldKeySpan, fieldPath, isGiven } from './helpers.ts';

/**
 * Field pairs that only work together. Each side lists its alternative spellings (inline and
 * `_file` forms); the first is the one named when the side is missing, unless the present side
 * uses the `_file` form, in which case the missing side is named in that form too.
 */
const PAIRS: readonly (readonly [readonly string[], readonly string[]])[] = [
  [['regex_rewrite_pattern'], ['regex_rewrite_substitution']],
  [['host_path_regex_rewrite_pattern'], ['host_path_regex_rewrite_substitution']],
  [['tls_client_cert', 'tls_client_cert_file'], ['tls_client_key', 'tls_client_key_file']],
];

/** The first field of `fields` the route gives, if any: an empty substitution (`""`) counts, it deletes the match. */
function firstGiven(route: RouteInput, fields: readonly string[]): string | undefined {
  for (const f of fields) if (f.endsWith('_substitution') ? typeof route.raw[f] === 'string' : isGiven(route.raw, f)) return f;
  return undefined;
}

/** Reports the route's side `mine` of a pair when it gives it without a field of `other`. */
function checkSide(input: RuleInput, r: Reporter, route: RouteInput, mine: readonly string[], other: readonly string[]): void {
  const set = firstGiven(route, mine);
  if (set === undefined || firstGiven(route, other) !== undefined) return;
  const missing = set.endsWith('_file') ? (other.find((f) => f.endsWith('_file')) ?? other[0]!) : other[0]!;
  r.report(RouteIncompletePair, fieldKeySpan(input, route, set), { set, missing }, fieldPath(route, set));
}

/**
 * `route-incomplete-pair`: one half of a pair without the other (`regex_rewrite_pattern` and
 * `_substitution`, the host path-regex pair, the upstream client certificate and key). Reported at
 * the half that is there. An empty substitution (`""`) counts as given: it deletes the match.
 */
export const routeIncompletePair: ValidationRule = {
  reports: [RouteIncompletePair],
  check(input, r) {
    for (const route of input.routes) {
      for (const [a, b] of PAIRS) {
        checkSide(input, r, route, a, b);
        checkSide(input, r, route, b, a);
      }
    }
  },
};
