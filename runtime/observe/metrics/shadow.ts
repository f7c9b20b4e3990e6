/**
 * The shadow plan's metrics (docs/observability.md "Metric reference"; docs/running.md "Shadow
 * plans"): `svc_shadow_decisions_total{route,outcome}`, the requests the candidate plan of
 * `svc run --shadow` decides differently from the enforced one; `svc_shadow_plan_loaded`, 1 while a
 * candidate is in service; `svc_shadow_last_load_success`, 0 when the last load of the candidate
 * failed (the last good one, or none, stays); `svc_shadow_plan_checksum_int64`; and
 * `svc_shadow_errors_total`, shadow decisions that failed (a bug in svc; the request was served).
 *
 * Registered in every process, so a dashboard reads 0 rather than nothing without `--shadow`. In a
 * cluster, the gauges aggregate by minimum (loaded only when every process has it) and the
 * counters add up (runtime/observe/metrics/cluster.ts).
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import { checksumInt } from './config.ts';

/** What the shadow part of a generation and the request path report to. */
export interface ShadowObserver {
  /** A request the candidate decides differently (`change`: `allow_to_deny`, … as request/shadow.ts). */
  differed(route: string, change: string): void;
  /** A shadow decision threw (a bug in svc). */
  failed(): void;
  /** A load of the candidate ended: `ok` false when it failed (whatever stays in service). */
  attempted(ok: boolean): void;
  /** The candidate in service changed: its checksum, or null for none. */
  inService(checksum: string | null): void;
}

/** Registers the shadow metrics in `registry`. */
export function registerShadow(registry: Registry): ShadowObserver {
  const registers = [registry];
  const decisions = new Counter({
    name: 'svc_shadow_decisions_total',
    help: 'requests the shadow (candidate) plan decides differently from the enforced plan, by the enforced route (else the candidate\'s) and how it differs: allow_to_deny, deny_to_allow, outcome_changed, route_changed, upstream_changed',
    labelNames: ['route', 'outcome'],
    registers,
  });
  const errors = new Counter({ name: 'svc_shadow_errors_total', help: 'shadow decisions that failed (a bug in svc): the request was served by the enforced decision alone', registers });
  const loaded = new Gauge({ name: 'svc_shadow_plan_loaded', help: '1 while a shadow plan is in service beside the enforced plan (svc run --shadow), else 0', registers, aggregator: 'min' });
  const success = new Gauge({ name: 'svc_shadow_last_load_success', help: '1 when the last load of the shadow plan succeeded (or none is configured), 0 when it failed: the last good shadow, or none, stays', registers, aggregator: 'min' });
  const checksum = new Gauge({ name: 'svc_shadow_plan_checksum_int64', help: 'the first 48 bits of the SHA-256 checksum of the shadow plan in service (0: none)', registers, aggregator: 'max' });
  loaded.set(0);
  success.set(1);
  checksum.set(0);
  return {
    differed: (route, change) => decisions.inc({ route, outcome: change }),
    failed: () => errors.inc(),
    attempted: (ok) => success.set(ok ? 1 : 0),
    inService: (c) => {
      loaded.set(c === null ? 0 : 1);
      checksum.set(c === null ? 0 : checksumInt(c));
    },
  };
}
