/**
 * HTTP health checks (`http_health_check`): `GET <path>` on the upstream's scheme, host and port,
 * with the `host` override (default: the upstream's own authority), over HTTP/1.1 (`node:http`,
 * a fresh connection per check) or HTTP/2 (`node:http2`, prior knowledge for `http`, ALPN for
 * `https`; a fresh session per check). Healthy when the status is in one of `expected_statuses`,
 * each a half-open range [start, end); an empty list means 200–299. Only the status line is
 * waited for; the body is discarded.
 */
import http from 'node:http';
import http2 from 'node:http2';
import https from 'node:https';
import type { HealthCheck, Upstream } from '../../../compiler/plan/types.ts';
import { bracketHost, socketHost, upstreamAuthority } from '../address.ts';
import { HealthCheckError } from '../errors.ts';
import { abortError, transportError } from './abort.ts';
import { tlsConnectionOptions } from './tls.ts';
import type { ProbeTls, Prober } from './types.ts';

/** The `http` variant of a health check's `check`. */
export type HttpCheck = Extract<HealthCheck['check'], { kind: 'http' }>;

/** `user-agent` of health-check requests, so upstream logs can tell them apart. */
const HEALTH_CHECK_USER_AGENT = 'svc-health-check';

const DEFAULT_EXPECTED: HttpCheck['expectedStatuses'] = [{ start: 200, end: 300 }];

/** Whether `status` is in one of `ranges` ([start, end)); an empty list means 200–299. */
export function statusExpected(status: number, ranges: HttpCheck['expectedStatuses']): boolean {
  return (ranges.length === 0 ? DEFAULT_EXPECTED : ranges).some((r) => status >= r.start && status < r.end);
}

/** A prober for an `http_health_check` of `upstream`. */
export function createHttpProber(upstream: Upstream, check: HttpCheck, tls: ProbeTls): Prober {
  const target: Target = {
    upstream,
    path: check.path.startsWith('/') ? check.path : `/${check.path}`,
    authority: check.host ?? upstreamAuthority(upstream),
    expected: check.expectedStatuses,
    tls,
  };
  return {
    probe: (signal) => (check.codec === 'HTTP2' ? probeHttp2(target, signal) : probeHttp1(target, signal)),
    close: () => {},
  };
}

interface Target {
  readonly upstream: Upstream;
  readonly path: string;
  readonly authority: string;
  readonly expected: HttpCheck['expectedStatuses'];
  readonly tls: ProbeTls;
}

function verdict(status: number, target: Target): HealthCheckError | undefined {
  return statusExpected(status, target.expected)
    ? undefined
    : new HealthCheckError('SVC_ERR_HEALTH_CHECK_STATUS', `health check ${target.path} answered ${status}`);
}

function probeHttp1(target: Target, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(abortError(signal));
    const { upstream } = target;
    const secure = upstream.scheme === 'https';
    const options: https.RequestOptions = {
      host: socketHost(upstream.host),
      port: upstream.port,
      method: 'GET',
      path: target.path,
      headers: { host: target.authority, 'user-agent': HEALTH_CHECK_USER_AGENT },
      agent: false,
      ...(secure ? tlsConnectionOptions(target.tls) : {}),
    };
    let connected = false;
    let settled = false;
    const req = (secure ? https : http).request(options);
    const onAbort = (): void => {
      req.destroy(abortError(signal));
    };
    const settle = (err: HealthCheckError | undefined): void => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      if (err) reject(err);
      else resolve();
    };
    signal.addEventListener('abort', onAbort, { once: true });
    req.on('socket', (socket) => {
      socket.once(secure ? 'secureConnect' : 'connect', () => {
        connected = true;
      });
    });
    req.on('response', (res) => {
      const status = res.statusCode ?? 0;
      res.resume();
      settle(verdict(status, target));
      req.destroy();
    });
    req.on('error', (err) => settle(transportError(err, connected)));
    req.end();
  });
}

function probeHttp2(target: Target, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(abortError(signal));
    const { upstream } = target;
    const secure = upstream.scheme === 'https';
    const origin = `${secure ? 'https' : 'http'}://${bracketHost(upstream.host)}:${upstream.port}`;
    let connected = false;
    let settled = false;
    const session = http2.connect(origin, secure ? tlsConnectionOptions(target.tls) : {});
    const onAbort = (): void => settle(abortError(signal));
    const settle = (err: HealthCheckError | undefined): void => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      session.destroy();
      if (err) reject(err);
      else resolve();
    };
    signal.addEventListener('abort', onAbort, { once: true });
    session.on('connect', () => {
      connected = true;
    });
    session.on('error', (err) => settle(transportError(err, connected)));
    const stream = session.request({
      ':method': 'GET',
      ':path': target.path,
      ':authority': target.authority,
      'user-agent': HEALTH_CHECK_USER_AGENT,
    });
    stream.on('response', (headers) => {
      const status = Number(headers[':status'] ?? 0);
      stream.resume();
      settle(verdict(status, target));
    });
    stream.on('error', (err) => settle(transportError(err, connected)));
    stream.on('close', () => settle(transportError(new Error('stream closed without a response'), connected)));
    stream.end();
  });
}
