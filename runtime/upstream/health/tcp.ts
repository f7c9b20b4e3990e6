/**
 * TCP health checks (`tcp_health_check`), Envoy's semantics: connect; then, if `send` is given,
 * write it; then, if `receive` is given, read until every `receive` payload has been seen in
 * order (not necessarily adjacent: Envoy's "fuzzy" match). With neither, a completed connect is
 * healthy. Payloads are hex in the plan. The connection is plain TCP to the upstream's host and
 * port, also for `https` upstreams (a TCP check tests reachability, not TLS).
 */
import net from 'node:net';
import type { HealthCheck, Upstream } from '../../../compiler/plan/types.ts';
import { socketHost } from '../address.ts';
import { HealthCheckError, UpstreamConfigError } from '../errors.ts';
import { abortError, transportError } from './abort.ts';
import type { Prober } from './types.ts';

/** The `tcp` variant of a health check's `check`. */
export type TcpCheck = Extract<HealthCheck['check'], { kind: 'tcp' }>;

/** Received bytes kept while matching; past this the check fails rather than buffer without end. */
const MAX_BUFFERED = 64 * 1024;

/**
 * Decodes a hex payload (whitespace ignored). Throws `UpstreamConfigError`
 * (`SVC_ERR_UPSTREAM_CONFIG`) when it is not an even number of hex digits.
 */
export function decodeHex(hex: string): Buffer {
  const clean = hex.replace(/\s+/g, '');
  if (clean.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(clean)) {
    throw new UpstreamConfigError('SVC_ERR_UPSTREAM_CONFIG', `tcp health check payload \`${hex}\` is not hex`);
  }
  return Buffer.from(clean, 'hex');
}

/**
 * Whether `blocks` all occur in `data` in order, each after the end of the one before. Pure.
 */
export function containsInOrder(data: Buffer, blocks: readonly Buffer[]): boolean {
  let from = 0;
  for (const block of blocks) {
    const at = data.indexOf(block, from);
    if (at < 0) return false;
    from = at + block.length;
  }
  return true;
}

/** A prober for a `tcp_health_check` of `upstream`; payloads are decoded (and checked) here. */
export function createTcpProber(upstream: Upstream, check: TcpCheck): Prober {
  const send = check.send === null || check.send === '' ? undefined : decodeHex(check.send);
  const receive = check.receive.map(decodeHex).filter((b) => b.length > 0);
  return {
    probe: (signal) => probeTcp(upstream, send, receive, signal),
    close: () => {},
  };
}

function probeTcp(upstream: Upstream, send: Buffer | undefined, receive: readonly Buffer[], signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(abortError(signal));
    let connected = false;
    let settled = false;
    let received = Buffer.alloc(0);
    const socket = net.connect({ host: socketHost(upstream.host), port: upstream.port });
    const onAbort = (): void => settle(abortError(signal));
    const settle = (err: HealthCheckError | undefined): void => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      socket.destroy();
      if (err) reject(err);
      else resolve();
    };
    signal.addEventListener('abort', onAbort, { once: true });
    socket.on('connect', () => {
      connected = true;
      if (send) {
        socket.write(send, (err) => {
          if (err) settle(transportError(err, true));
          else if (receive.length === 0) settle(undefined);
        });
      } else if (receive.length === 0) settle(undefined);
    });
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (containsInOrder(received, receive)) settle(undefined);
      else if (received.length > MAX_BUFFERED) {
        settle(new HealthCheckError('SVC_ERR_HEALTH_CHECK_RESPONSE', `tcp health check read ${received.length} bytes without the expected payloads`));
      }
    });
    socket.on('error', (err) => settle(transportError(err, connected)));
    socket.on('close', () =>
      settle(
        connected
          ? new HealthCheckError('SVC_ERR_HEALTH_CHECK_RESPONSE', 'tcp health check connection closed before the expected payloads arrived')
          : transportError(new Error('connection closed'), false),
      ),
    );
  });
}
