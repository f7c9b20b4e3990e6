/**
 * The `otlp` provider's exporter: OpenTelemetry's own OTLP/HTTP trace exporter
 * (`@opentelemetry/exporter-trace-otlp-http`, the one paired with the SDK svc pins), which `POST`s
 * an `ExportTraceServiceRequest` in OTLP's JSON encoding (`http/json`, `Content-Type:
 * application/json`) to `tracing_otlp_endpoint` (docs/tracing.md "Exporters").
 *
 * INVARIANT (plan-only): the exporter follows the plan and nothing else. The SDK would read the
 * `OTEL_EXPORTER_OTLP_*` environment variables (endpoint, headers, timeout, compression, TLS files)
 * in its constructor and let them change where and how spans go; svc does not read them. Every
 * option it would take from them is given here, and the variables are hidden while the exporter
 * is built (its constructor reads them synchronously, so no other code sees them hidden), because
 * headers from the environment would otherwise be merged into the ones given. `svc run` names the
 * variables it found and ignores ({@link ignoredOtlpEnv}).
 */
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';

/** The environment variables the SDK's OTLP exporters read (OpenTelemetry's `OTEL_EXPORTER_OTLP_` prefix). */
const OTLP_ENV_PREFIX = 'OTEL_EXPORTER_OTLP_';

/** How long the collector may take to answer one export (OpenTelemetry's default). */
const EXPORT_TIMEOUT_MS = 10_000;

/** The names of the `OTEL_EXPORTER_OTLP_*` variables set (non-empty) in `env`, sorted: svc ignores them. */
export function ignoredOtlpEnv(env: NodeJS.ProcessEnv = process.env): string[] {
  return Object.keys(env)
    .filter((k) => k.startsWith(OTLP_ENV_PREFIX) && (env[k] ?? '').trim() !== '')
    .sort();
}

/** An exporter sending to `endpoint` (the plan's `tracing_otlp_endpoint`) and nowhere else. */
export function otlpExporter(endpoint: string): SpanExporter {
  return withoutOtlpEnv(
    () =>
      new OTLPTraceExporter({
        url: endpoint,
        headers: {},
        timeoutMillis: EXPORT_TIMEOUT_MS,
        // Given agent options: the exporter builds its own agent, never one with the TLS files of
        // OTEL_EXPORTER_OTLP_CERTIFICATE & co. An https endpoint is checked against Node's CAs.
        httpAgentOptions: { keepAlive: true },
      }),
  );
}

/** Runs `build` (synchronous) with every `OTEL_EXPORTER_OTLP_*` variable unset, then puts them back. */
function withoutOtlpEnv<T>(build: () => T): T {
  const hidden = Object.entries(process.env).filter(([k]) => k.startsWith(OTLP_ENV_PREFIX));
  for (const [k] of hidden) delete process.env[k];
  try {
    return build();
  } finally {
    for (const [k, v] of hidden) process.env[k] = v;
  }
}
