/**
 * Times the operations of a store that keeps no figures itself (the memory store) for
 * `storage_operation_duration_ms`: a decorator reporting each call to a {@link StoreObserver}. A
 * store that reports to an observer on its own (the Redis store) is given the observer instead and
 * must not be wrapped, or each operation would count twice.
 */
import type { PlanSettings } from '../../compiler/plan/types.ts';
import { openSessionStore } from './open-store.ts';
import { usesRemoteDatabroker } from '../grpc/plan-options.ts';
import type { RedisStore } from './redis-store.ts';
import type { GrpcObserver } from '../observe/metrics/grpc.ts';
import { isDeviceStore, type DeviceStore } from '../core/device-store.ts';
import { isSessionDirectory, type SessionDirectory, type SessionStore, type StorageOperation, type StoreObserver, type StorePoolFigures } from '../core/session-store.ts';

/** `store`, with every operation reported to `observer` under `backend`. */
export function observedStore(store: SessionStore, observer: StoreObserver, backend: 'memory' | 'redis'): SessionStore {
  const timed = <T>(operation: StorageOperation, call: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    let p: Promise<T>;
    try {
      p = call();
    } catch (e) {
      observer.operation(operation, 'error', backend, performance.now() - started);
      throw e;
    }
    return p.then(
      (v) => {
        observer.operation(operation, 'ok', backend, performance.now() - started);
        return v;
      },
      (e: unknown) => {
        observer.operation(operation, 'error', backend, performance.now() - started);
        throw e;
      },
    );
  };
  const wrapped: SessionStore = {
    get: (id) => timed('get', () => store.get(id)),
    put: (record) => timed('put', () => store.put(record)),
    delete: (id) => timed('delete', () => store.delete(id)),
    ...(store.isRevoked ? { isRevoked: (id: string) => timed('isRevoked', () => store.isRevoked!(id)) } : {}),
    consumeOnce: (key, expiresAtMs) => timed('consumeOnce', () => store.consumeOnce(key, expiresAtMs)),
    onChange: (listener) => store.onChange(listener),
    close: () => store.close(),
  };
  // Registered devices (docs/authentication.md "Devices"), every call timed as `device`.
  const devices: Partial<DeviceStore> = isDeviceStore(store)
    ? {
        getDevice: (id) => timed('device', () => store.getDevice(id)),
        addDevice: (record) => timed('device', () => store.addDevice(record)),
        listDevices: (userId) => timed('device', () => store.listDevices(userId)),
        approveDevice: (id) => timed('device', () => store.approveDevice(id)),
        revokeDevice: (id) => timed('device', () => store.revokeDevice(id)),
        advanceCounter: (id, counter) => timed('device', () => store.advanceCounter(id, counter)),
        onDeviceChange: (listener) => store.onDeviceChange(listener),
      }
    : {};
  if (!isSessionDirectory(store)) return { ...wrapped, ...devices };
  const directory: SessionDirectory = {
    // Iteration is not one operation with a duration: passed through untimed.
    sessionIds: () => store.sessionIds(),
    acquireLease: (name, holder, ttlMs) => timed('acquireLease', () => store.acquireLease(name, holder, ttlMs)),
    releaseLease: (name, holder) => timed('releaseLease', () => store.releaseLease(name, holder)),
  };
  return { ...wrapped, ...devices, ...directory };
}

/**
 * True when the plan's store has a Redis connection pool to export (a Redis store this process
 * opens; not the memory store, not a data broker service's client): only then are the pool metrics
 * registered, since an unlabelled series cannot be left out once it exists.
 */
export function hasStorePool(settings: PlanSettings): boolean {
  return settings.databroker.storage.type === 'redis' && !usesRemoteDatabroker(settings);
}

/**
 * Opens the plan's session store (runtime/databroker/open-store.ts) with its storage operations
 * timed for `metrics` when given: the Redis store reports to the observer itself, a memory store is
 * wrapped. `pool` reads the Redis connection figures (undefined for memory).
 */
export async function openObservedStore(
  settings: PlanSettings,
  observer: StoreObserver | undefined,
  log?: (entry: Record<string, unknown>) => void,
  grpcObserver?: GrpcObserver,
): Promise<{ readonly store: SessionStore; pool(): StorePoolFigures | undefined }> {
  const opened = await openSessionStore(settings, { ...(observer ? { observer } : {}), ...(log ? { log } : {}), ...(grpcObserver ? { grpcObserver } : {}) });
  // Only the memory store is wrapped: the Redis store reports itself, and a data broker client's
  // calls are gRPC client metrics, not storage operations of this process.
  const memory = !usesRemoteDatabroker(settings) && settings.databroker.storage.type === 'memory';
  const store = observer && memory ? observedStore(opened, observer, 'memory') : opened;
  const redis = hasStorePool(settings) ? (opened as RedisStore) : undefined;
  return { store, pool: () => redis?.poolFigures() };
}
