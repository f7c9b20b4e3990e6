/**
 * What a plan says about gRPC between svc services (docs/grpc.md; `grpc_*`, `shared_secret`,
 * `databroker_service_url(s)`, `databroker_internal_service_url(s)`, `certificate_authority`,
 * `override_certificate_name`), as options for server.ts and client.ts.
 *
 * - The credential key is derived from `shared_secret`, or `cookie_secret` standing in when only
 *   that is set (all-in-one mode), as the Redis store's seal does: every service of a deployment
 *   must have the same one.
 * - `grpc_address` with no host (the default `:5443`) listens on loopback in all-in-one mode (docs/grpc.md:
 *   the all-in-one data broker is for tools and extra proxies on the same machine) and on every
 *   interface otherwise.
 * - `grpc_insecure: false` means TLS on both ends: the server presents the certificate chosen for
 *   the host of the first `databroker_internal_service_url` (as the HTTPS listener chooses one: a
 *   configured certificate, else a generated one); a client checks the server's certificate against
 *   the system's roots and `certificate_authority` and against `override_certificate_name`, else
 *   the host of the first `databroker_internal_service_url` when set apart from the service URLs,
 *   else each URL's own host. The scheme of a service URL only gives its default port.
 */
import { rootCertificates } from 'node:tls';
import type { PlanBody, PlanSettings } from '../../compiler/plan/types.ts';
import { readPemSource } from '../tls/pem.ts';
import { loadTlsMaterial, type TlsMaterial } from '../tls/material.ts';
import { resolveSecretText } from '../plan/secrets.ts';
import type { ClientTls } from './client.ts';
import { serviceCredentialKey } from './credential.ts';
import { SvcError } from '../core/errors.ts';
import type { ServerTls } from './server.ts';

/** The default URL of the all-in-one data broker (compiler/ir/lower-settings.ts). */
const LOCAL_DATABROKER_URL = 'http://localhost:5443/';

/** The service credential key of this deployment. Throws `SVC_ERR_GRPC_CONFIG` when neither secret is set. */
export function planCredentialKey(settings: PlanSettings): Uint8Array {
  const secret = settings.mode.sharedSecret ?? settings.cookie.secret;
  if (secret === null) throw new SvcError('SVC_ERR_GRPC_CONFIG', 'gRPC between svc services needs shared_secret (the same on every service)');
  const what = settings.mode.sharedSecret ? 'shared_secret' : 'cookie_secret';
  return serviceCredentialKey(Buffer.from(resolveSecretText(secret, what).trim(), 'base64'));
}

/** The `host:port` the gRPC server binds (`override`: tests and `--grpc-listen`). */
export function grpcBindAddress(settings: PlanSettings, override?: { readonly host: string; readonly port: number }): string {
  const a = override ?? settings.grpc.address;
  const host = a.host !== '' ? a.host : settings.mode.allInOne ? '127.0.0.1' : '0.0.0.0';
  return `${host.includes(':') ? `[${host}]` : host}:${a.port}`;
}

/**
 * True when this process uses a data broker service instead of holding the store itself: always
 * in the proxy, authenticate and authorize roles; in all-in-one mode when `databroker_service_url(s)` names
 * another place than the all-in-one default.
 */
export function usesRemoteDatabroker(settings: PlanSettings): boolean {
  const s = settings.mode.services;
  if (s === 'databroker') return false;
  if (s !== 'all') return true;
  const urls = settings.databroker.serviceUrls;
  return !(urls.length === 1 && urls[0] === LOCAL_DATABROKER_URL);
}

/** The host of a URL, or undefined. */
function hostOf(url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  try {
    return new URL(url).hostname.replace(/^\[(.*)\]$/, '$1') || undefined;
  } catch {
    return undefined;
  }
}

/** The client TLS options for the data broker, or null with `grpc_insecure`. */
export function databrokerClientTls(settings: PlanSettings): ClientTls | null {
  if (settings.grpc.insecure) return null;
  const ca = settings.tls.certificateAuthority;
  const internal = settings.databroker.internalServiceUrls;
  // (The all-in-one default internal URL is not a choice: it names this machine's own broker.)
  const chosen = internal.length > 0 && !(internal.length === 1 && internal[0] === LOCAL_DATABROKER_URL);
  const apart = chosen && internal.join(' ') !== settings.databroker.serviceUrls.join(' ');
  const serverName = settings.tls.overrideCertificateName ?? (apart ? hostOf(internal[0]) : undefined);
  // As for upstreams (runtime/upstream/pools.ts): the system's roots and certificate_authority.
  return { ...(ca ? { ca: [...rootCertificates, readPemSource(ca, 'certificate_authority')].join('\n') } : {}), ...(serverName ? { serverName } : {}) };
}

/** The name the data broker's certificate is chosen for. */
export function databrokerCertificateName(settings: PlanSettings): string {
  return hostOf(settings.databroker.internalServiceUrls[0]) ?? hostOf(settings.databroker.serviceUrls[0]) ?? 'localhost';
}

/** The name the authorize service's certificate is chosen for. */
function authorizeCertificateName(settings: PlanSettings): string {
  return hostOf(settings.authorize.internalServiceUrl ?? undefined) ?? hostOf(settings.authorize.serviceUrls[0]) ?? 'localhost';
}

/**
 * The server TLS of the data broker, or null with `grpc_insecure`. `material`: the HTTPS listener's
 * (null with `insecure_server`, then the plan's certificates are read here).
 */
export async function databrokerServerTls(body: PlanBody, material: TlsMaterial | null): Promise<ServerTls | null> {
  return grpcServerTls(body, material, databrokerCertificateName(body.settings));
}

/** The server TLS of the authorize service, or null with `grpc_insecure`. */
export async function authorizeServerTls(body: PlanBody, material: TlsMaterial | null): Promise<ServerTls | null> {
  return grpcServerTls(body, material, authorizeCertificateName(body.settings));
}

/** The client TLS options for the authorize service, or null with `grpc_insecure`. */
export function authorizeClientTls(settings: PlanSettings): ClientTls | null {
  if (settings.grpc.insecure) return null;
  const ca = settings.tls.certificateAuthority;
  const internal = settings.authorize.internalServiceUrl;
  const serverName = settings.tls.overrideCertificateName ?? (internal !== null ? hostOf(internal) : undefined);
  return { ...(ca ? { ca: [...rootCertificates, readPemSource(ca, 'certificate_authority')].join('\n') } : {}), ...(serverName ? { serverName } : {}) };
}

/** A gRPC server's TLS: the certificate chosen for `name` (a configured or managed one, else a generated one). */
async function grpcServerTls(body: PlanBody, material: TlsMaterial | null, name: string): Promise<ServerTls | null> {
  if (body.settings.grpc.insecure) return null;
  const m = material ?? (await loadTlsMaterial(body));
  const choice = m.certificates.choose(name);
  if (choice.kind === 'configured' && choice.match !== 'default') return { cert: choice.entry.certPem, key: choice.entry.keyPem };
  if (choice.kind === 'managed') return { cert: choice.certificate.chainPem, key: choice.certificate.keyPem };
  // No certificate for the name: a generated one (clients must then be told to trust it; docs/grpc.md).
  const generated = await m.selfSigned.get(name);
  return { cert: generated.certPem, key: generated.keyPem };
}
