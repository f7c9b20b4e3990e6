/**
 * HTTP/2 keepalive on svc's gRPC connections, so that a peer that vanished without closing its
 * connection (a machine powered off, a network partition: no FIN, no RST) is noticed within
 * `timeMs + timeoutMs` instead of each call hanging until its deadline and a Watch stream (no
 * deadline) hanging forever.
 *
 * CONTRACT (client, client.ts): every channel sends an HTTP/2 PING after {@link KEEPALIVE}
 * `timeMs` (30 s) without one, also while no call is open (`permit_without_calls`: a proxy's idle
 * channel to its data broker must be found dead before the next request needs it), and drops the
 * connection when the answer has not come `timeoutMs` (10 s) later; the channel then reconnects
 * (client.ts backoff) and calls on it fail UNAVAILABLE, which the client retries on another URL.
 *
 * CONTRACT (server, server.ts): the server pings each client on the same schedule, so a Watch
 * stream to a vanished proxy is ended and its resources freed. It accepts svc's client pings at
 * that interval: grpc-js servers keep no ping-strike count (they never answer pings with a GOAWAY
 * ENHANCE_YOUR_CALM `too_many_pings`, as gRPC C-core servers with their 5 min default minimum do),
 * so no permit option is needed there; test/runtime/grpc/keepalive.test.ts keeps this true.
 */
import type { ChannelOptions } from '@grpc/grpc-js';

/** How often a connection is checked, and how long an answer may take. */
export interface KeepaliveTiming {
  readonly timeMs: number;
  readonly timeoutMs: number;
}

/** svc's keepalive: a ping after 30 s of silence, answered within 10 s (docs/grpc.md). */
export const KEEPALIVE: KeepaliveTiming = { timeMs: 30_000, timeoutMs: 10_000 };

/** The grpc-js channel options of a client with `timing` (tests shorten it). */
export function clientKeepaliveOptions(timing: KeepaliveTiming = KEEPALIVE): ChannelOptions {
  return {
    'grpc.keepalive_time_ms': timing.timeMs,
    'grpc.keepalive_timeout_ms': timing.timeoutMs,
    'grpc.keepalive_permit_without_calls': 1,
  };
}

/** The grpc-js server options with `timing` (tests shorten it). */
export function serverKeepaliveOptions(timing: KeepaliveTiming = KEEPALIVE): ChannelOptions {
  return {
    'grpc.keepalive_time_ms': timing.timeMs,
    'grpc.keepalive_timeout_ms': timing.timeoutMs,
  };
}
