/**
 * Sessions as requests see them (docs/architecture.md §5): credential (session cookie or programmatic bearer
 * token) → session handle → record in the data broker, with a short per-process cache so the
 * common request does no decryption and no store round trip.
 *
 * INVARIANT (fail-closed): a credential that does not open, a missing, expired or revoked record, or
 * a store error is "no session" (docs/security.md S22, docs/architecture.md §2 invariant 4).
 * INVARIANT (revocation): the cache drops an entry the moment the store reports the record changed
 * or deleted, in any process (SessionStore.onChange), so a revoked session is never served from it
 * (docs/security.md S30). When a shared store's change channel was lost, every entry is dropped once it is
 * back (SessionStore.onFlush); meanwhile no entry outlives the cache's TTL (30 s).
 * INVARIANT (outage grace): with a grace (`graceMs` > 0, `svc run --store-outage-grace`), an entry is
 * kept for up to the grace after it stops being fresh, never past its session's own expiry, and
 * {@link SessionCache.stale} hands it out only to a caller whose store lookup just failed as
 * unreachable (outage-grace.ts, docs/scale-out.md "Failure behaviour"). Whatever drops a fresh entry
 * (a change, a flush, a sign-out, the store answering "no session") drops it stale too.
 */
import { createHash } from 'node:crypto';
import type { Identity } from '../core/types.ts';
import type { SessionRecord, SessionStore } from '../core/session-store.ts';
import { isDeviceStore } from '../core/device-store.ts';

/** A live session for one request. */
export interface ResolvedSession {
  readonly record: SessionRecord;
  readonly identity: Identity;
  /** The session's public id ({@link publicSessionId}): the `sid` upstreams see. */
  readonly publicId: string;
  /**
   * Set when the session store could not be reached and this session was served from the outage
   * grace (outage-grace.ts): whatever needs the store itself (a sign-in) refuses it.
   */
  readonly servedFromGrace?: true;
}

/**
 * The id a session is known by outside svc (the assertion's `sid`, logs): a hash of the handle, so
 * an upstream that logs `sid` holds nothing that names the server-side record.
 */
export function publicSessionId(id: string): string {
  return createHash('sha256').update(`svc session\0${id}`).digest('base64url').slice(0, 22);
}

/** A resolved session for a record, without its device (see {@link resolveSession}). */
export function resolvedSession(record: SessionRecord): ResolvedSession {
  return { record, identity: identityOf(record), publicId: publicSessionId(record.id) };
}

/**
 * A resolved session for a record with the device it authenticated with, read from `store` when it
 * keeps devices (docs/authentication.md "Devices"): a device revoked, gone, or registered by another
 * user is no device (the policy then sends the user to the device page). Rejects when the store cannot answer.
 */
export async function resolveSession(store: SessionStore, record: SessionRecord): Promise<ResolvedSession> {
  const base = resolvedSession(record);
  const id = record.deviceCredentialId;
  if (id === undefined || !isDeviceStore(store)) return base;
  const d = await store.getDevice(id);
  if (d === undefined || d.userId !== record.userId) return base;
  return { ...base, identity: { ...base.identity, device: { id: d.credentialId, type: d.type, approved: d.approved } } };
}

interface Entry {
  readonly session: ResolvedSession;
  /** The generation-specific opener the entry was made under (a rotated secret misses). */
  readonly owner: object;
  /** The entry is fresh (answers without the store) only before this time (ms since the epoch). */
  readonly until: number;
  /** The entry may stand in for an unreachable store only before this time (≥ `until`); it is dropped then. */
  readonly staleUntil: number;
}

/** How long an entry may answer without asking the store again. */
const DEFAULT_TTL_MS = 30_000;
const DEFAULT_MAX_ENTRIES = 50_000;

/** The identity a policy sees for a session record. */
export function identityOf(record: SessionRecord): Identity {
  return { user: record.userId, ...(record.email !== undefined ? { email: record.email } : {}), groups: record.groups, claims: record.claims };
}

/** The per-process credential cache in front of the session store. */
export class SessionCache {
  readonly #entries = new Map<string, Entry>();
  /** Session id → credentials cached for it, so a change drops every one of them. */
  readonly #byId = new Map<string, Set<string>>();
  readonly #ttlMs: number;
  readonly #graceMs: number;
  readonly #max: number;
  /** Device credential id → sessions cached with it, so an approval or revocation drops them at once. */
  readonly #byDevice = new Map<string, Set<string>>();
  readonly #off: () => void;
  readonly #offFlush: () => void;
  readonly #offDevice: () => void;

  constructor(
    readonly store: SessionStore,
    /** `graceMs`: how long past its freshness an entry may stand in for an unreachable store (default 0: never). */
    options: { readonly ttlMs?: number; readonly maxEntries?: number; readonly graceMs?: number } = {},
  ) {
    this.#ttlMs = options.ttlMs ?? DEFAULT_TTL_MS;
    this.#graceMs = options.graceMs ?? 0;
    if (!(this.#graceMs >= 0)) throw new RangeError('graceMs must not be negative');
    this.#max = options.maxEntries ?? DEFAULT_MAX_ENTRIES;
    this.#off = store.onChange((id) => this.forget(id));
    // Changes missed while a shared store's channel was down: nothing cached may be trusted.
    this.#offFlush = store.onFlush?.(() => this.clear()) ?? (() => undefined);
    // INVARIANT (revocation): a device approved or revoked in any process drops every session
    // cached with it, so a revoked device is never served from here (docs/security.md S60).
    this.#offDevice = isDeviceStore(store) ? store.onDeviceChange((credentialId) => this.forgetDevice(credentialId)) : () => undefined;
  }

  /** Drops every cached session that authenticated with the device `credentialId`. */
  forgetDevice(credentialId: string): void {
    const ids = this.#byDevice.get(credentialId);
    if (!ids) return;
    this.#byDevice.delete(credentialId);
    for (const id of ids) this.forget(id);
  }

  /** The cached session of `credential` made under `owner`, when still fresh; undefined on a miss. */
  get(credential: string, owner: object, nowMs: number): ResolvedSession | undefined {
    const e = this.#live(credential, owner, nowMs);
    return e !== undefined && e.until > nowMs ? e.session : undefined;
  }

  /**
   * The session of `credential` made under `owner` when it is no longer fresh but still within the
   * grace (its freshness ended less than `graceMs` ago, and its session has not expired); undefined
   * otherwise. Only for a caller whose store lookup for it just failed as unreachable.
   */
  stale(credential: string, owner: object, nowMs: number): ResolvedSession | undefined {
    return this.#live(credential, owner, nowMs)?.session;
  }

  /**
   * Caches a resolved session for `credential`: fresh until `until` (capped by the cache's TTL), and
   * kept for the grace after that, but never at or past `expiresAtMs` (the session's own expiry,
   * default `until`).
   */
  set(credential: string, owner: object, session: ResolvedSession, nowMs: number, until: number, expiresAtMs = until): void {
    if (this.#entries.size >= this.#max) this.clear(); // bounded: a full cache starts over
    const fresh = Math.min(until, expiresAtMs, nowMs + this.#ttlMs);
    this.#entries.set(credential, { session, owner, until: fresh, staleUntil: Math.max(fresh, Math.min(fresh + this.#graceMs, expiresAtMs)) });
    const id = session.record.id;
    let set = this.#byId.get(id);
    if (!set) this.#byId.set(id, (set = new Set()));
    set.add(credential);
    const device = session.record.deviceCredentialId;
    if (device !== undefined) {
      let ids = this.#byDevice.get(device);
      if (!ids) this.#byDevice.set(device, (ids = new Set()));
      ids.add(id);
    }
  }

  /** Drops every cached credential of a session. */
  forget(sessionId: string): void {
    const set = this.#byId.get(sessionId);
    if (!set) return;
    this.#byId.delete(sessionId);
    for (const c of set) this.#entries.delete(c);
  }

  clear(): void {
    this.#entries.clear();
    this.#byId.clear();
    this.#byDevice.clear();
  }

  /** Stops listening to the store. */
  close(): void {
    this.#off();
    this.#offFlush();
    this.#offDevice();
    this.clear();
  }

  /** The entry of `credential` made under `owner` and not past its grace; any other is dropped. */
  #live(credential: string, owner: object, nowMs: number): Entry | undefined {
    const e = this.#entries.get(credential);
    if (e === undefined) return undefined;
    if (e.owner !== owner || e.staleUntil <= nowMs) {
      this.#drop(credential, e);
      return undefined;
    }
    return e;
  }

  #drop(credential: string, e: Entry): void {
    this.#entries.delete(credential);
    const set = this.#byId.get(e.session.record.id);
    set?.delete(credential);
    if (set?.size === 0) this.#byId.delete(e.session.record.id);
  }
}
