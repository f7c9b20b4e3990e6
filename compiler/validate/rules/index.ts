import type { ValidationRule } from '../rule.ts';

/** Every validation rule, run in this order (all of them run; order only affects report order). */
export const RULES: readonly ValidationRule[] = [];
