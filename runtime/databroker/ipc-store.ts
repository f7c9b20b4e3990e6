/**
 * The session store of `svc run --workers N` (docs/scale-out.md: the in-memory data broker is ONE instance).
 * The primary holds the only {@link SessionStore} and answers its workers over the node:cluster IPC
 * channel ({@link serveStoreToWorkers}); each worker talks to it through a {@link WorkerStore}.
 *
 * Protocol (every message is a plain JSON object; the `type`s never collide with the plan messages
 * of runtime/process/worker.ts, and each side ignores every `type` that is not its own):
 *
 * - worker → primary: `{ type: 'store', id, op, args }`, `op` one of {@link STORE_OPS}.
 * - primary → that worker: `{ type: 'store-reply', id, ok: true, value }` or
 *   `{ type: 'store-reply', id, ok: false, code, message }` (`code` is the store's own
 *   {@link SessionStoreErrorCode}, so `SVC_ERR_SESSION_REVOKED` stays itself across the channel).
 * - primary → every live worker: `{ type: 'store-changed', sessionId }` for every `onChange` of the
 *   primary's store. A worker's IPC messages arrive in order, so a `delete` a worker makes is
 *   announced to it before its reply.
 * - primary → every live worker: `{ type: 'store-flushed' }` for every `onFlush` of the primary's
 *   store (a shared store's change channel came back: changes may have been missed).
 * - primary → every live worker: `{ type: 'store-device-changed', credentialId }` for every
 *   `onDeviceChange` of the primary's store (a device approved or revoked: docs/authentication.md "Devices").
 * - primary → every live worker: `{ type: 'store-reachability', unreachable }` for every
 *   `onReachability` of the primary's store (its Redis connection went or came back), so a worker
 *   knows at once, as the primary does, that a sign-in cannot complete (outage-grace.ts).
 *
 * Serialization: the cluster keeps Node's default `'json'` IPC serialization. Records are JSON values
 * (claims are identity-provider JSON), and JSON drops `undefined` properties, which is what the
 * optional fields of {@link SessionRecord} mean; `'advanced'` would add nothing a record may hold.
 *
 * Fail closed: a worker's call that times out, meets a closed channel or gets a malformed reply
 * rejects with `SVC_ERR_SESSION_STORE_UNAVAILABLE`; callers treat a rejection as "no session".
 */
import { SessionStoreError, type SessionRecord, type SessionStore, type SessionStoreErrorCode } from '../core/session-store.ts';
import { DeviceStoreError, isDeviceStore, type DeviceStoreErrorCode, type CounterOutcome, type DeviceRecord, type DeviceStore } from '../core/device-store.ts';
import { deepFreeze } from '../../compiler/plan/deep-freeze.ts';

/** The store operations a worker may ask the primary for. */
const STORE_OPS = ['get', 'put', 'delete', 'isRevoked', 'consumeOnce', 'getDevice', 'addDevice', 'listDevices', 'approveDevice', 'revokeDevice', 'advanceCounter'] as const;
/** One of {@link STORE_OPS}. */
export type StoreOp = (typeof STORE_OPS)[number];

/** A worker's request to the primary's store. */
export interface StoreRequest {
  readonly type: 'store';
  /** Unique among the requests one worker process has pending. */
  readonly id: number;
  readonly op: StoreOp;
  readonly args: readonly unknown[];
}

/** The primary's answer to one {@link StoreRequest}, sent to the worker that asked. */
export type StoreReply =
  | { readonly type: 'store-reply'; readonly id: number; readonly ok: true; readonly value?: unknown }
  | { readonly type: 'store-reply'; readonly id: number; readonly ok: false; readonly code: SessionStoreErrorCode | DeviceStoreErrorCode; readonly message: string };

/** The primary's broadcast that a record was replaced or deleted (drop it from any cache). */
export interface StoreChanged {
  readonly type: 'store-changed';
  readonly sessionId: string;
}

/** The primary's broadcast that its store may have missed changes (drop every cache entry). */
export interface StoreFlushed {
  readonly type: 'store-flushed';
}

/** The primary's broadcast that a device was approved or revoked (drop the sessions cached with it). */
export interface StoreDeviceChanged {
  readonly type: 'store-device-changed';
  readonly credentialId: string;
}

/** The primary's broadcast that its store's reachability changed ({@link SessionStore.unreachable}). */
export interface StoreReachability {
  readonly type: 'store-reachability';
  readonly unreachable: boolean;
}

/** Every message the primary sends about the store. */
export type FromPrimaryStore = StoreReply | StoreChanged | StoreFlushed | StoreReachability | StoreDeviceChanged;

/** Default time a worker waits for the primary's answer. */
const DEFAULT_STORE_TIMEOUT_MS = 2_000;
/** Default cap on a worker's unanswered requests; past it calls fail at once (bounded memory). */
const DEFAULT_MAX_PENDING = 10_000;

// Every SessionStoreErrorCode, checked exhaustive by the compiler: a reply carrying any other code
// is malformed and reads as unavailable.
const KNOWN_CODES = {
  SVC_ERR_SESSION_STORE_CLOSED: true,
  SVC_ERR_SESSION_RECORD_INVALID: true,
  SVC_ERR_SESSION_REVOKED: true,
  SVC_ERR_SESSION_STORE_UNAVAILABLE: true,
} as const satisfies Record<SessionStoreErrorCode, true>;

function isKnownCode(code: unknown): code is SessionStoreErrorCode {
  return typeof code === 'string' && Object.hasOwn(KNOWN_CODES, code);
}

function unavailable(message: string, cause?: unknown): SessionStoreError {
  return new SessionStoreError('SVC_ERR_SESSION_STORE_UNAVAILABLE', message, cause === undefined ? undefined : { cause });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// ---------------------------------------------------------------------------------------------
// Primary side

/** The part of a node:cluster `Worker` that {@link serveStoreToWorkers} uses. */
export interface StoreWorkerPort {
  isConnected(): boolean;
  /** Sends over the IPC channel; a failure goes to `callback` (never an unhandled `'error'` event). */
  send(message: FromPrimaryStore, callback: (error: Error | null) => void): unknown;
}

/** The part of node:cluster's `cluster` that {@link serveStoreToWorkers} uses; tests inject a fake. */
export interface StoreClusterPort {
  /** The live workers, read at every broadcast (so workers forked later are included). */
  readonly workers?: NodeJS.Dict<StoreWorkerPort> | undefined;
  on(event: 'message', listener: (worker: StoreWorkerPort, message: unknown) => void): unknown;
  off(event: 'message', listener: (worker: StoreWorkerPort, message: unknown) => void): unknown;
}

/**
 * Answers the store requests of every cluster worker from `store` and broadcasts the store's
 * changes to every live worker. Call it once in the primary; `close()` stops answering new requests
 * and broadcasting (requests already running still get their reply). It never closes `store`.
 */
export function serveStoreToWorkers(store: SessionStore, cluster: StoreClusterPort): { close(): void } {
  let closed = false;
  // A send to a worker that just died fails; that worker is gone and its caller with it.
  const ignore = (): void => {};
  const sendTo = (worker: StoreWorkerPort, message: FromPrimaryStore): void => {
    try {
      if (worker.isConnected()) worker.send(message, ignore);
    } catch {
      // Same as above: a dead channel is not the primary's failure.
    }
  };

  const onMessage = (worker: StoreWorkerPort, message: unknown): void => {
    if (closed || !isObject(message) || message['type'] !== 'store') return;
    const id = message['id'];
    // Without a usable id there is nobody to answer; the worker's own timeout fails the call.
    if (typeof id !== 'number' || !Number.isSafeInteger(id)) return;
    void answer(store, message).then(
      (value) => sendTo(worker, { type: 'store-reply', id, ok: true, value }),
      (err: unknown) => {
        const code = err instanceof SessionStoreError || err instanceof DeviceStoreError ? err.code : 'SVC_ERR_SESSION_STORE_UNAVAILABLE';
        const text = err instanceof Error ? err.message : String(err);
        sendTo(worker, { type: 'store-reply', id, ok: false, code, message: text });
      },
    );
  };

  const unsubscribe = store.onChange((sessionId) => {
    if (closed) return;
    const message: StoreChanged = { type: 'store-changed', sessionId };
    for (const worker of Object.values(cluster.workers ?? {})) if (worker) sendTo(worker, message);
  });
  // A shared store that may have missed changes (its channel came back): every worker's cache starts over.
  const unsubscribeFlush =
    store.onFlush?.(() => {
      if (closed) return;
      const message: StoreFlushed = { type: 'store-flushed' };
      for (const worker of Object.values(cluster.workers ?? {})) if (worker) sendTo(worker, message);
    }) ?? (() => undefined);
  const unsubscribeDevices = isDeviceStore(store)
    ? store.onDeviceChange((credentialId) => {
        if (closed) return;
        const message: StoreDeviceChanged = { type: 'store-device-changed', credentialId };
        for (const worker of Object.values(cluster.workers ?? {})) if (worker) sendTo(worker, message);
      })
    : () => undefined;
  const unsubscribeReachability =
    store.onReachability?.((unreachable) => {
      if (closed) return;
      const message: StoreReachability = { type: 'store-reachability', unreachable };
      for (const worker of Object.values(cluster.workers ?? {})) if (worker) sendTo(worker, message);
    }) ?? (() => undefined);
  cluster.on('message', onMessage);

  return {
    close() {
      if (closed) return;
      closed = true;
      cluster.off('message', onMessage);
      unsubscribe();
      unsubscribeFlush();
      unsubscribeDevices();
      unsubscribeReachability();
    },
  };
}

/** Runs one checked request against `store`; a malformed request rejects (no store call is made). */
async function answer(store: SessionStore, request: Record<string, unknown>): Promise<unknown> {
  const op = request['op'];
  const args = request['args'];
  if (!Array.isArray(args)) throw unavailable('malformed store request: args is not an array');
  const [a, b] = args as unknown[];
  switch (op) {
    case 'get':
      return store.get(stringArg(a, op));
    case 'put':
      // The store validates the record itself (SVC_ERR_SESSION_RECORD_INVALID).
      if (!isObject(a)) throw unavailable('malformed store request: put needs a record');
      return store.put(a as unknown as SessionRecord);
    case 'delete':
      return store.delete(stringArg(a, op));
    case 'isRevoked': {
      const id = stringArg(a, op);
      // A store without isRevoked tracks no revocation marks: its get already refuses deleted ids.
      return store.isRevoked ? store.isRevoked(id) : false;
    }
    case 'consumeOnce':
      if (typeof b !== 'number' || !Number.isFinite(b)) throw unavailable('malformed store request: consumeOnce needs an expiry');
      return store.consumeOnce(stringArg(a, op), b);
    case 'getDevice':
    case 'addDevice':
    case 'listDevices':
    case 'approveDevice':
    case 'revokeDevice':
    case 'advanceCounter': {
      if (!isDeviceStore(store)) throw unavailable('the primary\'s session store keeps no devices');
      if (op === 'getDevice') return store.getDevice(stringArg(a, op));
      // The store validates the record itself (SVC_ERR_DEVICE_RECORD_INVALID).
      if (op === 'addDevice') {
        if (!isObject(a)) throw unavailable('malformed store request: addDevice needs a record');
        return store.addDevice(a as unknown as DeviceRecord);
      }
      if (op === 'listDevices') return store.listDevices(a === undefined || a === null ? undefined : stringArg(a, op));
      if (op === 'approveDevice') return store.approveDevice(stringArg(a, op));
      if (op === 'revokeDevice') return store.revokeDevice(stringArg(a, op));
      if (typeof b !== 'number' || !Number.isSafeInteger(b)) throw unavailable('malformed store request: advanceCounter needs a counter');
      return store.advanceCounter(stringArg(a, op), b);
    }
    default:
      throw unavailable(`malformed store request: unknown op ${JSON.stringify(op)}`);
  }
}

function stringArg(value: unknown, op: string): string {
  if (typeof value !== 'string') throw unavailable(`malformed store request: ${op} needs a string`);
  return value;
}

// ---------------------------------------------------------------------------------------------
// Worker side

/** A worker's end of the IPC channel to the primary; {@link processChannel} is the real one. */
export interface WorkerChannel {
  /**
   * Sends `message` to the primary. Throws, or calls `onError` later, when it cannot be sent
   * (closed channel); either fails that request at once instead of at its timeout.
   */
  send(message: StoreRequest, onError: (error: Error) => void): void;
  /** Calls `listener` with every message from the primary; returns the function that stops it. */
  onMessage(listener: (message: unknown) => void): () => void;
  /** Calls `listener` when the channel closes for good; returns the function that stops it. */
  onClose?(listener: () => void): () => void;
}

/** Returns the channel of this process to its cluster primary (`process.send` / `'message'`). */
function processChannel(): WorkerChannel {
  return {
    send(message, onError) {
      if (typeof process.send !== 'function' || !process.connected) throw unavailable('no IPC channel to the primary');
      // With a callback, a failed send is reported here rather than as a process 'error' event.
      process.send(message, undefined, undefined, (err: Error | null) => {
        if (err) onError(err);
      });
    },
    onMessage(listener) {
      const l = (m: unknown): void => listener(m);
      process.on('message', l);
      return () => void process.off('message', l);
    },
    onClose(listener) {
      process.on('disconnect', listener);
      return () => void process.off('disconnect', listener);
    },
  };
}

/** Options of {@link WorkerStore}. */
export interface WorkerStoreOptions {
  /** The IPC channel (default: {@link processChannel}); tests inject an in-memory one. */
  readonly channel?: WorkerChannel;
  /** How long a request waits for the primary, in ms (default {@link DEFAULT_STORE_TIMEOUT_MS}). */
  readonly timeoutMs?: number;
  /** Most unanswered requests at once (default {@link DEFAULT_MAX_PENDING}). */
  readonly maxPending?: number;
}

interface Pending {
  readonly op: StoreOp;
  readonly key: string;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: SessionStoreError | DeviceStoreError) => void;
  readonly timer: NodeJS.Timeout;
}

// Ids are unique per process, not per store, so two WorkerStores on one channel never take each
// other's replies.
let nextRequestId = 1;

/**
 * A cluster worker's {@link SessionStore}: every call is a request to the primary's one store.
 * Records come back deep-frozen. Every failure to get an answer (timeout, closed channel, malformed
 * reply) rejects with `SVC_ERR_SESSION_STORE_UNAVAILABLE`; an error of the primary's store keeps its
 * code. `onChange` listeners hear every change the primary broadcasts, from any worker.
 */
export class WorkerStore implements SessionStore, DeviceStore {
  readonly #channel: WorkerChannel;
  readonly #timeoutMs: number;
  readonly #maxPending: number;
  readonly #pending = new Map<number, Pending>();
  readonly #listeners = new Set<(id: string) => void>();
  readonly #deviceListeners = new Set<(credentialId: string) => void>();
  readonly #flushListeners = new Set<() => void>();
  readonly #reachabilityListeners = new Set<(unreachable: boolean) => void>();
  readonly #stopMessages: () => void;
  readonly #stopClose: () => void;
  #closed = false;
  #disconnected = false;
  /** The primary's store's reachability as last broadcast (false until told otherwise). */
  #unreachable = false;

  /** @throws {RangeError} when `timeoutMs` or `maxPending` is not a positive integer. */
  constructor(options: WorkerStoreOptions = {}) {
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_STORE_TIMEOUT_MS;
    this.#maxPending = options.maxPending ?? DEFAULT_MAX_PENDING;
    if (!Number.isSafeInteger(this.#timeoutMs) || this.#timeoutMs < 1) throw new RangeError('timeoutMs must be a positive integer');
    if (!Number.isSafeInteger(this.#maxPending) || this.#maxPending < 1) throw new RangeError('maxPending must be a positive integer');
    this.#channel = options.channel ?? processChannel();
    this.#stopMessages = this.#channel.onMessage((m) => this.#onMessage(m));
    this.#stopClose = this.#channel.onClose?.(() => this.#onClose()) ?? (() => {});
  }

  /** Requests not yet answered (for metrics and tests). */
  get pendingCount(): number {
    return this.#pending.size;
  }

  /** The primary's live record with this id (deep-frozen), or `undefined`. */
  async get(id: string): Promise<SessionRecord | undefined> {
    return (await this.#request('get', [id], id)) as SessionRecord | undefined;
  }

  /** Stores `record` in the primary's store; `SVC_ERR_SESSION_REVOKED` when its id was deleted. */
  async put(record: SessionRecord): Promise<void> {
    await this.#request('put', [record], typeof record?.id === 'string' ? record.id : '');
  }

  /**
   * Revokes the session in the primary's store (every worker's `onChange` hears it). When the primary
   * cannot be asked, this worker's own listeners hear it anyway (its caches drop the session).
   */
  async delete(id: string): Promise<void> {
    try {
      await this.#request('delete', [id], id);
    } catch (e) {
      if (e instanceof SessionStoreError && e.code === 'SVC_ERR_SESSION_STORE_UNAVAILABLE') this.#tell(id);
      throw e;
    }
  }

  /** True while the primary last said its store cannot reach its backend, or the channel to the primary is closed. */
  unreachable(): boolean {
    return this.#unreachable || this.#disconnected;
  }

  /** Listens for the primary's `store-reachability` broadcasts. */
  onReachability(listener: (unreachable: boolean) => void): () => void {
    this.#reachabilityListeners.add(listener);
    return () => this.#reachabilityListeners.delete(listener);
  }

  /** True when the primary's store holds a revocation mark for `id`. */
  async isRevoked(id: string): Promise<boolean> {
    return (await this.#request('isRevoked', [id], id)) as boolean;
  }

  /** Marks `key` used in the primary's store: true once across every worker, then false until `expiresAtMs`. */
  async consumeOnce(key: string, expiresAtMs: number): Promise<boolean> {
    return (await this.#request('consumeOnce', [key, expiresAtMs], key)) as boolean;
  }

  // Registered devices, in the primary's store (docs/authentication.md "Devices").

  async getDevice(credentialId: string): Promise<DeviceRecord | undefined> {
    return (await this.#request('getDevice', [credentialId], credentialId)) as DeviceRecord | undefined;
  }

  async addDevice(record: DeviceRecord): Promise<void> {
    await this.#request('addDevice', [record], '');
  }

  async listDevices(userId?: string): Promise<readonly DeviceRecord[]> {
    return (await this.#request('listDevices', [userId ?? null], '')) as DeviceRecord[];
  }

  async approveDevice(credentialId: string): Promise<boolean> {
    return (await this.#request('approveDevice', [credentialId], credentialId)) as boolean;
  }

  async revokeDevice(credentialId: string): Promise<boolean> {
    return (await this.#request('revokeDevice', [credentialId], credentialId)) as boolean;
  }

  async advanceCounter(credentialId: string, counter: number): Promise<CounterOutcome> {
    return (await this.#request('advanceCounter', [credentialId, counter], credentialId)) as CounterOutcome;
  }

  /** Listens for the primary's `store-device-changed` broadcasts (see {@link DeviceStore.onDeviceChange}). */
  onDeviceChange(listener: (credentialId: string) => void): () => void {
    this.#deviceListeners.add(listener);
    return () => this.#deviceListeners.delete(listener);
  }

  /** Listens for the primary's `store-flushed` broadcasts (see {@link SessionStore.onFlush}). */
  onFlush(listener: () => void): () => void {
    this.#flushListeners.add(listener);
    return () => this.#flushListeners.delete(listener);
  }

  /** Listens for the primary's `store-changed` broadcasts (see {@link SessionStore.onChange}). */
  onChange(listener: (id: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Stops listening and rejects every pending call with `SVC_ERR_SESSION_STORE_CLOSED`, as every
   * later call is. The primary's store stays open (it is not this worker's to close).
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#stopMessages();
    this.#stopClose();
    this.#listeners.clear();
    this.#deviceListeners.clear();
    this.#reachabilityListeners.clear();
    this.#rejectAll(() => new SessionStoreError('SVC_ERR_SESSION_STORE_CLOSED', 'session store is closed'));
  }

  #request(op: StoreOp, args: readonly unknown[], key: string): Promise<unknown> {
    if (this.#closed) return Promise.reject(new SessionStoreError('SVC_ERR_SESSION_STORE_CLOSED', 'session store is closed'));
    if (this.#disconnected) return Promise.reject(unavailable('the IPC channel to the primary is closed'));
    if (this.#pending.size >= this.#maxPending) return Promise.reject(unavailable(`too many session store requests pending (${this.#maxPending})`));
    const id = nextRequestId++;
    return new Promise<unknown>((resolve, reject) => {
      const timer = setTimeout(() => this.#settle(id)?.reject(unavailable(`the primary did not answer ${op} within ${this.#timeoutMs} ms`)), this.#timeoutMs);
      // A pending request must not keep a worker alive that is otherwise done.
      timer.unref();
      this.#pending.set(id, { op, key, resolve, reject, timer });
      try {
        this.#channel.send({ type: 'store', id, op, args }, (err) => this.#settle(id)?.reject(unavailable(`cannot send ${op} to the primary: ${err.message}`, err)));
      } catch (err) {
        this.#settle(id)?.reject(err instanceof SessionStoreError ? err : unavailable(`cannot send ${op} to the primary`, err));
      }
    });
  }

  /** Removes request `id` from the pending set (stopping its timer) and returns it, once. */
  #settle(id: number): Pending | undefined {
    const p = this.#pending.get(id);
    if (p === undefined) return undefined;
    this.#pending.delete(id);
    clearTimeout(p.timer);
    return p;
  }

  #onMessage(message: unknown): void {
    if (!isObject(message)) return;
    if (message['type'] === 'store-flushed') {
      for (const listener of this.#flushListeners) {
        try {
          listener();
        } catch {
          // Same as below.
        }
      }
      return;
    }
    if (message['type'] === 'store-device-changed') {
      const credentialId = message['credentialId'];
      if (typeof credentialId !== 'string') return;
      for (const listener of this.#deviceListeners) {
        try {
          listener(credentialId);
        } catch {
          // Same as in #tell.
        }
      }
      return;
    }
    if (message['type'] === 'store-changed') {
      const sessionId = message['sessionId'];
      if (typeof sessionId !== 'string') return;
      this.#tell(sessionId);
      return;
    }
    if (message['type'] === 'store-reachability') {
      if (typeof message['unreachable'] !== 'boolean') return;
      this.#unreachable = message['unreachable'];
      for (const listener of this.#reachabilityListeners) {
        try {
          listener(this.#unreachable);
        } catch {
          // Same as in #tell.
        }
      }
      return;
    }
    if (message['type'] !== 'store-reply') return;
    const id = message['id'];
    // Replies to another store in this process, or to a request already timed out, are not ours.
    if (typeof id !== 'number' || !this.#pending.has(id)) return;
    const p = this.#settle(id)!;
    if (message['ok'] === true) {
      try {
        p.resolve(checkValue(p.op, p.key, message['value']));
      } catch (err) {
        p.reject(err as SessionStoreError);
      }
      return;
    }
    const code = message['code'];
    const text = typeof message['message'] === 'string' ? message['message'] : 'session store failed';
    if (code === 'SVC_ERR_DEVICE_EXISTS' || code === 'SVC_ERR_DEVICE_RECORD_INVALID') return void p.reject(new DeviceStoreError(code, text));
    p.reject(isKnownCode(code) ? new SessionStoreError(code, text) : unavailable(`malformed store reply (code ${JSON.stringify(code)}): ${text}`));
  }

  #tell(sessionId: string): void {
    for (const listener of this.#listeners) {
      try {
        listener(sessionId);
      } catch {
        // A listener's failure must not keep the others from dropping the record.
      }
    }
  }

  #onClose(): void {
    this.#disconnected = true;
    this.#rejectAll(() => unavailable('the IPC channel to the primary closed'));
  }

  #rejectAll(error: () => SessionStoreError): void {
    for (const id of [...this.#pending.keys()]) this.#settle(id)?.reject(error());
  }
}

/**
 * The answer of `op` as the caller gets it, or a throw when it is not what the op answers: a
 * worker never acts on a reply it does not understand (fail closed).
 */
function checkValue(op: StoreOp, key: string, value: unknown): unknown {
  switch (op) {
    case 'get':
      if (value === undefined || value === null) return undefined;
      if (!isObject(value) || value['id'] !== key) throw unavailable('malformed store reply: get answered another record');
      return deepFreeze(value);
    case 'isRevoked':
    case 'consumeOnce':
      if (typeof value !== 'boolean') throw unavailable(`malformed store reply: ${op} answered a non-boolean`);
      return value;
    case 'put':
    case 'delete':
    case 'addDevice':
      return undefined;
    case 'getDevice':
      if (value === undefined || value === null) return undefined;
      if (!isObject(value) || value['credentialId'] !== key) throw unavailable('malformed store reply: getDevice answered another device');
      return deepFreeze(value);
    case 'listDevices':
      if (!Array.isArray(value) || !value.every(isObject)) throw unavailable('malformed store reply: listDevices answered no list');
      return deepFreeze(value);
    case 'approveDevice':
    case 'revokeDevice':
      if (typeof value !== 'boolean') throw unavailable(`malformed store reply: ${op} answered a non-boolean`);
      return value;
    case 'advanceCounter':
      if (value !== 'advanced' && value !== 'regressed' && value !== 'missing') throw unavailable('malformed store reply: advanceCounter answered no outcome');
      return value;
  }
}
