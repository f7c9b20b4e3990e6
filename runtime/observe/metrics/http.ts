/**
 * The HTTP metrics (docs/observability.md "Metric reference"): `http_server_*` (requests svc answered: proxied, redirected, refused,
 * its own endpoints, upgrades and CONNECT tunnels) and `http_client_*` (exchanges with upstreams),
 * by route, method and status class (labels.ts bounds every one).
 */
import { Counter, Histogram, type Registry } from 'prom-client';
import { DURATION_MS_BUCKETS, SIZE_BYTES_BUCKETS } from './buckets.ts';

const LABELS = ['route', 'method', 'status_class'] as const;
type Labels = Record<(typeof LABELS)[number], string>;

/** One direction's four metrics (`server` or `client`). */
export interface HttpMetrics {
  observe(labels: Labels, durationMs: number, requestBytes: number | undefined, responseBytes: number | undefined): void;
}

/** Registers `svc_http_<side>_*` in `registry`. */
export function registerHttp(registry: Registry, side: 'server' | 'client'): HttpMetrics {
  const what = side === 'server' ? 'requests svc answered' : 'requests svc sent to upstreams';
  const registers = [registry];
  const requests = new Counter({ name: `svc_http_${side}_requests_total`, help: `HTTP ${what}, by route, method and status class`, labelNames: LABELS, registers });
  const duration = new Histogram({ name: `svc_http_${side}_request_duration_ms`, help: `duration of HTTP ${what}, in milliseconds`, labelNames: LABELS, buckets: [...DURATION_MS_BUCKETS], registers });
  const requestSize = new Histogram({ name: `svc_http_${side}_request_size_bytes`, help: `size of HTTP ${what} (body bytes), in bytes`, labelNames: LABELS, buckets: [...SIZE_BYTES_BUCKETS], registers });
  const responseSize = new Histogram({ name: `svc_http_${side}_response_size_bytes`, help: `size of the responses to HTTP ${what} (body bytes), in bytes`, labelNames: LABELS, buckets: [...SIZE_BYTES_BUCKETS], registers });
  // The children of one label set, looked up once: prom-client hashes the labels on every call
  // otherwise, which is most of an observation's cost. Bounded like the label values (labels.ts).
  type Children = { requests: ReturnType<typeof requests.labels>; duration: ReturnType<typeof duration.labels>; requestSize: ReturnType<typeof duration.labels>; responseSize: ReturnType<typeof duration.labels> };
  const children = new Map<string, Children>();
  return {
    observe(labels, durationMs, requestBytes, responseBytes) {
      const key = `${labels.route}\0${labels.method}\0${labels.status_class}`;
      let c = children.get(key);
      if (!c) children.set(key, (c = { requests: requests.labels(labels), duration: duration.labels(labels), requestSize: requestSize.labels(labels), responseSize: responseSize.labels(labels) }));
      c.requests.inc();
      c.duration.observe(durationMs);
      if (requestBytes !== undefined) c.requestSize.observe(requestBytes);
      if (responseBytes !== undefined) c.responseSize.observe(responseBytes);
    },
  };
}
