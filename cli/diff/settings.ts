/**
 * Settings changes: every changed path of `body.settings`, secrets shown only as "changed".
 */
import type { PlanSettings } from '../../compiler/plan/types.ts';
import type { ValueChange } from './types.ts';
import { diffValues } from './values.ts';

/**
 * Lists the changed settings from `a` to `b` as dotted paths (`server.timeoutReadMs`), sorted by
 * path segment. Secrets and PEM documents are redacted (see values.ts); a secret counts as changed
 * when its fingerprint or its source (`env:…`, `file:…`, inline) changed.
 */
export function diffSettings(a: PlanSettings, b: PlanSettings): ValueChange[] {
  return diffValues(a, b, '');
}
