/**
 * The configuration metrics (docs/observability.md "Metric reference"): `build_info`, `config_checksum_int64`,
 * `config_last_reload_success` and `config_last_reload_success_timestamp`. Kept by the process that
 * loads plans (the single process, or the cluster primary), never by workers, so a cluster's
 * aggregated scrape shows each once.
 */
import { Gauge, type Registry } from 'prom-client';
import type { BuildInfo } from '../build-info.ts';

/** What the reload path tells the metrics. */
export interface ConfigMetrics {
  /** A plan is in service (the first, or one swapped in): its checksum is exported. */
  served(checksum: string): void;
  /** A reload ended: ok (swapped or unchanged) sets success 1 and its time; a failure sets 0. */
  reloaded(ok: boolean, nowMs?: number): void;
}

/**
 * The plan checksum as the integer `config_checksum_int64` exports: the first 48 bits of the
 * SHA-256, so the value is exact in Prometheus's float64 samples (a full int64 would be rounded).
 * Equal checksums give equal values; a change shows as a different value.
 */
export function checksumInt(checksum: string): number {
  const hex = checksum.replace(/^sha256:/, '').slice(0, 12);
  return /^[0-9a-f]{12}$/.test(hex) ? Number.parseInt(hex, 16) : 0;
}

/** Registers the configuration metrics in `registry`. The first plan counts as a successful load. */
export function registerConfig(registry: Registry, build: BuildInfo): ConfigMetrics {
  const registers = [registry];
  new Gauge({ name: 'svc_build_info', help: 'build metadata: version, git revision and Node version; always 1', labelNames: ['version', 'revision', 'node_version'], registers }).set(
    { version: build.version, revision: build.revision, node_version: build.nodeVersion },
    1,
  );
  const checksum = new Gauge({ name: 'svc_config_checksum_int64', help: 'the first 48 bits of the SHA-256 checksum of the plan in service', registers });
  const success = new Gauge({ name: 'svc_config_last_reload_success', help: '1 when the last configuration load or reload succeeded, 0 when it failed (the previous plan stays in service)', registers });
  const when = new Gauge({ name: 'svc_config_last_reload_success_timestamp', help: 'when the configuration was last loaded or reloaded successfully, in seconds since the epoch', registers });
  success.set(1);
  when.set(Math.floor(Date.now() / 1000));
  return {
    served: (c) => checksum.set(checksumInt(c)),
    reloaded: (ok, nowMs = Date.now()) => {
      success.set(ok ? 1 : 0);
      if (ok) when.set(Math.floor(nowMs / 1000));
    },
  };
}
