import { DirectoryRefreshOutOfRange } from '../../diagnostics/codes/settings.ts';
import type { ValidationRule } from '../rule.ts';
import { spanOf } from '../rule.ts';

/** The shortest accepted values (ms): below them the identity manager would spin or never finish a run. */
const MINIMUM_MS: Readonly<Record<string, readonly [number, string]>> = {
  idp_refresh_directory_interval: [1_000, '`1s`'],
  idp_refresh_directory_timeout: [1_000, '`1s`'],
};

/** `directory-refresh-out-of-range`: the identity manager's interval and timeout below `1s` (including `0`). */
export const directoryRefreshOutOfRange: ValidationRule = {
  reports: [DirectoryRefreshOutOfRange],
  check(input, r) {
    const idp = input.body.settings.idp;
    const values: Record<string, number> = { idp_refresh_directory_interval: idp.refreshDirectoryIntervalMs, idp_refresh_directory_timeout: idp.refreshDirectoryTimeoutMs };
    for (const [key, [min, minimum]] of Object.entries(MINIMUM_MS)) {
      const raw = input.config[key];
      if (raw === undefined || values[key]! >= min) continue;
      r.report(DirectoryRefreshOutOfRange, spanOf(input, key), { key, value: String(raw), minimum }, key);
    }
  },
};
