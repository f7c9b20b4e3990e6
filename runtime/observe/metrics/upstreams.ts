/**
 * Per-route upstream metrics (a route's `name` names its cluster, `dp_cluster_name`: docs/observability.md "Metric reference"), and
 * the `http_client_*` metrics, both fed by the end of each upstream exchange:
 * - `svc_upstream_requests_total` / `svc_upstream_errors_total` by route and upstream address;
 * - `svc_upstream_healthy`, `svc_upstream_ejected` and `svc_upstream_ejections_total`, read at each
 *   scrape from the upstream sets' snapshots (runtime/upstream/set.ts). With `--workers`, each worker
 *   checks and ejects on its own: the aggregated scrape shows an upstream healthy only when every
 *   worker sees it healthy (min), ejected when one has ejected it (max), and the sum of ejections.
 * Labels are bounded by the plan: route label (labels.ts) and the configured upstream `host:port`.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Route } from '../../../compiler/plan/types.ts';
import { upstreamAddress } from '../../upstream/address.ts';
import type { UpstreamSnapshot } from '../../upstream/types.ts';
import type { HttpMetrics } from './http.ts';
import { methodLabel, routeLabel, statusClass } from './labels.ts';

/** How one upstream exchange ended (runtime/proxy/handler.ts `UpstreamOutcome`). */
export interface ExchangeOutcome {
  readonly status?: number;
  readonly error?: 'connect' | 'timeout' | 'reset';
}

/** Told the end of every upstream exchange (runtime/generation/forward-provisioner.ts calls it from the balancer's `done`). */
export interface UpstreamObserver {
  exchange(route: Route, upstreamIndex: number, method: string | undefined, durationMs: number, outcome: ExchangeOutcome): void;
}

/** The upstream sets of the generation in service, for the health figures. */
export type UpstreamSnapshots = () => Iterable<{ readonly route: Route; readonly upstreams: readonly UpstreamSnapshot[] }>;

/** Registers the per-route upstream metrics; returns the observer of exchanges. */
export function registerUpstreams(registry: Registry, client: HttpMetrics, snapshots: UpstreamSnapshots | undefined): UpstreamObserver {
  const registers = [registry];
  const requests = new Counter({ name: 'svc_upstream_requests_total', help: 'requests sent to an upstream, by route and upstream address', labelNames: ['route', 'upstream'], registers });
  const errors = new Counter({
    name: 'svc_upstream_errors_total',
    help: 'upstream exchanges that failed, by route, upstream address and kind (connect, timeout, reset, 5xx)',
    labelNames: ['route', 'upstream', 'kind'],
    registers,
  });
  if (snapshots) {
    const each = (set: (labels: { route: string; upstream: string }, s: UpstreamSnapshot) => void) => {
      for (const { route, upstreams } of snapshots()) for (const s of upstreams) set({ route: routeLabel(route), upstream: s.address }, s);
    };
    new Gauge({
      name: 'svc_upstream_healthy',
      help: '1 while the upstream passes its health checks (always 1 without health checks), by route and upstream address',
      labelNames: ['route', 'upstream'],
      aggregator: 'min',
      registers,
      collect() {
        this.reset();
        each((l, s) => this.set(l, s.healthy ? 1 : 0));
      },
    });
    new Gauge({
      name: 'svc_upstream_ejected',
      help: '1 while outlier detection keeps the upstream out of service, by route and upstream address',
      labelNames: ['route', 'upstream'],
      aggregator: 'max',
      registers,
      collect() {
        this.reset();
        each((l, s) => this.set(l, s.ejected ? 1 : 0));
      },
    });
    new Counter({
      name: 'svc_upstream_ejections_total',
      help: 'outlier ejections of the upstream since its upstream set was built (a reload that changes the route starts again), by route and upstream address',
      labelNames: ['route', 'upstream'],
      registers,
      collect() {
        this.reset();
        each((l, s) => this.inc(l, s.ejections));
      },
    });
  }
  return {
    exchange(route, upstreamIndex, method, durationMs, outcome) {
      if (route.action.kind !== 'forward') return;
      const u = route.action.upstreams[upstreamIndex];
      const labels = { route: routeLabel(route), upstream: u ? upstreamAddress(u) : 'unknown' };
      requests.inc(labels);
      const kind = outcome.error ?? (outcome.status !== undefined && outcome.status >= 500 ? '5xx' : undefined);
      if (kind !== undefined) errors.inc({ ...labels, kind });
      client.observe({ route: labels.route, method: methodLabel(method), status_class: statusClass(outcome.status) }, durationMs, undefined, undefined);
    },
  };
}
