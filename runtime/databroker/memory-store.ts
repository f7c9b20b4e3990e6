/**
 * The in-memory data broker (docs/scale-out.md: one instance, nothing shared between processes).
 *
 * Memory stays bounded: expired records and revocation marks are swept lazily on access and by an
 * unref'd timer that {@link MemoryStore.close} stops; at `maxRecords` the record closest to expiry
 * is evicted (an evicted session reads as signed out, which fails closed). Eviction is a linear scan
 * of a full store, which is fine at the sizes one process holds; a Redis store replaces this one at scale.
 */
import { SessionStoreError, type SessionDirectory, type SessionRecord, type SessionStore } from '../core/session-store.ts';
import { checkedDevice, counterAdvances, DeviceStoreError, type CounterOutcome, type DeviceRecord, type DeviceStore } from '../core/device-store.ts';
import { deepFreeze } from '../../compiler/plan/deep-freeze.ts';

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  /** Clock in ms since the epoch (default `Date.now`); injected by tests. */
  readonly now?: () => number;
  /** Most live records kept (default 100 000); also caps revocation marks. */
  readonly maxRecords?: number;
  /** Period of the background sweep in ms (default 60 000); 0 turns the timer off. */
  readonly sweepIntervalMs?: number;
}

const DEFAULT_MAX_RECORDS = 100_000;
const DEFAULT_SWEEP_INTERVAL_MS = 60_000;

/**
 * An in-memory {@link SessionStore} and {@link SessionDirectory}: frozen copies, injectable clock,
 * revocation, bounded size, and leases for the identity manager (one process holds the store, so a
 * lease is only contended between managers sharing this object, as tests do).
 */
export class MemoryStore implements SessionStore, SessionDirectory, DeviceStore {
  readonly #now: () => number;
  readonly #maxRecords: number;
  readonly #records = new Map<string, SessionRecord>();
  /** id → expiresAtMs of a deleted record; kept until that expiry so the id cannot come back. */
  readonly #revoked = new Map<string, number>();
  /** One-time key → the time its mark may be forgotten. */
  readonly #consumed = new Map<string, number>();
  readonly #listeners = new Set<(id: string) => void>();
  /** Lease name → its holder and when it lapses. */
  readonly #leases = new Map<string, { readonly holder: string; readonly untilMs: number }>();
  /** Registered devices by credential id (docs/authentication.md "Devices"); they do not expire. */
  readonly #devices = new Map<string, DeviceRecord>();
  readonly #deviceListeners = new Set<(credentialId: string) => void>();
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  /** @throws {RangeError} when `maxRecords` is not a positive integer or `sweepIntervalMs` is negative. */
  constructor(options: MemoryStoreOptions = {}) {
    this.#now = options.now ?? Date.now;
    this.#maxRecords = options.maxRecords ?? DEFAULT_MAX_RECORDS;
    if (!Number.isSafeInteger(this.#maxRecords) || this.#maxRecords < 1) throw new RangeError('maxRecords must be a positive integer');
    const interval = options.sweepIntervalMs ?? DEFAULT_SWEEP_INTERVAL_MS;
    if (!Number.isFinite(interval) || interval < 0) throw new RangeError('sweepIntervalMs must be a non-negative number');
    if (interval > 0) {
      this.#timer = setInterval(() => this.sweep(), interval);
      this.#timer.unref();
    }
  }

  /** Number of live-or-not-yet-swept records (for metrics and tests). */
  get size(): number {
    return this.#records.size;
  }

  /** Number of revocation marks held (for metrics and tests). */
  get revokedSize(): number {
    return this.#revoked.size;
  }

  /** Returns the frozen record, or `undefined` when missing, expired (`expiresAtMs <= now`) or deleted. */
  async get(id: string): Promise<SessionRecord | undefined> {
    this.#assertOpen();
    const record = this.#records.get(id);
    if (record === undefined) return undefined;
    if (record.expiresAtMs <= this.#now()) {
      this.#records.delete(id);
      return undefined;
    }
    return record;
  }

  /**
   * Stores a deep-frozen copy of `record`; later changes to the caller's object do not reach the
   * store. A record that is already expired is not stored.
   *
   * @throws {SessionStoreError} `SVC_ERR_SESSION_REVOKED` when the id was deleted and has not
   *   expired; `SVC_ERR_SESSION_RECORD_INVALID` for an invalid record; `SVC_ERR_SESSION_STORE_CLOSED`.
   */
  async put(record: SessionRecord): Promise<void> {
    this.#assertOpen();
    const copy = freezeCopy(record);
    const now = this.#now();
    const revokedUntil = this.#revoked.get(copy.id);
    if (revokedUntil !== undefined) {
      if (revokedUntil > now) throw new SessionStoreError('SVC_ERR_SESSION_REVOKED', 'session was revoked');
      this.#revoked.delete(copy.id);
    }
    if (copy.expiresAtMs <= now) {
      this.#records.delete(copy.id);
      return;
    }
    const replaced = this.#records.has(copy.id);
    if (!replaced && this.#records.size >= this.#maxRecords) {
      this.sweep();
      // INVARIANT (bounded): at most maxRecords records after any put.
      while (this.#records.size >= this.#maxRecords) evictSoonest(this.#records);
    }
    this.#records.set(copy.id, copy);
    if (replaced) this.#notify(copy.id);
  }

  /**
   * Revokes the session: the record is removed and its id refused (by `get`, `put` and
   * {@link isRevoked}) until the record's expiry (docs/security.md S30). Deleting an unknown or expired id
   * does nothing.
   */
  async delete(id: string): Promise<void> {
    this.#assertOpen();
    const record = this.#records.get(id);
    if (record === undefined) return;
    this.#records.delete(id);
    this.#notify(id);
    if (record.expiresAtMs <= this.#now()) return;
    if (this.#revoked.size >= this.#maxRecords) {
      this.sweep();
      while (this.#revoked.size >= this.#maxRecords) evictSoonestMark(this.#revoked);
    }
    this.#revoked.set(id, record.expiresAtMs);
  }

  /** True when `id` was deleted and its record's expiry has not passed. */
  async isRevoked(id: string): Promise<boolean> {
    this.#assertOpen();
    const until = this.#revoked.get(id);
    if (until === undefined) return false;
    if (until <= this.#now()) {
      this.#revoked.delete(id);
      return false;
    }
    return true;
  }

  /**
   * Marks `key` used until `expiresAtMs`: true the first time, false while the mark lasts. At
   * `maxRecords` marks the one closest to expiry is dropped first (its key is then long expired).
   */
  async consumeOnce(key: string, expiresAtMs: number): Promise<boolean> {
    this.#assertOpen();
    const now = this.#now();
    const until = this.#consumed.get(key);
    if (until !== undefined && until > now) return false;
    if (this.#consumed.size >= this.#maxRecords) {
      this.sweep();
      while (this.#consumed.size >= this.#maxRecords) evictSoonestMark(this.#consumed);
    }
    this.#consumed.set(key, expiresAtMs);
    return true;
  }

  /** Listens for replaced and deleted records (see {@link SessionStore.onChange}). */
  onChange(listener: (id: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Every live record's id, snapshotted when iteration starts (expired ones are left out). */
  async *sessionIds(): AsyncIterable<string> {
    this.#assertOpen();
    const now = this.#now();
    const ids: string[] = [];
    for (const [id, record] of this.#records) if (record.expiresAtMs > now) ids.push(id);
    yield* ids;
  }

  /**
   * Takes `name` for `holder` until `ttlMs` from now when it is free, lapsed, or already
   * `holder`'s (a renewal); true when `holder` holds it afterwards.
   *
   * @throws {RangeError} when `ttlMs` is not a positive integer.
   */
  async acquireLease(name: string, holder: string, ttlMs: number): Promise<boolean> {
    this.#assertOpen();
    if (!Number.isSafeInteger(ttlMs) || ttlMs <= 0) throw new RangeError('ttlMs must be a positive integer');
    const now = this.#now();
    const lease = this.#leases.get(name);
    if (lease !== undefined && lease.holder !== holder && lease.untilMs > now) return false;
    this.#leases.set(name, { holder, untilMs: now + ttlMs });
    return true;
  }

  /** Gives `name` up when `holder` holds it (lapsed or not); does nothing otherwise. */
  async releaseLease(name: string, holder: string): Promise<void> {
    this.#assertOpen();
    if (this.#leases.get(name)?.holder === holder) this.#leases.delete(name);
  }

  async getDevice(credentialId: string): Promise<DeviceRecord | undefined> {
    this.#assertOpen();
    return this.#devices.get(credentialId);
  }

  /** @throws {DeviceStoreError} `SVC_ERR_DEVICE_EXISTS` for a credential id already registered. */
  async addDevice(record: DeviceRecord): Promise<void> {
    this.#assertOpen();
    const copy = checkedDevice(record);
    if (this.#devices.has(copy.credentialId)) throw new DeviceStoreError('SVC_ERR_DEVICE_EXISTS', 'device already registered');
    // INVARIANT (bounded): devices count against maxRecords like the sessions' revocation marks.
    if (this.#devices.size >= this.#maxRecords) throw new SessionStoreError('SVC_ERR_SESSION_STORE_UNAVAILABLE', 'the memory store holds its maximum of devices');
    this.#devices.set(copy.credentialId, copy);
  }

  async listDevices(userId?: string): Promise<readonly DeviceRecord[]> {
    this.#assertOpen();
    return [...this.#devices.values()].filter((d) => userId === undefined || d.userId === userId);
  }

  async approveDevice(credentialId: string): Promise<boolean> {
    this.#assertOpen();
    const d = this.#devices.get(credentialId);
    if (d === undefined) return false;
    if (!d.approved) {
      this.#devices.set(credentialId, Object.freeze({ ...d, approved: true }));
      this.#notifyDevice(credentialId);
    }
    return true;
  }

  async revokeDevice(credentialId: string): Promise<boolean> {
    this.#assertOpen();
    if (!this.#devices.delete(credentialId)) return false;
    this.#notifyDevice(credentialId);
    return true;
  }

  /** The counter rule of core/device-store.ts, checked and stored in one step. */
  async advanceCounter(credentialId: string, counter: number): Promise<CounterOutcome> {
    this.#assertOpen();
    const d = this.#devices.get(credentialId);
    if (d === undefined) return 'missing';
    if (!counterAdvances(d.counter, counter)) return 'regressed';
    if (counter !== d.counter) this.#devices.set(credentialId, Object.freeze({ ...d, counter }));
    return 'advanced';
  }

  onDeviceChange(listener: (credentialId: string) => void): () => void {
    this.#deviceListeners.add(listener);
    return () => this.#deviceListeners.delete(listener);
  }

  #notifyDevice(credentialId: string): void {
    for (const listener of this.#deviceListeners) {
      try {
        listener(credentialId);
      } catch {
        // As #notify: a listener's failure must not undo the change.
      }
    }
  }

  #notify(id: string): void {
    for (const listener of this.#listeners) {
      try {
        listener(id);
      } catch {
        // A listener's failure must not undo or block the store's change.
      }
    }
  }

  /** Drops every expired record and revocation mark; returns how many entries it dropped. */
  sweep(): number {
    const now = this.#now();
    let dropped = 0;
    for (const [id, record] of this.#records) {
      if (record.expiresAtMs <= now) {
        this.#records.delete(id);
        dropped++;
      }
    }
    for (const marks of [this.#revoked, this.#consumed]) {
      for (const [id, until] of marks) {
        if (until <= now) {
          marks.delete(id);
          dropped++;
        }
      }
    }
    return dropped;
  }

  /** Stops the sweep timer and drops everything; later calls reject with `SVC_ERR_SESSION_STORE_CLOSED`. */
  async close(): Promise<void> {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    this.#closed = true;
    this.#records.clear();
    this.#revoked.clear();
    this.#consumed.clear();
    this.#leases.clear();
    this.#listeners.clear();
    this.#devices.clear();
    this.#deviceListeners.clear();
  }

  #assertOpen(): void {
    if (this.#closed) throw new SessionStoreError('SVC_ERR_SESSION_STORE_CLOSED', 'session store is closed');
  }
}

function evictSoonest(records: Map<string, SessionRecord>): void {
  let victim: string | undefined;
  let soonest = Infinity;
  for (const [id, r] of records) {
    if (victim === undefined || r.expiresAtMs < soonest) {
      victim = id;
      soonest = r.expiresAtMs;
    }
  }
  if (victim !== undefined) records.delete(victim);
}

function evictSoonestMark(marks: Map<string, number>): void {
  let victim: string | undefined;
  let soonest = Infinity;
  for (const [id, until] of marks) {
    if (victim === undefined || until < soonest) {
      victim = id;
      soonest = until;
    }
  }
  if (victim !== undefined) marks.delete(victim);
}

function invalid(message: string, cause?: unknown): SessionStoreError {
  return new SessionStoreError('SVC_ERR_SESSION_RECORD_INVALID', message, cause === undefined ? undefined : { cause });
}

/** A validated, deep-frozen copy sharing nothing mutable with `record`. */
function freezeCopy(record: SessionRecord): SessionRecord {
  if (typeof record !== 'object' || record === null) throw invalid('record must be an object');
  if (typeof record.id !== 'string' || record.id === '') throw invalid('record id must be a non-empty string');
  if (typeof record.userId !== 'string') throw invalid('record userId must be a string');
  if (!Number.isSafeInteger(record.expiresAtMs) || !Number.isSafeInteger(record.createdAtMs)) {
    throw invalid('record expiresAtMs and createdAtMs must be safe integers');
  }
  if (!Array.isArray(record.groups) || !record.groups.every((g) => typeof g === 'string')) throw invalid('record groups must be strings');
  let copy: SessionRecord;
  try {
    copy = structuredClone(record);
  } catch (err) {
    throw invalid('record is not cloneable', err);
  }
  return deepFreeze(copy);
}
