/**
 * Registered devices (docs/authentication.md "Devices"): a WebAuthn credential bound to one user,
 * kept in the data broker beside the sessions so that approval and revocation are decided in one
 * place and reach every svc instance sharing it. The session keeps only which credential it
 * authenticated with; the device's state is read from here, so revoking it ends its access at once.
 *
 * The counter rule (docs/security.md S59): an authenticator that keeps a signature counter reports
 * a larger one on every assertion; one that reports the same or a smaller value than stored
 * (both non-zero) is a clone of the authenticator, and the assertion is refused.
 */
import { SvcError } from './errors.ts';

/**
 * `enclave_only`: a platform authenticator (built into the device) that verified its user;
 * `any`: any other authenticator (a security key, a phone). Decided once, at registration.
 */
export type DeviceType = 'enclave_only' | 'any';

/** One registered device. Stores keep it immutable. */
export interface DeviceRecord {
  /** The WebAuthn credential id, base64url: the device's id in policies (`device is "…"`). */
  readonly credentialId: string;
  /** The user the device was registered by; it never authenticates anyone else. */
  readonly userId: string;
  readonly type: DeviceType;
  /** The credential's COSE public key, base64url. */
  readonly publicKey: string;
  /** The last signature counter accepted (0 for an authenticator that keeps none). */
  readonly counter: number;
  /** Approved devices satisfy `device approved`; a new one is pending unless self-registration is approved. */
  readonly approved: boolean;
  /** The transports the browser reported at registration (a hint for the next ceremony). */
  readonly transports: readonly string[];
  readonly createdAtMs: number;
}

/** The outcome of {@link DeviceStore.advanceCounter}. */
export type CounterOutcome = 'advanced' | 'regressed' | 'missing';

/** Where registered devices live; the memory and Redis stores implement it beside {@link SessionStore}. */
export interface DeviceStore {
  /** The device with this credential id, or undefined (never registered, or revoked). */
  getDevice(credentialId: string): Promise<DeviceRecord | undefined>;
  /**
   * Registers a new device. A credential id already registered is refused
   * (`SVC_ERR_DEVICE_EXISTS`): one credential never moves to another user.
   */
  addDevice(record: DeviceRecord): Promise<void>;
  /** Every registered device, or those of one user; in no particular order. */
  listDevices(userId?: string): Promise<readonly DeviceRecord[]>;
  /** Approves a device; false when there is none with that id. */
  approveDevice(credentialId: string): Promise<boolean>;
  /** Revokes a device: it is removed, and every process is told at once. False when there was none. */
  revokeDevice(credentialId: string): Promise<boolean>;
  /**
   * Stores the counter of an accepted assertion, atomically with the check of {@link counterAdvances}:
   * `regressed` leaves the stored counter as it was.
   */
  advanceCounter(credentialId: string, counter: number): Promise<CounterOutcome>;
  /**
   * Calls `listener` with the credential id of every device approved or revoked, in any process
   * sharing the store, so that per-process caches drop what they hold for it.
   */
  onDeviceChange(listener: (credentialId: string) => void): () => void;
}

/** True when `store` also implements {@link DeviceStore}. */
export function isDeviceStore(store: object): store is DeviceStore {
  const s = store as Partial<DeviceStore>;
  return typeof s.getDevice === 'function' && typeof s.addDevice === 'function' && typeof s.advanceCounter === 'function' && typeof s.onDeviceChange === 'function';
}

/**
 * The counter rule (docs/security.md S59): with both counters 0 the authenticator keeps none and
 * every assertion passes; otherwise the new counter must be strictly larger than the stored one.
 */
export function counterAdvances(stored: number, next: number): boolean {
  if (stored === 0 && next === 0) return true;
  return next > stored;
}

/** A device store misuse or failure, with a stable `code`. */
export class DeviceStoreError extends SvcError<DeviceStoreErrorCode> {
  constructor(code: DeviceStoreErrorCode, message: string, options?: ErrorOptions) {
    super(code, message, options);
    this.name = 'DeviceStoreError';
  }
}

/** Stable codes of {@link DeviceStoreError}. */
export type DeviceStoreErrorCode =
  /** A device record failed validation. */
  | 'SVC_ERR_DEVICE_RECORD_INVALID'
  /** A credential id that is already registered was registered again. */
  | 'SVC_ERR_DEVICE_EXISTS';

/** A validated copy of `record` (`SVC_ERR_DEVICE_RECORD_INVALID` otherwise). */
export function checkedDevice(record: DeviceRecord): DeviceRecord {
  const bad = (what: string) => new DeviceStoreError('SVC_ERR_DEVICE_RECORD_INVALID', `device record: ${what}`);
  if (typeof record !== 'object' || record === null) throw bad('not an object');
  if (typeof record.credentialId !== 'string' || !/^[A-Za-z0-9_-]{16,1400}$/.test(record.credentialId)) throw bad('credentialId must be base64url (16 to 1400 characters)');
  if (typeof record.userId !== 'string' || record.userId === '') throw bad('userId must be a non-empty string');
  if (record.type !== 'enclave_only' && record.type !== 'any') throw bad('type must be `enclave_only` or `any`');
  if (typeof record.publicKey !== 'string' || !/^[A-Za-z0-9_-]+$/.test(record.publicKey)) throw bad('publicKey must be base64url');
  if (!Number.isSafeInteger(record.counter) || record.counter < 0 || record.counter > 0xffffffff) throw bad('counter must be a 32-bit unsigned integer');
  if (typeof record.approved !== 'boolean') throw bad('approved must be a boolean');
  if (!Array.isArray(record.transports) || !record.transports.every((t) => typeof t === 'string')) throw bad('transports must be strings');
  if (!Number.isSafeInteger(record.createdAtMs)) throw bad('createdAtMs must be a safe integer');
  return Object.freeze({
    credentialId: record.credentialId,
    userId: record.userId,
    type: record.type,
    publicKey: record.publicKey,
    counter: record.counter,
    approved: record.approved,
    transports: Object.freeze([...record.transports]),
    createdAtMs: record.createdAtMs,
  });
}
