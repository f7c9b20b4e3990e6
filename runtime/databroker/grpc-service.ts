/**
 * The data broker served over gRPC (schemas/proto/svc/databroker/v1/databroker.proto): every method
 * answered from one {@link SessionStore} & {@link SessionDirectory} (memory or Redis), changes
 * streamed to every watching client. runtime/grpc/server.ts checks the credential before any
 * handler here runs.
 *
 * Own changes: a Put or Delete names its caller's watch `origin`. The store's change notification
 * that call causes is answered as `changed: true` in the reply (the caller tells its own listeners)
 * and not sent on that caller's Watch stream; every other watcher gets it. So a client hears each
 * change once, as the memory store's listeners do.
 *
 * Errors: a store error is sent with the status of the proto's table and the trailer
 * `svc-error-code` holding the {@link SessionStoreErrorCode}, which clients restore; "store closed"
 * (this broker is stopping) is UNAVAILABLE without the trailer, so clients try another URL.
 */
import * as grpc from '@grpc/grpc-js';
import { ERROR_CODE_TRAILER } from '../grpc/client.ts';
import { DATABROKER_SERVICE, databrokerService } from '../grpc/proto.ts';
import { grpcError, type ServedService } from '../grpc/server.ts';
import { recordOfMessage, sessionMessage, type SessionMessage } from './grpc-record.ts';
import { isDeviceStore } from '../core/device-store.ts';
import { SessionStoreError, type SessionDirectory, type SessionStore, type SessionStoreErrorCode } from '../core/session-store.ts';

const STATUS_OF: Record<SessionStoreErrorCode, grpc.status> = {
  SVC_ERR_SESSION_RECORD_INVALID: grpc.status.INVALID_ARGUMENT,
  SVC_ERR_SESSION_REVOKED: grpc.status.FAILED_PRECONDITION,
  SVC_ERR_SESSION_STORE_UNAVAILABLE: grpc.status.UNAVAILABLE,
  SVC_ERR_SESSION_STORE_CLOSED: grpc.status.UNAVAILABLE,
};

/** The gRPC error for a store failure (see the module comment). */
function storeError(err: unknown): grpc.ServiceError {
  const code: SessionStoreErrorCode = err instanceof SessionStoreError ? err.code : 'SVC_ERR_SESSION_STORE_UNAVAILABLE';
  const message = err instanceof Error ? err.message : 'session store failed';
  if (code === 'SVC_ERR_SESSION_STORE_CLOSED') return grpcError(grpc.status.UNAVAILABLE, 'the data broker is stopping');
  const trailer = new grpc.Metadata();
  trailer.set(ERROR_CODE_TRAILER, code);
  return grpcError(STATUS_OF[code], message, trailer);
}

interface Watcher {
  readonly origin: string;
  readonly call: grpc.ServerWritableStream<{ origin?: string }, unknown>;
}

/** One Put or Delete running, and whether the change it caused was heard. */
interface OwnCall {
  readonly origin: string;
  changed: boolean;
}

export interface DatabrokerService extends ServedService {
  /** Ends every Watch stream (clients reconnect elsewhere or later) and stops listening to the store. */
  close(): void;
}

/** The data broker over `store` (which it never closes). */
export function databrokerGrpcService(store: SessionStore & SessionDirectory): DatabrokerService {
  const watchers = new Set<Watcher>();
  const running = new Map<string, OwnCall[]>();

  const offChange = store.onChange((id) => {
    const own = running.get(id)?.find((c) => !c.changed);
    if (own) own.changed = true;
    for (const w of watchers) if (own === undefined || w.origin !== own.origin) w.call.write({ changed: id });
  });
  const offFlush = store.onFlush?.(() => {
    for (const w of watchers) w.call.write({ flush: {} });
  });

  /** Runs `body` (a store change to `id`) as the call of `origin`; resolves whether it changed a live record. */
  const asOwn = async (id: string, origin: string, body: () => Promise<void>): Promise<boolean> => {
    const call: OwnCall = { origin, changed: false };
    const list = running.get(id) ?? [];
    list.push(call);
    running.set(id, list);
    try {
      await body();
      return call.changed;
    } finally {
      list.splice(list.indexOf(call), 1);
      if (list.length === 0) running.delete(id);
    }
  };

  /** A unary handler answering `body`'s value, or the store's error. */
  const unary =
    <Req, Res>(body: (request: Req) => Promise<Res>): grpc.handleUnaryCall<Req, Res> =>
    (call, callback) => {
      body(call.request).then(
        (value) => callback(null, value),
        (err: unknown) => callback(storeError(err)),
      );
    };

  const ttl = (value: unknown): number => {
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) throw new SessionStoreError('SVC_ERR_SESSION_RECORD_INVALID', 'ttl_ms must be a positive integer');
    return value;
  };

  const handlers: DatabrokerService['handlers'] = {
    Get: unary(async (r: { id?: string }) => {
      const record = await store.get(r.id ?? '');
      return record === undefined ? {} : { session: sessionMessage(record) };
    }),
    Put: unary(async (r: { session?: SessionMessage; origin?: string }) => {
      const record = recordOfMessage(r.session ?? {});
      return { changed: await asOwn(record.id, r.origin ?? '', () => store.put(record)) };
    }),
    Delete: unary(async (r: { id?: string; origin?: string }) => {
      const id = r.id ?? '';
      return { changed: await asOwn(id, r.origin ?? '', () => store.delete(id)) };
    }),
    IsRevoked: unary(async (r: { id?: string }) => ({ value: store.isRevoked ? await store.isRevoked(r.id ?? '') : false })),
    ConsumeOnce: unary(async (r: { key?: string; expires_at_ms?: number }) => ({ value: await store.consumeOnce(r.key ?? '', r.expires_at_ms ?? 0) })),
    AcquireLease: unary(async (r: { name?: string; holder?: string; ttl_ms?: number }) => ({ value: await store.acquireLease(r.name ?? '', r.holder ?? '', ttl(r.ttl_ms)) })),
    ReleaseLease: unary(async (r: { name?: string; holder?: string }) => {
      await store.releaseLease(r.name ?? '', r.holder ?? '');
      return {};
    }),
    SessionIds: (call: grpc.ServerWritableStream<unknown, { id: string }>) => {
      void (async () => {
        try {
          for await (const id of store.sessionIds()) {
            if (call.cancelled) return;
            if (!call.write({ id })) await new Promise((r) => call.once('drain', r));
          }
          call.end();
        } catch (err) {
          call.emit('error', storeError(err));
        }
      })();
    },
    // Registered devices (docs/authentication.md "Devices"), for `svc devices`. A store without
    // devices answers UNIMPLEMENTED.
    ListDevices: (call: grpc.ServerUnaryCall<{ user_id?: string }, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      if (!isDeviceStore(store)) return callback(grpcError(grpc.status.UNIMPLEMENTED, 'this data broker keeps no devices'));
      const user = call.request.user_id ?? '';
      store.listDevices(user === '' ? undefined : user).then(
        (devices) => callback(null, { devices: devices.map((d) => ({ credential_id: d.credentialId, user_id: d.userId, type: d.type, approved: d.approved, counter: d.counter, transports: [...d.transports], created_at_ms: d.createdAtMs })) }),
        (err: unknown) => callback(storeError(err)),
      );
    },
    ApproveDevice: (call: grpc.ServerUnaryCall<{ credential_id?: string }, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      if (!isDeviceStore(store)) return callback(grpcError(grpc.status.UNIMPLEMENTED, 'this data broker keeps no devices'));
      store.approveDevice(call.request.credential_id ?? '').then(
        (value) => callback(null, { value }),
        (err: unknown) => callback(storeError(err)),
      );
    },
    RevokeDevice: (call: grpc.ServerUnaryCall<{ credential_id?: string }, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      if (!isDeviceStore(store)) return callback(grpcError(grpc.status.UNIMPLEMENTED, 'this data broker keeps no devices'));
      store.revokeDevice(call.request.credential_id ?? '').then(
        (value) => callback(null, { value }),
        (err: unknown) => callback(storeError(err)),
      );
    },
    Watch: (call: grpc.ServerWritableStream<{ origin?: string }, unknown>) => {
      const watcher: Watcher = { origin: call.request.origin ?? '', call };
      watchers.add(watcher);
      const drop = (): void => void watchers.delete(watcher);
      call.on('cancelled', drop);
      call.on('close', drop);
      call.on('error', drop);
      call.write({ ready: {} });
    },
  };

  return {
    name: DATABROKER_SERVICE,
    definition: databrokerService(),
    handlers,
    close() {
      offChange();
      offFlush?.();
      for (const w of watchers) w.call.end();
      watchers.clear();
    },
  };
}
