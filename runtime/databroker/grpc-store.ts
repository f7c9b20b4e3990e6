/**
 * A {@link SessionStore} & {@link SessionDirectory} that is a client of a data broker service over
 * gRPC (grpc-service.ts, or any implementation of schemas/proto/svc/databroker/v1/databroker.proto):
 * what a proxy or authenticate service uses in distributed mode (docs/distributed.md). Same contract as
 * the memory store (test/runtime/databroker/store-contract.ts).
 *
 * Changes: one Watch stream, reopened whenever it ends (with a short backoff). Its loss and every
 * reopening tell the `onFlush` listeners (caches start over: changes may have been missed). A
 * Put/Delete this client makes tells its own `onChange` listeners when the broker says it changed
 * a live record (the broker does not echo it on this client's Watch).
 *
 * Devices (docs/authentication.md "Devices"): the {@link DeviceStore} of the broker's store, for the
 * device page and the `device` criterion in split mode. An approval or revocation made anywhere
 * reaches `onDeviceChange` through the Watch stream (`device_changed`); one made through this
 * client, when the broker answers that the device existed. The counter rule runs in the broker.
 *
 * INVARIANT (fail-closed): a broker that cannot be reached within `timeoutMs` (`grpc_client_timeout`,
 * runtime/grpc/client.ts retries and fails over meanwhile), or answers something malformed, rejects
 * with `SVC_ERR_SESSION_STORE_UNAVAILABLE`; the gate answers 503 (never "signed out", never "allowed").
 */
import { randomBytes } from 'node:crypto';
import type * as grpc from '@grpc/grpc-js';
import { GrpcClient, ERROR_CODE_TRAILER, type GrpcClientOptions } from '../grpc/client.ts';
import { DATABROKER_SERVICE, databrokerService } from '../grpc/proto.ts';
import { recordOfMessage, sessionMessage, type SessionMessage } from './grpc-record.ts';
import { deviceMessage, deviceOfMessage, type DeviceMessage } from './grpc-device.ts';
import { DeviceStoreError, type CounterOutcome, type DeviceRecord, type DeviceStore, type DeviceStoreErrorCode } from '../core/device-store.ts';
import { SessionStoreError, type SessionDirectory, type SessionRecord, type SessionStore, type SessionStoreErrorCode } from '../core/session-store.ts';

const KNOWN_CODES: Record<SessionStoreErrorCode, true> = {
  SVC_ERR_SESSION_STORE_CLOSED: true,
  SVC_ERR_SESSION_RECORD_INVALID: true,
  SVC_ERR_SESSION_REVOKED: true,
  SVC_ERR_SESSION_STORE_UNAVAILABLE: true,
};

const DEVICE_CODES: Record<DeviceStoreErrorCode, true> = {
  SVC_ERR_DEVICE_EXISTS: true,
  SVC_ERR_DEVICE_RECORD_INVALID: true,
};

const COUNTER_OUTCOMES: ReadonlySet<string> = new Set<CounterOutcome>(['advanced', 'regressed', 'missing']);

const WATCH_RETRY_FIRST_MS = 100;
const WATCH_RETRY_MAX_MS = 2_000;

type WatchEvent = { event?: 'ready' | 'changed' | 'flush' | 'device_changed'; changed?: string; device_changed?: string };

function unavailable(message: string, cause?: unknown): SessionStoreError {
  return new SessionStoreError('SVC_ERR_SESSION_STORE_UNAVAILABLE', message, cause === undefined ? undefined : { cause });
}

/** The store error a gRPC failure stands for (the broker's own code when it sent one). */
function storeErrorOf(err: unknown): SessionStoreError | DeviceStoreError {
  if (err instanceof SessionStoreError || err instanceof DeviceStoreError) return err;
  const e = err as Partial<grpc.ServiceError>;
  const code = e.metadata?.get(ERROR_CODE_TRAILER)[0];
  const details = typeof e.details === 'string' ? e.details : 'no answer';
  if (typeof code === 'string' && Object.hasOwn(KNOWN_CODES, code)) return new SessionStoreError(code as SessionStoreErrorCode, details);
  if (typeof code === 'string' && Object.hasOwn(DEVICE_CODES, code)) return new DeviceStoreError(code as DeviceStoreErrorCode, details);
  return unavailable(`the data broker did not answer: ${details}`, err);
}

export interface GrpcStoreOptions extends Omit<GrpcClientOptions, 'log'> {
  /** Told the watch stream's loss and recovery, once each, and refused credentials (never a secret). */
  readonly log?: (entry: Record<string, unknown>) => void;
}

export class GrpcStore implements SessionStore, SessionDirectory, DeviceStore {
  readonly #client: GrpcClient;
  readonly #origin = randomBytes(16).toString('base64url');
  readonly #listeners = new Set<(id: string) => void>();
  readonly #flushListeners = new Set<() => void>();
  readonly #deviceListeners = new Set<(credentialId: string) => void>();
  readonly #readyWaiters = new Set<() => void>();
  readonly #log: ((entry: Record<string, unknown>) => void) | undefined;
  #watch: grpc.ClientReadableStream<WatchEvent> | undefined;
  #watching = false;
  #everWatched = false;
  #lossLogged = false;
  /** The broker is known unreachable: the Watch stream went down (lost, or never established), and no call has been answered since. */
  #down = false;
  #retryMs = WATCH_RETRY_FIRST_MS;
  #retryTimer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(options: GrpcStoreOptions) {
    this.#log = options.log;
    this.#client = new GrpcClient(DATABROKER_SERVICE, databrokerService(), options);
    this.#openWatch();
  }

  /** Resolves once the Watch stream is established (changes made later reach `onChange`), or after `timeoutMs`. */
  ready(timeoutMs = 10_000): Promise<boolean> {
    if (this.#watching) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.#readyWaiters.delete(done);
        resolve(this.#watching);
      };
      const timer = setTimeout(done, timeoutMs);
      timer.unref();
      this.#readyWaiters.add(done);
    });
  }

  async get(id: string): Promise<SessionRecord | undefined> {
    const res = await this.#call<{ session?: SessionMessage }>('Get', { id });
    if (res.session === undefined) return undefined;
    if (res.session.id !== id) throw unavailable('malformed data broker reply: Get answered another record');
    try {
      return recordOfMessage(res.session);
    } catch (err) {
      throw unavailable('malformed data broker reply: an unreadable record', err);
    }
  }

  async put(record: SessionRecord): Promise<void> {
    this.#assertOpen();
    const session = sessionMessage(record);
    const res = await this.#call<{ changed?: boolean }>('Put', { session, origin: this.#origin });
    if (res.changed === true) this.#changed(record.id);
  }

  async delete(id: string): Promise<void> {
    let res: { changed?: boolean };
    try {
      res = await this.#call<{ changed?: boolean }>('Delete', { id, origin: this.#origin });
    } catch (e) {
      // A sign-out the broker could not record still drops the session from this process's caches.
      if (e instanceof SessionStoreError && e.code === 'SVC_ERR_SESSION_STORE_UNAVAILABLE') this.#changed(id);
      throw e;
    }
    if (res.changed === true) this.#changed(id);
  }

  /**
   * True from the loss of the Watch stream until the broker answers again (a call, or the stream
   * back: calls reconnect at once, the stream after its back-off). A broker whose own store is down
   * answers, so it is not seen here (the caller's failed lookups say it: runtime/sessions/outage-grace.ts).
   */
  unreachable(): boolean {
    return this.#down;
  }

  async isRevoked(id: string): Promise<boolean> {
    return this.#bool(await this.#call('IsRevoked', { id }), 'IsRevoked');
  }

  async consumeOnce(key: string, expiresAtMs: number): Promise<boolean> {
    this.#assertOpen();
    if (!Number.isFinite(expiresAtMs)) throw new SessionStoreError('SVC_ERR_SESSION_RECORD_INVALID', 'consumeOnce needs a finite expiry');
    return this.#bool(await this.#call('ConsumeOnce', { key, expires_at_ms: Math.floor(expiresAtMs) }), 'ConsumeOnce');
  }

  async *sessionIds(): AsyncIterable<string> {
    this.#assertOpen();
    let stream: grpc.ClientReadableStream<{ id?: string }>;
    try {
      stream = await this.#client.serverStream<unknown, { id?: string }>('SessionIds', {});
    } catch (err) {
      throw storeErrorOf(err);
    }
    try {
      for await (const m of stream as AsyncIterable<{ id?: string }>) {
        if (typeof m.id !== 'string') throw unavailable('malformed data broker reply: SessionIds sent no id');
        yield m.id;
      }
    } catch (err) {
      throw storeErrorOf(err);
    } finally {
      stream.cancel();
    }
  }

  async acquireLease(name: string, holder: string, ttlMs: number): Promise<boolean> {
    return this.#bool(await this.#call('AcquireLease', { name, holder, ttl_ms: ttlMs }), 'AcquireLease');
  }

  async releaseLease(name: string, holder: string): Promise<void> {
    await this.#call('ReleaseLease', { name, holder });
  }

  async getDevice(credentialId: string): Promise<DeviceRecord | undefined> {
    const res = await this.#call<{ device?: DeviceMessage }>('GetDevice', { credential_id: credentialId });
    if (res.device === undefined) return undefined;
    const d = this.#device(res.device, 'GetDevice');
    if (d.credentialId !== credentialId) throw unavailable('malformed data broker reply: GetDevice answered another device');
    return d;
  }

  /** @throws {DeviceStoreError} `SVC_ERR_DEVICE_EXISTS` or `SVC_ERR_DEVICE_RECORD_INVALID`, as the broker's store. */
  async addDevice(record: DeviceRecord): Promise<void> {
    this.#assertOpen();
    await this.#call('AddDevice', { device: deviceMessage(record, true) });
  }

  async listDevices(userId?: string): Promise<readonly DeviceRecord[]> {
    const res = await this.#call<{ devices?: DeviceMessage[] }>('ListDevices', { user_id: userId ?? '', public_keys: true });
    const list = (res.devices ?? []).map((m) => this.#device(m, 'ListDevices'));
    if (userId !== undefined && list.some((d) => d.userId !== userId)) throw unavailable('malformed data broker reply: ListDevices answered another user\'s device');
    return list;
  }

  async approveDevice(credentialId: string): Promise<boolean> {
    return this.#deviceChange('ApproveDevice', credentialId);
  }

  async revokeDevice(credentialId: string): Promise<boolean> {
    return this.#deviceChange('RevokeDevice', credentialId);
  }

  /** The counter rule runs in the broker (atomic there); this only carries the counter and its outcome. */
  async advanceCounter(credentialId: string, counter: number): Promise<CounterOutcome> {
    const res = await this.#call<{ outcome?: unknown }>('AdvanceCounter', { credential_id: credentialId, counter });
    if (typeof res.outcome !== 'string' || !COUNTER_OUTCOMES.has(res.outcome)) throw unavailable('malformed data broker reply: AdvanceCounter answered no outcome');
    return res.outcome as CounterOutcome;
  }

  onDeviceChange(listener: (credentialId: string) => void): () => void {
    this.#deviceListeners.add(listener);
    return () => this.#deviceListeners.delete(listener);
  }

  onChange(listener: (id: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  onFlush(listener: () => void): () => void {
    this.#flushListeners.add(listener);
    return () => this.#flushListeners.delete(listener);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#retryTimer);
    this.#watch?.cancel();
    this.#client.close();
    this.#listeners.clear();
    this.#flushListeners.clear();
    this.#deviceListeners.clear();
    for (const w of [...this.#readyWaiters]) w();
  }

  #assertOpen(): void {
    if (this.#closed) throw new SessionStoreError('SVC_ERR_SESSION_STORE_CLOSED', 'session store is closed');
  }

  async #call<T>(method: string, request: unknown): Promise<T> {
    this.#assertOpen();
    try {
      const answer = await this.#client.unary<unknown, T>(method, request);
      this.#down = false;
      return answer;
    } catch (err) {
      if (this.#closed) throw new SessionStoreError('SVC_ERR_SESSION_STORE_CLOSED', 'session store is closed');
      throw storeErrorOf(err);
    }
  }

  #bool(res: unknown, method: string): boolean {
    const value = (res as { value?: unknown }).value ?? false;
    if (typeof value !== 'boolean') throw unavailable(`malformed data broker reply: ${method} answered a non-boolean`);
    return value;
  }

  /** A device record in a reply, or `SVC_ERR_SESSION_STORE_UNAVAILABLE` (fail closed) when malformed. */
  #device(m: DeviceMessage, method: string): DeviceRecord {
    try {
      return deviceOfMessage(m);
    } catch (err) {
      throw unavailable(`malformed data broker reply: ${method} answered an unreadable device`, err);
    }
  }

  /** Approves or revokes; a device that existed is told to this client's own listeners (the broker does not echo it). */
  async #deviceChange(method: 'ApproveDevice' | 'RevokeDevice', credentialId: string): Promise<boolean> {
    const existed = this.#bool(await this.#call(method, { credential_id: credentialId, origin: this.#origin }), method);
    if (existed) this.#deviceChanged(credentialId);
    return existed;
  }

  #deviceChanged(credentialId: string): void {
    for (const l of this.#deviceListeners) {
      try {
        l(credentialId);
      } catch {
        // Same as in #changed.
      }
    }
  }

  #changed(id: string): void {
    for (const l of this.#listeners) {
      try {
        l(id);
      } catch {
        // A listener's failure must not keep the others from dropping the record.
      }
    }
  }

  #flushed(): void {
    for (const l of this.#flushListeners) {
      try {
        l();
      } catch {
        // Same as in #changed.
      }
    }
  }

  #openWatch(): void {
    if (this.#closed) return;
    void this.#client.serverStream<unknown, WatchEvent>('Watch', { origin: this.#origin }).then(
      (stream) => {
        if (this.#closed) {
          stream.cancel();
          return;
        }
        this.#watch = stream;
        stream.on('data', (e: WatchEvent) => this.#onEvent(e));
        // 'status' comes once the stream is over, whatever ended it.
        stream.on('status', () => this.#lost());
        stream.on('error', () => undefined);
      },
      () => this.#lost(),
    );
  }

  #onEvent(e: WatchEvent): void {
    if (e.event === 'ready') {
      const again = this.#everWatched;
      this.#watching = true;
      this.#down = false;
      this.#everWatched = true;
      this.#retryMs = WATCH_RETRY_FIRST_MS;
      if (this.#lossLogged) this.#log?.({ msg: 'data broker change stream back; session caches start over' });
      this.#lossLogged = false;
      if (again) this.#flushed();
      for (const w of [...this.#readyWaiters]) w();
    } else if (e.event === 'changed' && typeof e.changed === 'string') this.#changed(e.changed);
    else if (e.event === 'device_changed' && typeof e.device_changed === 'string') this.#deviceChanged(e.device_changed);
    else if (e.event === 'flush') this.#flushed();
  }

  #lost(): void {
    if (this.#closed) return;
    if (this.#watching) this.#flushed();
    this.#watching = false;
    this.#down = true;
    this.#watch = undefined;
    if (!this.#lossLogged) {
      this.#lossLogged = true;
      this.#log?.({ msg: this.#everWatched ? 'data broker change stream lost; retrying' : 'data broker unreachable at start; retrying' });
    }
    clearTimeout(this.#retryTimer);
    this.#retryTimer = setTimeout(() => this.#openWatch(), this.#retryMs);
    this.#retryTimer.unref();
    this.#retryMs = Math.min(this.#retryMs * 2, WATCH_RETRY_MAX_MS);
  }
}
