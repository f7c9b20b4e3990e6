/**
 * The `http_server_*` observation of a websocket/SPDY upgrade or a CONNECT tunnel, which answer on
 * the raw connection instead of a response object: recorded once the client connection closes
 * (duration: the whole tunnel), with the status svc answered: the refusal's, else the upstream
 * exchange's (101 or the upstream's answer for an upgrade, 200 for an open tunnel, 502/504 when
 * the upstream could not be reached in time).
 */
import type { Duplex } from 'node:stream';
import type { ServedGeneration } from '../generation/generation.ts';
import type { GateResult } from './gate.ts';
import type { UpstreamOutcome } from '../core/types.ts';
import type { RequestObserver } from '../observe/metrics/registry.ts';

/**
 * Starts observing one upgrade or CONNECT entry the gate answered with `r`; returns the result to
 * continue with (the same, with the upstream's `done` also telling the status). `refusedStatus`: the
 * status a refusal is answered with; `openStatus`: the status of an established tunnel (CONNECT 200).
 */
export function observeStream(observe: RequestObserver, gen: ServedGeneration, r: GateResult, client: Duplex, method: string, refusedStatus: number | undefined, openStatus?: number): GateResult {
  const started = performance.now();
  const route = r.admitted && 'route' in r.decision ? gen.index.body.routes[r.decision.route.index] : undefined;
  const watched = r.admitted && r.upstream !== undefined && refusedStatus === undefined ? r.upstream : undefined;
  let status = refusedStatus;
  // Recorded once the client connection closed and, for an admitted entry, the upstream exchange
  // told how it ended (a tunnel tells it as it closes, possibly after the client side).
  let closed = false;
  let told = watched === undefined;
  const record = () => {
    if (closed && told) observe.request(route, method, status, performance.now() - started);
  };
  const onClose = () => {
    closed = true;
    record();
  };
  if (client.destroyed) onClose();
  else client.once('close', onClose);
  if (!watched || !r.admitted) return r;
  const upstream = watched;
  const done = (o: UpstreamOutcome) => {
    upstream.done(o);
    if (told) return;
    told = true;
    status = o.status ?? (o.error === 'timeout' ? 504 : o.error !== undefined ? 502 : openStatus);
    record();
  };
  return { ...r, upstream: { ...upstream, done } };
}
