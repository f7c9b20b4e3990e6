/**
 * The proxy role's authorize client from the plan (docs/distributed.md): `authorize_service_url(s)` (several
 * are balanced and failed over), the credential from `shared_secret`, TLS unless `grpc_insecure`
 * (checked against `authorize_internal_service_url`'s host or `override_certificate_name`),
 * `grpc_client_timeout` and `grpc_client_dns_roundrobin`.
 */
import type { PlanSettings } from '../../compiler/plan/types.ts';
import type { SessionStore } from '../core/session-store.ts';
import { authorizeClientTls, planCredentialKey } from '../grpc/plan-options.ts';
import type { GrpcObserver } from '../observe/metrics/grpc.ts';
import { RemoteAuthorizer } from './remote-authorizer.ts';

export function openAuthorizer(settings: PlanSettings, store: SessionStore, options: { readonly observer?: GrpcObserver; readonly log?: (entry: Record<string, unknown>) => void } = {}): RemoteAuthorizer {
  return new RemoteAuthorizer({
    urls: settings.authorize.serviceUrls,
    credentialKey: planCredentialKey(settings),
    tls: authorizeClientTls(settings),
    timeoutMs: settings.grpc.clientTimeoutMs,
    dnsRoundRobin: settings.grpc.clientDnsRoundRobin,
    store,
    ...(options.observer ? { observer: options.observer } : {}),
    ...(options.log ? { log: options.log } : {}),
  });
}
