import { RegexUnescapedDot } from '../../diagnostics/codes/routes.ts';
import type { ValidationRule } from '../rule.ts';
import { fieldPath, fieldSpan, strField } from './helpers.ts';
import { re2Problem, REGEX_FIELDS } from './route-invalid-regex.ts';

const WORD = /[A-Za-z0-9]/;

/**
 * Tells whether a regex source has a `.` that is neither escaped nor inside a character class and
 * stands between two letters or digits (`example.com`, `v1.json`): such a dot was almost surely
 * meant literally, and matching any character there widens the match (docs/security.md S29). A dot
 * followed by a quantifier (`.*`) or next to punctuation is taken as intended.
 */
export function hasSuspiciousDot(source: string): boolean {
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const c = source[i]!;
    if (c === '\\') {
      i++; // the escaped character is a literal
      continue;
    }
    if (inClass) {
      if (c === ']') inClass = false;
      continue;
    }
    if (c === '[') {
      inClass = true;
      if (source[i + 1] === '^') i++;
      if (source[i + 1] === ']') i++; // a leading `]` is a literal member
      continue;
    }
    if (c === '.' && i > 0 && WORD.test(source[i - 1]!) && WORD.test(source[i + 1] ?? '')) return true;
  }
  return false;
}

/** `regex-unescaped-dot` (warning): a route regex with an unescaped `.` between letters. */
export const regexUnescapedDot: ValidationRule = {
  reports: [RegexUnescapedDot],
  check(input, r) {
    for (const route of input.routes) {
      for (const field of REGEX_FIELDS) {
        const src = strField(route.raw, field);
        // An invalid regex is reported by route-invalid-regex; linting it as well would be noise.
        if (src === undefined || re2Problem(src) !== undefined || !hasSuspiciousDot(src)) continue;
        r.report(RegexUnescapedDot, fieldSpan(input, route, field), { field, value: src }, fieldPath(route, field));
      }
    }
  },
};
