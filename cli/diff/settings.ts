/**
 * Settings changes: every changed path of `body.settings`, named by its config key, values in
 * config units, secrets shown only as "changed".
 */
import type { PlanSettings } from '../../compiler/plan/types.ts';
import { configPathOf, inConfigUnits, SETTING_KEYS } from './config-keys.ts';
import type { ValueChange } from './types.ts';
import { diffValues } from './values.ts';

/**
 * Lists the changed settings from `a` to `b`, sorted by config key: `path` is the plan path
 * (`cookie.expireMs`), `key` the config key (`cookie_expire`), and durations and addresses are
 * compared and shown as the config writes them (`14h`, `:443`; config-keys.ts). Secrets and PEM
 * documents are redacted (see values.ts); a secret counts as changed when its fingerprint or its
 * source (`env:…`, `file:…`, inline) changed.
 */
export function diffSettings(a: PlanSettings, b: PlanSettings): ValueChange[] {
  return diffValues(inConfigUnits(SETTING_KEYS, a), inConfigUnits(SETTING_KEYS, b), '').map((c) => ({ ...c, key: configPathOf(SETTING_KEYS, c.path) }))
    .sort((x, y) => (x.key < y.key ? -1 : x.key > y.key ? 1 : 0));
}
