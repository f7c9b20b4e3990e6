/**
 * The `service` label of svc's logs, metrics and traces (docs/observability.md, docs/tracing.md): `svc` in all-in-one mode
 * (`services: all`), `svc-<service>` in distributed mode (`svc-proxy`, `svc-authorize`,
 * `svc-authenticate`, `svc-databroker`). One function so that the three always agree.
 */
import type { PlanSettings } from '../../compiler/plan/types.ts';

/** The `service` label of a process serving a plan with these settings. */
export function serviceLabel(settings: Pick<PlanSettings, 'mode'>): string {
  return settings.mode.services === 'all' ? 'svc' : `svc-${settings.mode.services}`;
}
