/**
 * The settings a reload cannot change while svc runs: each check says why a new plan needs a restart,
 * or undefined when the running process can serve it. The reloader refuses such a plan and keeps the
 * old one (runtime/generation/reload.ts); the storage and autocert checks live beside their owners.
 */
import type { PlanSettings } from '../../compiler/plan/types.ts';

/**
 * Why a new plan cannot be served by the running listeners, or undefined when it can. The metrics
 * listener's shape counts too (its address, TLS or not, client certificates or not); its material
 * (credential, certificate, CA) follows reloads (runtime/observe/metrics/listener.ts).
 */
export function listenerChange(a: PlanSettings, b: PlanSettings): string | undefined {
  const shape = (s: PlanSettings) => JSON.stringify([s.server.address, s.server.insecure, s.server.codecType, s.server.useProxyProtocol, s.server.httpRedirectAddress]);
  if (shape(a) !== shape(b)) return 'the listener settings changed (address, insecure_server, codec_type, use_proxy_protocol or http_redirect_addr): restart svc to apply them';
  const metrics = (s: PlanSettings) => JSON.stringify([s.metrics.address, s.metrics.certificate !== null, s.metrics.clientCa !== null]);
  if (metrics(a) !== metrics(b)) return 'the metrics listener settings changed (metrics_address, or turning metrics_certificate or metrics_client_ca on or off): restart svc to apply them';
  return undefined;
}

/**
 * Why a new plan cannot keep the running gRPC listener and clients, or undefined when it can: the
 * role, the gRPC address and security, the data broker URLs and the shared secret are fixed.
 */
export function grpcChange(a: PlanSettings, b: PlanSettings): string | undefined {
  const shape = (s: PlanSettings) =>
    JSON.stringify([s.mode.services, s.grpc, s.databroker.serviceUrls, s.databroker.internalServiceUrls, s.tls.overrideCertificateName, s.tls.certificateAuthority?.sha256 ?? null, (s.mode.sharedSecret ?? s.cookie.secret)?.fingerprint ?? null]);
  return shape(a) === shape(b)
    ? undefined
    : 'the gRPC settings changed (services, grpc_*, databroker_service_url(s), databroker_internal_service_url(s), certificate_authority, override_certificate_name or the shared secret): restart svc to apply them';
}
