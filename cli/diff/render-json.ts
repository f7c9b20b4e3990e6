/**
 * The JSON form of a plan diff (`svc diff --format json`), documented in docs/diff.md.
 */
import type { PlanDiff } from './types.ts';

/** The version of the JSON shape; bumped on any incompatible change (2: a value change has `key`, values in config units). */
export const DIFF_FORMAT_VERSION = 2;

/**
 * Prints a diff as pretty JSON (two-space indent, trailing newline) with a fixed key order:
 * `formatVersion`, `equal`, `old`, `new`, `access`, `flags`, `routes`, `settings`, `exact`
 * when the exact check ran, and `replay` with `--replay`. Values shown
 * from the plans have sorted keys (values.ts), so equal diffs print equal bytes.
 */
export function renderDiffJson(diff: PlanDiff): string {
  const doc = {
    formatVersion: DIFF_FORMAT_VERSION,
    equal: diff.equal,
    old: diff.old,
    new: diff.new,
    access: diff.access,
    flags: diff.flags,
    routes: diff.routes,
    settings: diff.settings,
    // Added in format version 2 without a bump: readers of version 2 ignore unknown keys.
    ...(diff.exact ? { exact: diff.exact } : {}),
    // Added like `exact`: `svc diff --replay` only.
    ...(diff.replay ? { replay: diff.replay } : {}),
  };
  return `${JSON.stringify(doc, null, 2)}\n`;
}
