/**
 * The access lines of a long-lived exchange (a websocket or SPDY upgrade, a CONNECT tunnel): one
 * when it opens (after the upstream's 101 or svc's 200) and one when it closes, with its bytes and
 * duration. Also registers the tunnel with the graceful stop (in-flight.ts), which closes it.
 */
import type { Duplex } from 'node:stream';
import { clientAddress } from '../request/client-address.ts';
import { hostOf, pathOf, type AccessEntry } from '../observe/log/access-line.ts';
import type { ServedGeneration } from '../generation/generation.ts';
import type { Admission, GateResult } from './gate.ts';
import type { InFlight } from './in-flight.ts';
import type { Decision, RequestHeaders } from '../core/types.ts';
import { clientCertificateOf, upstreamAddress } from './handler.ts';
import { identityAttributes, type IdentityAttributes } from '../observe/log/replay-attributes.ts';
import type { Socket } from 'node:net';

/** What the upgrade and CONNECT listeners are told besides the gate's options (serve.ts). */
export interface TunnelObserver {
  readonly access?: (entry: AccessEntry) => void;
  readonly inFlight?: InFlight;
}

export interface TunnelStart {
  readonly kind: 'upgrade' | 'tunnel';
  readonly requestId: string;
  readonly method: string;
  readonly host: string;
  readonly target: string;
  readonly headers: RequestHeaders;
  readonly peer: string;
  readonly status: number;
  /** The client's connection (its certificate, for the line's `clientCert`). */
  readonly socket?: Duplex | undefined;
}

/** Logs the opening of `client`'s tunnel; returns what to call when it closes (joinTunnel's `onClose`). */
export function tunnelOpened(observer: TunnelObserver | undefined, gen: ServedGeneration, a: Admission, client: Duplex, t: TunnelStart): (bytesIn: number, bytesOut: number) => void {
  observer?.inFlight?.tunnel(client);
  const access = observer?.access;
  if (!access) return () => undefined;
  const started = performance.now();
  const d = a.decision;
  const route = 'route' in d ? (gen.index.body.routes[d.route.index]?.name ?? d.route.index) : undefined;
  const address = clientAddress(t.peer, t.headers, gen.plan.body.settings.server.xffNumTrustedHops);
  const base: AccessEntry = {
    msg: t.kind,
    requestId: t.requestId,
    method: t.method,
    // A CONNECT's host is its authority: logged without userinfo, as its path (pathOf).
    host: t.kind === 'tunnel' ? hostOf(t.host) : t.host,
    path: pathOf(t.target),
    ...(route !== undefined ? { route } : {}),
    status: t.status,
    ms: 0,
    ...(d.outcome === 'allow' ? { upstream: d.upstream.url.includes('://') ? upstreamAddress(d.upstream.url) : d.upstream.host } : {}),
    ...(address !== undefined ? { client: address } : {}),
    ...agentAndReferer(t.headers),
    ...(a.session ? { user: a.session.identity.user, ...(a.session.identity.email !== undefined ? { email: a.session.identity.email } : {}), ...definedOnly(identityAttributes(a.session.identity, gen.plan.body)) } : {}),
    ...certificateOf(gen, d, t.socket),
    decision: d.outcome,
    plan: gen.number,
    ...(a.shadow !== undefined ? { shadow: a.shadow } : {}),
  };
  access({ ...base, event: 'open' });
  return (bytesIn, bytesOut) => {
    const cut = observer?.inFlight?.cutting === true;
    access({ ...base, event: 'close', ms: Math.round(performance.now() - started), bytesIn, bytesOut, ...(cut ? { cutBy: 'shutdown' } : {}) });
  };
}

/**
 * The one access line of a CONNECT the gate refused (`event` absent: no tunnel opened), so a refused
 * CONNECT is logged like a refused request, its authority without userinfo (docs/logging.md).
 */
export function tunnelRefused(observer: TunnelObserver | undefined, gen: ServedGeneration, result: GateResult, t: TunnelStart, started: number): void {
  const access = observer?.access;
  if (!access) return;
  const d = result.admitted ? result.decision : undefined;
  const route = d !== undefined && 'route' in d ? (gen.index.body.routes[d.route.index]?.name ?? d.route.index) : undefined;
  const address = clientAddress(t.peer, t.headers, gen.plan.body.settings.server.xffNumTrustedHops);
  access({
    msg: t.kind,
    requestId: t.requestId,
    method: t.method,
    host: hostOf(t.host),
    path: pathOf(t.target),
    ...(route !== undefined ? { route } : {}),
    status: t.status,
    ms: Math.round(performance.now() - started),
    ...(address !== undefined ? { client: address } : {}),
    ...agentAndReferer(t.headers),
    ...(result.admitted && result.session ? { user: result.session.identity.user, ...(result.session.identity.email !== undefined ? { email: result.session.identity.email } : {}), ...definedOnly(identityAttributes(result.session.identity, gen.plan.body)) } : {}),
    ...certificateOf(gen, d, t.socket),
    decision: result.admitted ? result.decision.outcome : result.problem,
    ...(d !== undefined && d.reasons.length > 0 ? { reasons: d.reasons } : {}),
    plan: gen.number,
    ...(result.admitted && result.shadow !== undefined ? { shadow: result.shadow } : {}),
  });
}

/** The replay attributes without their undefined fields (a tunnel's line is built by spreading). */
function definedOnly(a: IdentityAttributes): IdentityAttributes {
  return Object.fromEntries(Object.entries(a).filter(([, v]) => v !== undefined)) as IdentityAttributes;
}

/** The line's `clientCert`, when the route saw one (handler.ts `clientCertificateOf`). */
function certificateOf(gen: ServedGeneration, d: Decision | undefined, socket: Duplex | undefined): Pick<AccessEntry, 'clientCert'> {
  const c = clientCertificateOf(gen, d, socket as Socket | undefined);
  return c === undefined ? {} : { clientCert: c };
}

/** The `User-Agent` and `Referer` of a tunnel's request, for its lines (the access line makes the referer safe). */
function agentAndReferer(headers: RequestHeaders): Pick<AccessEntry, 'userAgent' | 'referer'> {
  const userAgent = headers['user-agent']?.[0];
  const referer = headers['referer']?.[0];
  return { ...(userAgent !== undefined ? { userAgent } : {}), ...(referer !== undefined ? { referer } : {}) };
}
