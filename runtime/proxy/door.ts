/**
 * The door, the gate's first step (gate.ts; docs/architecture.md §5 "One gate", docs/decisions.md
 * §9): what is refused before any session is looked up, the same for a plain request, an upgrade
 * and a CONNECT, in this order:
 *
 *   HTTP/1.0 (505) → more than `MAX_HEADER_FIELDS` header fields (431) → the canonical request, once
 *   (request/decide.ts `canonicalize`; a target it refuses is the decision core's 400) → the
 *   connection's certificate covers the host (421).
 *
 * Nothing is allocated here beyond the canonical request itself: the door answers with a shared
 * refusal, the canonical request, or a CONNECT's authority.
 */
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { RequestHeaders } from '../core/types.ts';
import type { ServedGeneration } from '../generation/generation.ts';
import { canonicalize, connectAuthority, type Canonical } from '../request/decide.ts';

/** Refused at the door, or beside the decision core (the gate's client-certificate check, 495). */
export interface Refusal {
  readonly admitted: false;
  readonly status: 421 | 431 | 495 | 505;
  readonly problem: 'http-1.0-unsupported' | 'too-many-headers' | 'misdirected-request' | 'client-certificate-required';
}

/** What the door reads of the gate's entry (gate.ts `Entry`). */
export interface DoorEntry {
  readonly kind: 'request' | 'upgrade' | 'connect';
  /** The request target as received; for CONNECT the `host:port` authority. */
  readonly target: string;
  readonly headers: RequestHeaders;
  /** `1.0`, `1.1` or `2.0`. */
  readonly httpVersion: string;
  readonly socket: Socket | undefined;
  /**
   * The name-value pairs as received (`rawHeaders.length / 2`, HTTP/2 pseudo-headers included), when
   * the entry point has them: never fewer than the fields `headers` holds, so at or under
   * `MAX_HEADER_FIELDS` the door needs no count of its own.
   */
  readonly rawFields?: number;
}

/**
 * What passed the door: the canonical request of a request or an upgrade (`ok: false` when its
 * target is refused: the decision core answers that 400), or the canonical `host:port` of a CONNECT
 * ('' when its target is not one: 400 from the decision core as well).
 */
export type Passed = Canonical | string;

/**
 * The most header fields a request may carry (docs/decisions.md §9): more is refused with 431, never
 * truncated (a truncated request would be decided and forwarded without the fields past the
 * limit). HTTP/2 pseudo-headers are not counted; each value of a repeated field is. The listeners
 * let every field through to here (serve.ts: Node's own limit, which truncates, is off).
 */
export const MAX_HEADER_FIELDS = 1000;

/** Whether the entry's headers hold more than `MAX_HEADER_FIELDS` fields. */
function tooManyHeaders(entry: DoorEntry): boolean {
  if (entry.rawFields !== undefined && entry.rawFields <= MAX_HEADER_FIELDS) return false;
  const headers = entry.headers;
  let n = 0;
  for (const name in headers) {
    if (name.charCodeAt(0) === 0x3a) continue; // `:authority` & co. are HTTP/2's framing
    n += headers[name]?.length ?? 0;
    if (n > MAX_HEADER_FIELDS) return true;
  }
  return false;
}

/** Whether the door refused (else the entry passed). */
export function refused(d: Refusal | Passed): d is Refusal {
  return typeof d !== 'string' && 'admitted' in d;
}

/** The host a passed entry is for ('' when its target was refused): what its session is looked up on. */
export function hostOf(passed: Passed): string {
  return typeof passed === 'string' ? passed : passed.ok ? passed.request.host : '';
}

/** The door of one entry under `gen`, on a listener serving `scheme` (see the file comment). */
export function door(gen: ServedGeneration, entry: DoorEntry, scheme: 'http' | 'https'): Refusal | Passed {
  if (entry.httpVersion === '1.0') return REFUSED_HTTP_10;
  if (tooManyHeaders(entry)) return REFUSED_TOO_MANY_HEADERS;
  const passed: Passed = entry.kind === 'connect' ? (connectAuthority(entry.target) ?? '') : canonicalize(gen.index, { target: entry.target, headers: entry.headers, scheme });
  const host = hostOf(passed);
  const tls = gen.tls;
  const socket = tls ? (entry.socket as TLSSocket | undefined) : undefined;
  // docs/decisions.md §9: a request for a host this connection's certificate does not cover (HTTP/2
  // connection coalescing) is misdirected; the client retries on a new connection.
  if (tls && socket && host !== '' && !tls.servesHost(socket, host)) return REFUSED_MISDIRECTED;
  return passed;
}

const REFUSED_HTTP_10: Refusal = { admitted: false, status: 505, problem: 'http-1.0-unsupported' };
const REFUSED_TOO_MANY_HEADERS: Refusal = { admitted: false, status: 431, problem: 'too-many-headers' };
const REFUSED_MISDIRECTED: Refusal = { admitted: false, status: 421, problem: 'misdirected-request' };
