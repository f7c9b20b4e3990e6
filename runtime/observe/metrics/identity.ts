/**
 * The identity manager metrics (docs/observability.md "Metric reference") (`svc_identity_manager_*`), read at each scrape from the
 * identity manager's {@link IdentityManagerFigures} (runtime/core/identity-figures.ts) through a provider.
 * Timestamps are exported in seconds since the epoch (0: never); counters are the manager's totals.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { IdentityManagerFigures } from '../../core/identity-figures.ts';

type NumberKey = { [K in keyof IdentityManagerFigures]: IdentityManagerFigures[K] extends number ? K : never }[keyof IdentityManagerFigures];

const TIMESTAMPS: readonly (readonly [string, NumberKey, string])[] = [
  ['last_refresh_timestamp', 'lastRefreshMs', 'when the last refresh run ended'],
  ['session_refresh_success_timestamp', 'sessionRefreshSuccessMs', 'when a session refresh last succeeded'],
  ['session_refresh_error_timestamp', 'sessionRefreshErrorMs', 'when a session refresh last failed'],
  ['user_refresh_success_timestamp', 'userRefreshSuccessMs', 'when a user refresh last succeeded'],
  ['user_refresh_error_timestamp', 'userRefreshErrorMs', 'when a user refresh last failed'],
  ['user_group_refresh_success_timestamp', 'userGroupRefreshSuccessMs', 'when a user group refresh last succeeded'],
  ['user_group_refresh_error_timestamp', 'userGroupRefreshErrorMs', 'when a user group refresh last failed'],
];

// docs/observability.md names these counters without `_total`; prom-client (and the exposition format) adds
// nothing, and promtool wants counters to end in `_total`, so the exported names add it.
const COUNTERS: readonly (readonly [string, NumberKey, string])[] = [
  ['session_refresh_success_total', 'sessionRefreshSuccess', 'session refreshes that succeeded'],
  ['session_refresh_errors_total', 'sessionRefreshError', 'session refreshes that failed'],
  ['user_refresh_success_total', 'userRefreshSuccess', 'user refreshes that succeeded'],
  ['user_refresh_errors_total', 'userRefreshError', 'user refreshes that failed'],
  ['user_group_refresh_success_total', 'userGroupRefreshSuccess', 'user group refreshes that succeeded'],
  ['user_group_refresh_errors_total', 'userGroupRefreshError', 'user group refreshes that failed'],
];

/** Registers the identity manager metrics, read from `figures` at each scrape (undefined reads as "never", 0). */
export function registerIdentityManager(registry: Registry, figures: () => IdentityManagerFigures | undefined): void {
  const registers = [registry];
  for (const [name, key, help] of TIMESTAMPS)
    new Gauge({
      name: `svc_identity_manager_${name}`,
      help: `${help}, in seconds since the epoch (0: never)`,
      registers,
      collect() {
        this.reset();
        const f = figures();
        if (f) this.set(f[key] / 1000);
      },
    });
  for (const [name, key, help] of COUNTERS)
    new Counter({
      name: `svc_identity_manager_${name}`,
      help,
      registers,
      collect() {
        this.reset();
        const f = figures();
        if (f) this.inc(f[key]);
      },
    });
}
