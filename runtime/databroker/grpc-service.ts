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
import { deviceMessage, deviceOfMessage, type DeviceMessage } from './grpc-device.ts';
import { DeviceStoreError, isDeviceStore, type DeviceStore, type DeviceStoreErrorCode } from '../core/device-store.ts';
import { SessionStoreError, type SessionDirectory, type SessionStore, type SessionStoreErrorCode } from '../core/session-store.ts';

const STATUS_OF: Record<SessionStoreErrorCode | DeviceStoreErrorCode, grpc.status> = {
  SVC_ERR_SESSION_RECORD_INVALID: grpc.status.INVALID_ARGUMENT,
  SVC_ERR_SESSION_REVOKED: grpc.status.FAILED_PRECONDITION,
  SVC_ERR_SESSION_STORE_UNAVAILABLE: grpc.status.UNAVAILABLE,
  SVC_ERR_SESSION_STORE_CLOSED: grpc.status.UNAVAILABLE,
  SVC_ERR_DEVICE_RECORD_INVALID: grpc.status.INVALID_ARGUMENT,
  SVC_ERR_DEVICE_EXISTS: grpc.status.ALREADY_EXISTS,
};

/** The gRPC error for a store failure (see the module comment). */
function storeError(err: unknown): grpc.ServiceError {
  const code: SessionStoreErrorCode | DeviceStoreErrorCode = err instanceof SessionStoreError || err instanceof DeviceStoreError ? err.code : 'SVC_ERR_SESSION_STORE_UNAVAILABLE';
  const message = err instanceof Error ? err.message : 'session store failed';
  if (code === 'SVC_ERR_SESSION_STORE_CLOSED') return grpcError(grpc.status.UNAVAILABLE, 'the data broker is stopping');
  const trailer = new grpc.Metadata();
  trailer.set(ERROR_CODE_TRAILER, code);
  return grpcError(STATUS_OF[code], message, trailer);
}

function isGrpcError(err: unknown): err is grpc.ServiceError {
  return err instanceof Error && typeof (err as Partial<grpc.ServiceError>).code === 'number';
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
  /** As `running`, for ApproveDevice and RevokeDevice by credential id. */
  const runningDevices = new Map<string, OwnCall[]>();

  const offChange = store.onChange((id) => {
    const own = running.get(id)?.find((c) => !c.changed);
    if (own) own.changed = true;
    for (const w of watchers) if (own === undefined || w.origin !== own.origin) w.call.write({ changed: id });
  });
  const offFlush = store.onFlush?.(() => {
    for (const w of watchers) w.call.write({ flush: {} });
  });
  const offDevice = isDeviceStore(store)
    ? store.onDeviceChange((credentialId) => {
        const own = runningDevices.get(credentialId)?.find((c) => !c.changed);
        if (own) own.changed = true;
        for (const w of watchers) if (own === undefined || w.origin !== own.origin) w.call.write({ device_changed: credentialId });
      })
    : undefined;

  /** Runs `body` (a store change to `id`) as the call of `origin`; resolves its value and whether it changed a live record. */
  const asOwnIn = async <T>(calls: Map<string, OwnCall[]>, id: string, origin: string, body: () => Promise<T>): Promise<{ value: T; changed: boolean }> => {
    const call: OwnCall = { origin, changed: false };
    const list = calls.get(id) ?? [];
    list.push(call);
    calls.set(id, list);
    try {
      const value = await body();
      return { value, changed: call.changed };
    } finally {
      list.splice(list.indexOf(call), 1);
      if (list.length === 0) calls.delete(id);
    }
  };
  const asOwn = async (id: string, origin: string, body: () => Promise<void>): Promise<boolean> => (await asOwnIn(running, id, origin, body)).changed;

  /** The store's devices, or UNIMPLEMENTED (a store that keeps none). */
  const devices = (): DeviceStore => {
    if (!isDeviceStore(store)) throw grpcError(grpc.status.UNIMPLEMENTED, 'this data broker keeps no devices');
    return store;
  };

  /** A unary handler answering `body`'s value, or the store's error (a gRPC error as it is). */
  const unary =
    <Req, Res>(body: (request: Req) => Promise<Res>): grpc.handleUnaryCall<Req, Res> =>
    (call, callback) => {
      body(call.request).then(
        (value) => callback(null, value),
        (err: unknown) => callback(isGrpcError(err) ? err : storeError(err)),
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
    // Registered devices (docs/authentication.md "Devices"): `svc devices` lists, approves and
    // revokes; the device page (the proxy, in split mode) reads, registers and counts. A store
    // without devices answers UNIMPLEMENTED.
    ListDevices: unary(async (r: { user_id?: string; public_keys?: boolean }) => {
      const user = r.user_id ?? '';
      const list = await devices().listDevices(user === '' ? undefined : user);
      return { devices: list.map((d) => deviceMessage(d, r.public_keys === true)) };
    }),
    ApproveDevice: unary(async (r: { credential_id?: string; origin?: string }) => {
      const id = r.credential_id ?? '';
      return { value: (await asOwnIn(runningDevices, id, r.origin ?? '', () => devices().approveDevice(id))).value };
    }),
    RevokeDevice: unary(async (r: { credential_id?: string; origin?: string }) => {
      const id = r.credential_id ?? '';
      return { value: (await asOwnIn(runningDevices, id, r.origin ?? '', () => devices().revokeDevice(id))).value };
    }),
    GetDevice: unary(async (r: { credential_id?: string }) => {
      const d = await devices().getDevice(r.credential_id ?? '');
      return d === undefined ? {} : { device: deviceMessage(d, true) };
    }),
    AddDevice: unary(async (r: { device?: DeviceMessage }) => {
      // The store validates the record (SVC_ERR_DEVICE_RECORD_INVALID) and refuses a second registration.
      await devices().addDevice(deviceOfMessage(r.device ?? {}));
      return {};
    }),
    // The counter rule (docs/security.md S59, S63): checked and stored by the store in one step,
    // here in the data broker, never by the caller from a counter it read before.
    AdvanceCounter: unary(async (r: { credential_id?: string; counter?: number }) => {
      const counter = r.counter ?? 0;
      if (!Number.isSafeInteger(counter) || counter < 0 || counter > 0xffffffff) throw new DeviceStoreError('SVC_ERR_DEVICE_RECORD_INVALID', 'counter must be a 32-bit unsigned integer');
      return { outcome: await devices().advanceCounter(r.credential_id ?? '', counter) };
    }),
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
      offDevice?.();
      for (const w of watchers) w.call.end();
      watchers.clear();
    },
  };
}
