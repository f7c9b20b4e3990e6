/**
 * The storage metrics (docs/observability.md "Metric reference"): `storage_operation_duration_ms` by operation, result and backend
 * (fed by the stores through {@link StoreObserver}), and the Redis pool figures `redis_conns`,
 * `redis_idle_conns`, `redis_wait_count_total`, `redis_wait_duration_ms_total`, plus `redis_up`
 * (svc's own: the alert "Redis unreachable" needs it) and the two signs of a Redis writer
 * (`redis_replays_refused_total`, `redis_leases_taken_over_total`; docs/scale-out.md), read from the store's
 * {@link StorePoolFigures} at each scrape. The pool metrics exist only when a pool provider is given:
 * the memory store has no pool, and a zero would read as "no connections".
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { StoreObserver, StorePoolFigures } from '../../core/session-store.ts';
import { DURATION_MS_BUCKETS } from './buckets.ts';

/** Registers the storage metrics in `registry`; returns the observer a store reports to. */
export function registerStorage(registry: Registry): StoreObserver {
  const duration = new Histogram({
    name: 'svc_storage_operation_duration_ms',
    help: 'duration of session storage operations, in milliseconds, by operation, result and backend',
    labelNames: ['operation', 'result', 'backend'],
    buckets: [...DURATION_MS_BUCKETS],
    registers: [registry],
  });
  return {
    operation(operation, result, backend, durationMs) {
      duration.observe({ operation, result, backend }, durationMs);
    },
  };
}

/**
 * Registers the Redis pool metrics, read from `figures` at each scrape. `figures` returning
 * undefined (no store yet) reads as no connections and not up: these series have no labels, and
 * Prometheus's text format cannot leave an unlabelled series out once it exists.
 */
export function registerStorePool(registry: Registry, figures: () => StorePoolFigures | undefined): void {
  const registers = [registry];
  const gauge = (name: string, help: string, read: (f: StorePoolFigures) => number) =>
    new Gauge({
      name,
      help,
      registers,
      collect() {
        this.reset();
        const f = figures();
        if (f) this.set(read(f));
      },
    });
  const counter = (name: string, help: string, read: (f: StorePoolFigures) => number) =>
    new Counter({
      name,
      help,
      registers,
      collect() {
        this.reset();
        const f = figures();
        if (f) this.inc(read(f));
      },
    });
  gauge('svc_redis_conns', 'open connections to Redis', (f) => f.conns);
  gauge('svc_redis_idle_conns', 'open connections to Redis with no command in flight', (f) => f.idleConns);
  counter('svc_redis_wait_count_total', 'commands that waited for a Redis connection', (f) => f.waitCount);
  counter('svc_redis_wait_duration_ms_total', 'time commands waited for a Redis connection, in milliseconds', (f) => f.waitDurationMs);
  counter('svc_redis_replays_refused_total', 'session values refused because this process had seen a newer version (a replay by a Redis writer, or writes lost in a failover)', (f) => f.replaysRefused);
  counter('svc_redis_leases_taken_over_total', 'identity-manager leases found held by a value svc did not write, or past its sealed expiry, and taken over', (f) => f.leasesTakenOver);
  gauge('svc_redis_up', '1 while the session store reaches its Redis server, 0 during an outage', (f) => (f.up ? 1 : 0));
}
