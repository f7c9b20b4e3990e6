/**
 * The reference of svc's door (rule book §9, docs/architecture.md §5 "One gate"): what every way in — a plain
 * request, a websocket or SPDY upgrade, a CONNECT tunnel, over HTTP/1.1 or HTTP/2 — is answered,
 * written from the text and not from runtime/proxy/gate.ts. The decisions themselves come from this
 * directory's interpreter (`decideReference`, `decideConnectReference`).
 *
 * Order: HTTP/1.0 (505) → more than 1,000 header fields (431) → canonical request or CONNECT authority (400) → the connection's
 * certificate covers the host (421) → session → decision → client certificate of the decision's
 * route or of the forward-auth host (495).
 */
import type { PlanBody } from '../../compiler/plan/types.ts';
import type { Decision, DecisionRequest, Identity } from '../../runtime/core/types.ts';
import { canonicalOf, connectAuthority, decideConnectReference, decideReference } from './interpreter.ts';

/** The ways into svc. */
export type EntryKind = 'request' | 'upgrade' | 'connect';

/**
 * One request at the door: the decision request (its `scheme` is the listener's: `http` exactly
 * when the connection has no TLS) with how it came in. A CONNECT's `target` is its authority. The
 * client certificate is the connection's, never the request's.
 */
export interface GateEntry extends Omit<DecisionRequest, 'clientCertificate'> {
  readonly kind: EntryKind;
  readonly httpVersion: '1.0' | '1.1' | '2.0';
}

/** Whose client CA a decision answers under: a route (by plan index) or the forward-auth host. */
export type CertificateScope = number | 'forward_auth';

/** What the listener knows about the client's connection. */
export interface GateConnection {
  /** null: a plain-HTTP listener (`insecure_server`), no certificate either way. */
  readonly tls: null | {
    /** The DNS names of the certificate the connection was served (`*.example.com` allowed). */
    readonly covers: readonly string[];
    /** The client certificate the connection presented, if any. */
    readonly clientCertificate?: { readonly fingerprint: string; readonly valid: boolean };
    /** Whether a route (or the forward-auth host) requires a valid client certificate. */
    readonly requires: (scope: CertificateScope) => boolean;
  };
}

/**
 * The JSON form of a `GateConnection` (shared cases and fixtures/corpus/): `requires` lists the
 * scopes that require a client certificate.
 */
export interface GateConnectionData {
  readonly tls: null | {
    readonly covers: readonly string[];
    readonly clientCertificate?: { readonly fingerprint: string; readonly valid: boolean };
    readonly requires: readonly CertificateScope[];
  };
}

/** A `GateConnection` from its JSON form. */
export function connectionOf(data: GateConnectionData): GateConnection {
  const tls = data.tls;
  if (tls === null) return { tls: null };
  return { tls: { ...tls, requires: (scope) => tls.requires.includes(scope) } };
}

/** Refused at the door (505, 421, 495), beside the decision. */
export interface GateRefusal {
  readonly refused: 421 | 431 | 495 | 505;
  readonly problem: 'http-1.0-unsupported' | 'too-many-headers' | 'misdirected-request' | 'client-certificate-required';
}

export type GateAnswer = GateRefusal | Decision;

/**
 * Whether certificate name `name` covers host name `host` (both lower case, no port): equal, or
 * `*.rest` and `host` is exactly one non-empty label followed by `.rest` (RFC 6125 §6.4.3).
 */
export function certificateCovers(name: string, host: string): boolean {
  if (name === host) return true;
  const nameLabels = name.split('.');
  const hostLabels = host.split('.');
  if (nameLabels[0] !== '*' || nameLabels.length !== hostLabels.length || hostLabels[0] === '') return false;
  return nameLabels.slice(1).join('.') === hostLabels.slice(1).join('.');
}

/** The host name of `host[:port]` (a bracketed IPv6 literal keeps its brackets). */
function withoutPort(host: string): string {
  if (host.startsWith('[')) return host.slice(0, host.indexOf(']') + 1);
  const colon = host.lastIndexOf(':');
  return colon < 0 ? host : host.slice(0, colon);
}

/** Answers one entry as rule book §9 says. `identity` is the session the entry carries (or none). */
export function gateReference(body: PlanBody, entry: GateEntry, connection: GateConnection, identity: Identity | null): GateAnswer {
  // 1. HTTP/1.0.
  if (entry.httpVersion === '1.0') return { refused: 505, problem: 'http-1.0-unsupported' };

  // 2. More than 1,000 header fields (every value of a repeated one; HTTP/2 pseudo-headers are not
  // header fields): refused, never truncated.
  const fieldCount = Object.entries(entry.headers).reduce((n, [name, values]) => (name.startsWith(':') ? n : n + (values?.length ?? 0)), 0);
  if (fieldCount > 1000) return { refused: 431, problem: 'too-many-headers' };

  const { kind, httpVersion: _version, ...fields } = entry;
  const tls = connection.tls;
  // The policy's client certificate is the connection's; a plain-HTTP listener has none.
  const request: DecisionRequest = { ...fields, ...(tls?.clientCertificate !== undefined ? { clientCertificate: tls.clientCertificate } : {}) };
  const decideEntry = (): Decision => (kind === 'connect' ? decideConnectReference(body, request, identity) : decideReference(body, request, identity));

  // 3. The canonical request, or CONNECT's authority: its 400 is the decision's own.
  let hostName: string;
  if (kind === 'connect') {
    const authority = connectAuthority(entry.target);
    if (authority === undefined) return decideEntry();
    hostName = authority.host;
  } else {
    const canonical = canonicalOf(entry);
    if (canonical === 'host-duplicate' || !canonical.ok) return decideEntry();
    hostName = withoutPort(canonical.request.host);
  }

  // 4. A host the connection's certificate does not cover was sent on a connection meant for
  // another name (HTTP/2 coalescing).
  if (tls !== null && !tls.covers.some((name) => certificateCovers(name.toLowerCase(), hostName))) return { refused: 421, problem: 'misdirected-request' };

  // 5-6. The session is `identity`: for CONNECT, the session of its tunnel credential.
  const decision = decideEntry();

  // 7. The client certificate of the route decided on, or of the forward-auth host.
  if (tls !== null) {
    const scope: CertificateScope | undefined =
      decision.outcome === 'internal' ? (decision.endpoint.service === 'forward_auth' ? 'forward_auth' : undefined) : 'route' in decision ? decision.route.index : undefined;
    if (scope !== undefined && tls.requires(scope) && tls.clientCertificate?.valid !== true) return { refused: 495, problem: 'client-certificate-required' };
  }
  return decision;
}
