/**
 * The session store a plan asks for (`databroker_storage_type`): memory (one process tree) or Redis
 * (shared by every instance; docs/scale-out.md); or, when the plan names a data
 * broker service (`databroker_service_url(s)`, runtime/grpc/plan-options.ts `usesRemoteDatabroker`),
 * a client of it over gRPC (docs/distributed.md). Made once per process tree, by the
 * single process (serve.ts) or the cluster primary (cluster.ts); a reload that changes the storage
 * settings is refused (`storageChange`), since sessions cannot move between stores.
 *
 * The Redis store (ioredis) and the data broker client (gRPC) are imported only when the plan asks
 * for them (docs/architecture.md §5 "Lazy feature loading"): this module's static imports load
 * neither, so `storageChange` (the reload path) costs no library either.
 */
import type { PlanSettings } from '../../compiler/plan/types.ts';
import { resolveSecretText } from '../plan/secrets.ts';
import type { GrpcObserver } from '../observe/metrics/grpc.ts';
import { databrokerClientTls, planCredentialKey, usesRemoteDatabroker } from '../grpc/plan-options.ts';
import { loadGrpcModule } from '../grpc/library-log.ts';
import { loadFeature } from '../core/load-feature.ts';
import { MemoryStore } from './memory-store.ts';
import { RedisConfigError } from './redis-options.ts';
import type { SessionStore, StoreObserver } from '../core/session-store.ts';

export interface OpenStoreOptions {
  readonly observer?: StoreObserver;
  readonly log?: (entry: Record<string, unknown>) => void;
  /** Told every gRPC call to a data broker service (`svc_grpc_client_*`). */
  readonly grpcObserver?: GrpcObserver;
}

/**
 * Opens the plan's store. A Redis store connects in the background: svc starts while Redis is down
 * (and logs it). Rejects with `RedisConfigError`, `SecretError` or `TlsMaterialError` for unusable
 * settings, `FeatureUnavailableError` when the store's library cannot be loaded.
 */
export async function openSessionStore(settings: PlanSettings, options: OpenStoreOptions = {}): Promise<SessionStore> {
  if (usesRemoteDatabroker(settings)) {
    const { GrpcStore } = await loadGrpcModule(() => import('./grpc-store.ts'));
    return new GrpcStore({
      urls: settings.databroker.serviceUrls,
      credentialKey: planCredentialKey(settings),
      tls: databrokerClientTls(settings),
      timeoutMs: settings.grpc.clientTimeoutMs,
      dnsRoundRobin: settings.grpc.clientDnsRoundRobin,
      ...(options.grpcObserver ? { observer: options.grpcObserver } : {}),
      ...(options.log ? { log: options.log } : {}),
    });
  }
  const storage = settings.databroker.storage;
  if (storage.type === 'memory') return new MemoryStore();
  // The settings are checked before the library is loaded.
  const secret = storeSecret(settings);
  const { RedisStore } = await loadFeature('Redis session storage', () => import('./redis-store.ts'));
  return new RedisStore({ storage, secret, ...(options.observer ? { observer: options.observer } : {}), ...(options.log ? { log: options.log } : {}) });
}

/** `shared_secret`, or `cookie_secret` standing in (runtime/core/keys.ts), decoded. */
function storeSecret(settings: PlanSettings): Buffer {
  const secret = settings.mode.sharedSecret ?? settings.cookie.secret;
  if (secret === null) throw new RedisConfigError('the Redis session store needs shared_secret (or cookie_secret) to seal what it stores');
  const what = settings.mode.sharedSecret ? 'shared_secret' : 'cookie_secret';
  return Buffer.from(resolveSecretText(secret, what).trim(), 'base64');
}

/**
 * Why a new plan cannot keep the running session store, or undefined when it can: the storage
 * settings, and for Redis the secret that seals its values, are fixed while svc runs.
 */
export function storageChange(a: PlanSettings, b: PlanSettings): string | undefined {
  const shape = (s: PlanSettings) => {
    const st = s.databroker.storage;
    const fp = (x: { readonly fingerprint: string } | null) => x?.fingerprint ?? null;
    const pem = (x: { readonly sha256: string } | null) => x?.sha256 ?? null;
    return JSON.stringify([st.type, fp(st.connectionString), pem(st.caFile), pem(st.certFile), fp(st.keyFile), st.tlsSkipVerify, st.type === 'redis' ? fp(s.mode.sharedSecret ?? s.cookie.secret) : null]);
  };
  return shape(a) === shape(b)
    ? undefined
    : 'the session storage settings changed (databroker_storage_*, or the shared_secret that seals Redis values): restart svc to apply them';
}
