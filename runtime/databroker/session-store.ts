/**
 * The narrow data-broker interface the session layer needs (DESIGN.md §3, §5): the session cookie
 * holds only a handle; the identity lives here, so deleting a record revokes the session for real
 * (SECURITY.md S30).
 */
import { randomBytes } from 'node:crypto';

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
}

/** Where session records live (memory or Redis). Every method is async; a failure rejects. */
export interface SessionStore {
  /** The live record with this id, or `undefined` when missing, expired or deleted. */
  get(id: string): Promise<SessionRecord | undefined>;
  /** Stores (or replaces) a record under `record.id`. */
  put(record: SessionRecord): Promise<void>;
  /** Revokes the session: `get(id)` never finds it again (SECURITY.md S30). */
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
   * Returns a function that removes the listener.
   */
  onChange(listener: (id: string) => void): () => void;
  /** Releases timers and connections; the store is unusable afterwards. */
  close(): Promise<void>;
}

/** Returns a new session id: 32 bytes from the CSPRNG, base64url (43 characters; SECURITY.md S31). */
export function newSessionId(): string {
  return randomBytes(32).toString('base64url');
}

/** A store misuse or failure, with a stable `code`. */
export class SessionStoreError extends Error {
  readonly code: SessionStoreErrorCode;
  constructor(code: SessionStoreErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'SessionStoreError';
    this.code = code;
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
