/**
 * The metrics listener on `metrics_address` (docs/observability.md "The metrics listener"): `GET /metrics` in the Prometheus
 * text format, `/healthz` and `/readyz` (health.ts). svc keeps it open for the whole graceful stop,
 * so that `/readyz` answers `503 not ready: draining` (and `/healthz` 200) until the process exits.
 * - `metrics_basic_auth`: `/metrics` wants the credential; a wrong or missing one gets 401 with
 *   `WWW-Authenticate` and no metrics (basic-auth.ts compares in constant time).
 * - `metrics_certificate[_file]` / `metrics_certificate_key[_file]`: HTTPS instead of HTTP.
 * - `metrics_client_ca[_file]`: the TLS handshake requires a client certificate issued by it; a
 *   client without one is refused before any HTTP, so it gets no metrics and no health either.
 *
 * Reloads: the listener's shape (address, TLS or not, client certificates or not) is fixed at
 * start, and a reload changing it is refused (runtime/generation/restart-checks.ts `listenerChange`). The material
 * (credential, certificate, key, CA) follows the plan: it is a part of the process's generation
 * (runtime/generation/generation.ts `metricsMaterial`), read by `readMetricsMaterial` while the
 * generation is built (a plan whose material cannot be read is refused, the plan in service stays)
 * and handed to the listener with `use` once the generation is swapped in.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { SecureContextOptions } from 'node:tls';
import type { HostPort, PlanEnvelope, PlanSettings } from '../../../compiler/plan/types.ts';
import { SvcError } from '../../core/errors.ts';
import { bind } from '../../tls/bind.ts';
import { MIN_TLS_VERSION } from '../../tls/material.ts';
import { readKey, readPemSource, type ReadMode } from '../../tls/pem.ts';
import { resolveSecretText } from '../../plan/secrets.ts';
import { basicAuthorized, basicCredential, type BasicCredential } from './basic-auth.ts';
import { failedChecks, healthBody, type HealthDetail, type ReadinessChecks } from './health.ts';

/** The exposition to serve: Prometheus text and its content type. */
export type Scrape = () => Promise<{ readonly contentType: string; readonly body: string }>;

export interface MetricsListenerOptions {
  readonly scrape: Scrape;
  readonly ready: ReadinessChecks;
  /** What `/healthz` reports besides `ok` (the data broker's state); never a reason to fail it. */
  readonly health?: HealthDetail;
  /** Overrides `metrics_address` (tests). */
  readonly listen?: HostPort;
  readonly log?: (entry: Record<string, unknown>) => void;
  /** The material to start with (the first generation's); read from `plan` when absent. */
  readonly material?: MetricsMaterial;
}

export interface MetricsListener {
  readonly address: { readonly host: string; readonly port: number };
  readonly tls: boolean;
  /** Serves with `material` from now on (the material of the generation swapped in). */
  use(material: MetricsMaterial): void;
  close(): Promise<void>;
}

/** What a plan's metrics settings resolve to: the `/metrics` credential and the listener's TLS. */
export interface MetricsMaterial {
  readonly credential: BasicCredential | null;
  readonly tls: SecureContextOptions | null;
}

/** A metrics setting that cannot be used (a secret that is missing or changed, a file that cannot be read). */
export class MetricsMaterialError extends SvcError<'SVC_ERR_METRICS_MATERIAL'> {
  constructor(message: string, options?: ErrorOptions) {
    super('SVC_ERR_METRICS_MATERIAL', message, options);
    this.name = 'MetricsMaterialError';
  }
}

/**
 * Reads the material of the metrics settings `m` (`mode` as for the listener's TLS key files:
 * runtime/tls/pem.ts). Throws `MetricsMaterialError` when a secret is missing or changed or a file
 * cannot be read.
 */
export function readMetricsMaterial(m: PlanSettings['metrics'], mode: ReadMode): MetricsMaterial {
  try {
    const credential = m.basicAuth ? basicCredential(resolveSecretText(m.basicAuth, 'metrics_basic_auth')) : null;
    const tls: MetricsMaterial['tls'] =
      m.certificate && m.certificateKey
        ? {
            cert: readPemSource(m.certificate, 'metrics_certificate'),
            key: readKey(m.certificateKey, 'metrics_certificate_key', mode),
            ...(m.clientCa ? { ca: readPemSource(m.clientCa, 'metrics_client_ca') } : {}),
            minVersion: MIN_TLS_VERSION,
          }
        : null;
    return { credential, tls };
  } catch (e) {
    throw new MetricsMaterialError(`metrics listener: ${(e as Error).message}`, { cause: e });
  }
}

/** Starts the metrics listener of `plan` (which must set `metrics_address`). */
export async function startMetricsListener(plan: PlanEnvelope, options: MetricsListenerOptions): Promise<MetricsListener> {
  const settings = plan.body.settings.metrics;
  const want = options.listen ?? settings.address;
  // Only a plan with metrics_address starts the listener.
  if (!want) throw new Error('bug: startMetricsListener: the plan sets no metrics_address');
  let material = options.material ?? readMetricsMaterial(settings, 'load');

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?', 1)[0];
    const send = (status: number, body: string, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store', ...headers });
      res.end(req.method === 'HEAD' ? undefined : body);
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(405, 'method not allowed\n', { allow: 'GET, HEAD' });
    if (path === '/healthz') return send(200, healthBody(options.health));
    if (path === '/readyz') {
      void failedChecks(options.ready).then(
        (failed) => (failed.length === 0 ? send(200, 'ok\n') : send(503, `not ready: ${failed.join(', ')}\n`)),
        () => send(503, 'not ready\n'),
      );
      return;
    }
    if (path !== '/metrics') return send(404, 'not found: this listener serves /metrics, /healthz and /readyz\n');
    const credential = material.credential;
    if (credential && !basicAuthorized(req.headers.authorization, credential)) return send(401, 'unauthorized\n', { 'www-authenticate': 'Basic realm="svc metrics", charset="UTF-8"' });
    options.scrape().then(
      (s) => send(200, s.body, { 'content-type': s.contentType }),
      (e: unknown) => {
        options.log?.({ level: 'error', msg: 'metrics scrape failed', error: (e as Error).message });
        send(500, 'scrape failed\n');
      },
    );
  };

  const tlsAtStart = material.tls;
  const server: Server | HttpsServer = tlsAtStart
    ? createHttpsServer({ ...tlsAtStart, requestCert: tlsAtStart.ca !== undefined, rejectUnauthorized: tlsAtStart.ca !== undefined, handshakeTimeout: 10_000 }, handle)
    : createServer({ requestTimeout: 30_000, headersTimeout: 10_000 }, handle);
  server.on('clientError', (_err, socket) => socket.destroy());
  const address = await bind(server, want);

  return {
    address,
    tls: tlsAtStart !== null,
    use(m) {
      material = m;
      if (m.tls && 'setSecureContext' in server) server.setSecureContext(m.tls);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
