/**
 * The TLS material of one plan as one immutable value: server certificates (SNI) and client
 * certificate rules, built together so a reload swaps both at once. Also the options a TLS server
 * is created with.
 */
import type tls from 'node:tls';
import type { TLSSocket } from 'node:tls';
import type { PlanBody, PlanSettings, Route } from '../../compiler/plan/types.ts';
import { CertificateStore } from './certificates.ts';
import { uncoveredRouteHosts } from './host-names.ts';
import { ClientCertificatePolicy } from './client-certificates.ts';
import type { ReadMode } from './pem.ts';
import { SelfSignedCache } from './self-signed.ts';
import type { ManagedCertificateSource } from './acme/manager.ts';

export interface TlsMaterial {
  readonly certificates: CertificateStore;
  readonly clients: ClientCertificatePolicy;
  /** Generated certificates, kept across rebuilds. */
  readonly selfSigned: SelfSignedCache;
}

/**
 * The TLS part of a generation: its material, and the connection checks (docs/running.md "TLS") that a
 * request makes against it (the generation's, not whatever is newest when the request is checked).
 */
export interface ListenerTls {
  readonly material: TlsMaterial;
  /** False when the connection's certificate does not cover `host` (→ 421 Misdirected Request). */
  servesHost(socket: TLSSocket, host: string): boolean;
  /** Whether the route requires a valid client certificate (→ 495 without one). */
  required(route: Route | null): boolean;
  clientCertificate(route: Route | null, socket: TLSSocket): { readonly fingerprint: string; readonly valid: boolean } | undefined;
}

/** The `ListenerTls` of `material`. */
export function listenerTls(material: TlsMaterial): ListenerTls {
  return {
    material,
    servesHost: (socket, host) => material.certificates.servesHost(socket.servername, host),
    required: (route) => material.clients.required(route),
    clientCertificate: (route, socket) => material.clients.clientCertificateFor(route, socket),
  };
}

/** Something that holds the TLS material in service; read `current()` once per use. */
export interface TlsMaterialSource {
  current(): TlsMaterial;
}

export interface LoadTlsOptions {
  /** `load` (default) at start; `reload` when watched files changed (see pem.ts). */
  readonly mode?: ReadMode;
  /** The material being replaced: its generated certificates are reused. */
  readonly previous?: TlsMaterial;
  /** Certificates obtained by autocert (runtime/tls/acme/manager.ts). */
  readonly managed?: ManagedCertificateSource;
  /** Told of a route host the certificates as read no longer cover (see `certificateNameWarnings`). */
  readonly warn?: (entry: Record<string, unknown>) => void;
}

/**
 * Reads and checks every certificate, key, client CA and CRL of `body`. Throws `TlsMaterialError`
 * on the first unusable one; nothing is half-built.
 */
export async function loadTlsMaterial(body: PlanBody, options: LoadTlsOptions = {}): Promise<TlsMaterial> {
  const selfSigned = options.previous?.selfSigned ?? new SelfSignedCache();
  const clients = await ClientCertificatePolicy.create(body);
  const certificates = await CertificateStore.create(body, { mode: options.mode ?? 'load', selfSigned, clientCaPems: clients.caPems, ...(options.managed ? { managed: options.managed } : {}) });
  const material = { certificates, clients, selfSigned };
  certificateNameWarnings(body, material, options);
  return material;
}

/** Per material: the route hosts its certificates leave to a generated certificate that the plan's did not. */
const uncoveredAtLoad = new WeakMap<TlsMaterial, ReadonlySet<string>>();

/**
 * Warns of route hosts that the certificates as read do not cover although the plan's certificate
 * names (what the compiler read) did: a certificate file replaced since the compile (a plan file
 * served later, a rotation picked up by a reload) with one for other names. The compiler warned of
 * the hosts its names left uncovered (route-host-without-certificate, SVC3542), so those are not
 * repeated; a host is told once while it stays uncovered across reloads. A warn line names the
 * host and the fix.
 */
function certificateNameWarnings(body: PlanBody, material: TlsMaterial, options: LoadTlsOptions): void {
  const planned = body.settings.tls.certificates.flatMap((c) => c.names);
  const loaded = material.certificates.entries.flatMap((e) => e.names);
  const known = new Set(uncoveredRouteHosts(body, planned));
  const now = new Set(uncoveredRouteHosts(body, loaded).filter((h) => !known.has(h)));
  uncoveredAtLoad.set(material, now);
  const before = options.previous ? uncoveredAtLoad.get(options.previous) : undefined;
  const autocert = body.settings.autocert.enabled ? '' : ', or enable `autocert`';
  for (const host of now) {
    if (before?.has(host)) continue;
    options.warn?.({
      level: 'warn',
      msg: 'no certificate as read covers a route host: it is served a generated self-signed certificate',
      host,
      certificates: loaded,
      help: `install a certificate covering \`${host}\` (the plan's certificate covered it)${autocert}, or set \`insecure_server: true\` if TLS terminates before svc`,
    });
  }
}

/** ALPN protocols offered for `codec_type` (docs/configuration.md "Settings"): `auto` lets the client choose. */
export function alpnProtocols(codecType: PlanSettings['server']['codecType']): string[] {
  switch (codecType) {
    case 'http1':
      return ['http/1.1'];
    case 'http2':
      return ['h2'];
    case 'auto':
      return ['h2', 'http/1.1'];
  }
}

/** Oldest TLS version served. */
export const MIN_TLS_VERSION = 'TLSv1.2';

/**
 * Options for `server.setSecureContext` after a swap: the default certificate of `material` and
 * the minimum version (`setSecureContext` resets every option it is not given).
 */
export function defaultSecureContext(material: TlsMaterial): tls.SecureContextOptions {
  return { ...material.certificates.defaultContextOptions(), minVersion: MIN_TLS_VERSION };
}

/**
 * Options for `tls.createServer`, `https.createServer` or `http2.createSecureServer`: TLS 1.2 at
 * least, ALPN per `codec_type`, the SNI choice of `source.current()` at each handshake, the default
 * certificate for clients without SNI, and a client-certificate request (never a requirement:
 * verification is per route, see client-certificates.ts) when any client CA is configured.
 *
 * `requestCert` is fixed when the server is created; the default certificate is not: after a swap
 * call `server.setSecureContext(defaultSecureContext(source.current()))`
 * (runtime/proxy/listeners.ts does it on every swap).
 */
export function secureContextOptions(settings: Pick<PlanSettings, 'server'>, source: TlsMaterialSource): tls.TlsOptions {
  const m = source.current();
  return {
    ...defaultSecureContext(m),
    ALPNProtocols: alpnProtocols(settings.server.codecType),
    SNICallback: (servername, cb) => source.current().certificates.sniCallback(servername, cb),
    requestCert: m.clients.requested,
    rejectUnauthorized: false,
  };
}
