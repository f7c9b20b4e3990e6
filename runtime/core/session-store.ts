/**
 * The narrow data-broker interface the session layer needs (docs/architecture.md §3, §5): the session cookie
 * holds only a handle; the identity lives here, so deleting a record revokes the session for real
 * (docs/security.md S30).
 */
import { randomBytes } from 'node:crypto';
import { SvcError } from './errors.ts';

/** One server-side session. Stores keep it immutable; readers must not rely on identity (`===`). */
export interface SessionRecord {
  /** The session handle, from {@link newSessionId}. */
  readonly id: string;
  readonly userId: string;
  readonly email?: string;
  readonly groups: readonly string[];
  /** Identity-provider claims (JSON values). */
  readonly claims: Readonly<Record<string, unknown>>;
  readonly idToken?: string;
  readonly accessToken?: string;
  readonly refreshToken?: string;
  /**
   * When the access token expires (ms since the epoch), when the provider said; a session with a
   * refresh token is refreshed shortly before it.
   */
  readonly accessTokenExpiresAtMs?: number;
  /** Absolute expiry, ms since the epoch; the record is gone at or after it. */
  readonly expiresAtMs: number;
  readonly createdAtMs: number;
  /**
   * The credential id of the device this session authenticated with (docs/authentication.md
   * "Devices"); the device's state is read from the device store, never kept here.
   */
  readonly deviceCredentialId?: string;
}

/** Where session records live (memory or Redis). Every method is async; a failure rejects. */
export interface SessionStore {
  /** The live record with this id, or `undefined` when missing, expired or deleted. */
  get(id: string): Promise<SessionRecord | undefined>;
  /** Stores (or replaces) a record under `record.id`. */
  put(record: SessionRecord): Promise<void>;
  /** Revokes the session: `get(id)` never finds it again (docs/security.md S30). */
  delete(id: string): Promise<void>;
  /** Revoked ids stay refused until their expiry. */
  isRevoked?(id: string): Promise<boolean>;
  /**
   * Marks a one-time key (a sign-in hand-off's id) as used. Resolves true the first time a key is
   * seen and false on every later call until `expiresAtMs`; the mark is forgotten after it. Every
   * process sharing the store sees the same answer (single use across workers).
   */
  consumeOnce(key: string, expiresAtMs: number): Promise<boolean>;
  /**
   * Calls `listener` with the id of every record replaced or deleted, in any process sharing the
   * store, so per-process caches drop it at once (a revoked session is never served from a cache).
   * A `delete` that failed because the store could not be reached is told too, in the process that
   * asked at least: the caches there drop a session whose sign-out could not be recorded.
   * Returns a function that removes the listener.
   */
  onChange(listener: (id: string) => void): () => void;
  /**
   * Calls `listener` when changes may have been missed (a shared store's change channel came back
   * after a loss): every per-process cache must start over. Stores that never miss one omit it.
   * Returns a function that removes the listener.
   */
  onFlush?(listener: () => void): () => void;
  /**
   * True while the store knows, without asking anyone, that it cannot reach what holds the sessions
   * (the Redis store's connection is down): read at once, on the request path. A store that cannot
   * know it omits this; false means "not known unreachable", not "reachable".
   */
  unreachable?(): boolean;
  /** Calls `listener` with each change of {@link unreachable}. Returns a function that removes the listener. */
  onReachability?(listener: (unreachable: boolean) => void): () => void;
  /** Releases timers and connections; the store is unusable afterwards. */
  close(): Promise<void>;
}

/** Returns a new session id: 32 bytes from the CSPRNG, base64url (43 characters; docs/security.md S31). */
export function newSessionId(): string {
  return randomBytes(32).toString('base64url');
}

/** A store misuse or failure, with a stable `code`. */
export class SessionStoreError extends SvcError<SessionStoreErrorCode> {
  constructor(code: SessionStoreErrorCode, message: string, options?: ErrorOptions) {
    super(code, message, options);
    this.name = 'SessionStoreError';
  }
}

/** Stable codes of {@link SessionStoreError}. */
export type SessionStoreErrorCode =
  /** The store was closed. */
  | 'SVC_ERR_SESSION_STORE_CLOSED'
  /** A record failed validation (empty id, non-integer times, claims that are not cloneable). */
  | 'SVC_ERR_SESSION_RECORD_INVALID'
  /** `put` of an id that was deleted: a revoked session is never resurrected (S30). */
  | 'SVC_ERR_SESSION_REVOKED'
  /** A remote store (a cluster worker's view of the primary's) did not answer: timeout, closed channel, bad reply. */
  | 'SVC_ERR_SESSION_STORE_UNAVAILABLE';

/**
 * What the identity manager needs from a store beyond single sessions (docs/authentication.md "Keeping sessions fresh"): the live session
 * ids to refresh, and a lease so that exactly one process among all those sharing the store runs
 * the refresh at a time. The memory store and the Redis store implement it; a cluster worker's
 * view of the primary's store does not (the identity manager runs where the store is held).
 */
export interface SessionDirectory {
  /** Every live session id, in no particular order; ids put or deleted while iterating may or may not appear. */
  sessionIds(): AsyncIterable<string>;
  /**
   * Takes or renews the lease `name` for `holder` until `ttlMs` from now. Resolves true when
   * `holder` holds the lease afterwards, false while another holder's lease has not expired.
   * Atomic across every process sharing the store.
   */
  acquireLease(name: string, holder: string, ttlMs: number): Promise<boolean>;
  /** Gives the lease up when `holder` holds it; does nothing otherwise. */
  releaseLease(name: string, holder: string): Promise<void>;
}

/** True when `store` also implements {@link SessionDirectory}. */
export function isSessionDirectory(store: SessionStore): store is SessionStore & SessionDirectory {
  const s = store as Partial<SessionDirectory>;
  return typeof s.sessionIds === 'function' && typeof s.acquireLease === 'function' && typeof s.releaseLease === 'function';
}

/** The storage operations timed for `storage_operation_duration_ms` (docs/observability.md "Metric reference"). */
export type StorageOperation = 'get' | 'put' | 'delete' | 'isRevoked' | 'consumeOnce' | 'sessionIds' | 'acquireLease' | 'releaseLease' | 'device';

/**
 * Receives the figures a store keeps for docs/observability.md "Metric reference" (the observability layer exports them). Calls are
 * synchronous and must not throw; a store without an observer keeps nothing.
 */
export interface StoreObserver {
  /** One finished storage operation. */
  operation(operation: StorageOperation, result: 'ok' | 'error', backend: 'memory' | 'redis', durationMs: number): void;
}

/** A remote store's connection-pool figures at one instant (`redis_*`, docs/observability.md "Metric reference"). */
export interface StorePoolFigures {
  /** Open connections (`redis_conns`). */
  readonly conns: number;
  /** Open connections with no command in flight (`redis_idle_conns`). */
  readonly idleConns: number;
  /** Commands that had to wait for a connection, since start (`redis_wait_count_total`). */
  readonly waitCount: number;
  /** Total ms those commands waited, since start (`redis_wait_duration_ms_total`). */
  readonly waitDurationMs: number;
  /** True while the store reaches its server (false during an outage). */
  readonly up: boolean;
  /** Values refused as older than one this process had seen, since start (a replay by a Redis writer, or writes lost in a failover). */
  readonly replaysRefused: number;
  /** Identity-manager leases found held by a value svc did not write, or past its sealed expiry, and taken over, since start. */
  readonly leasesTakenOver: number;
}

/** Counts the requests served from the session-store outage grace (`svc_sessions_served_stale_total`). Never throws. */
export interface GraceObserver {
  servedStale(): void;
}
