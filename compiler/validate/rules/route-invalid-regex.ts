import { RE2JS } from 're2js';
import { RouteInvalidRegex } from '../../diagnostics/codes/routes.ts';
import type { ValidationRule } from '../rule.ts';
import { fieldPath, fieldSpan, strField } from './helpers.ts';

/** The route fields that hold a regular expression (RE2 syntax). */
export const REGEX_FIELDS = ['regex', 'regex_rewrite_pattern', 'host_path_regex_rewrite_pattern'] as const;

/**
 * Compiles `source` as RE2 (docs/architecture.md §3: no backreferences, no look-around). Returns undefined
 * when it compiles, else the parser's reason without its generic prefix. Answers are remembered
 * (two rules ask about every pattern, and reloads ask again); the memory is bounded.
 */
export function re2Problem(source: string): string | undefined {
  if (checked.has(source)) return checked.get(source);
  let problem: string | undefined;
  try {
    RE2JS.compile(source);
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    problem = msg.replace(/^error parsing regexp:\s*/, '');
  }
  if (checked.size >= MAX_REMEMBERED) checked.clear();
  checked.set(source, problem);
  return problem;
}
const MAX_REMEMBERED = 50_000;
const checked = new Map<string, string | undefined>();

/** `route-invalid-regex`: `regex` and the two rewrite patterns must be valid RE2. */
export const routeInvalidRegex: ValidationRule = {
  reports: [RouteInvalidRegex],
  check(input, r) {
    for (const route of input.routes) {
      for (const field of REGEX_FIELDS) {
        const src = strField(route.raw, field);
        if (src === undefined) continue;
        const problem = re2Problem(src);
        if (problem !== undefined) r.report(RouteInvalidRegex, fieldSpan(input, route, field), { field, problem }, fieldPath(route, field));
      }
    }
  },
};
