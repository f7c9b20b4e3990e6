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
 */
import { createHash } from 'node:crypto';
import type { Identity } from '../decide/types.ts';
import type { SessionRecord, SessionStore } from '../databroker/session-store.ts';

/** A live session for one request. */
export interface ResolvedSession {
  readonly record: SessionRecord;
  readonly identity: Identity;
  /** The session's public id ({@link publicSessionId}): the `sid` upstreams see. */
  readonly publicId: string;
}

/**
 * The id a session is known by outside svc (the assertion's `sid`, logs): a hash of the handle, so
 * an upstream that logs `sid` holds nothing that names the server-side record.
 */
export function publicSessionId(id: string): string {
  return createHash('sha256').update(`svc session\0${id}`).digest('base64url').slice(0, 22);
}

/** A resolved session for a record. */
export function resolvedSession(record: SessionRecord): ResolvedSession {
  return { record, identity: identityOf(record), publicId: publicSessionId(record.id) };
}

interface Entry {
  readonly session: ResolvedSession;
  /** The generation-specific opener the entry was made under (a rotated secret misses). */
  readonly owner: object;
  /** The entry is used only before this time (ms since the epoch). */
  readonly until: number;
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
  readonly #max: number;
  readonly #off: () => void;
  readonly #offFlush: () => void;

  constructor(
    readonly store: SessionStore,
    options: { readonly ttlMs?: number; readonly maxEntries?: number } = {},
  ) {
    this.#ttlMs = options.ttlMs ?? DEFAULT_TTL_MS;
    this.#max = options.maxEntries ?? DEFAULT_MAX_ENTRIES;
    this.#off = store.onChange((id) => this.forget(id));
    // Changes missed while a shared store's channel was down: nothing cached may be trusted.
    this.#offFlush = store.onFlush?.(() => this.clear()) ?? (() => undefined);
  }

  /** The cached session of `credential` made under `owner`, when still fresh; undefined on a miss. */
  get(credential: string, owner: object, nowMs: number): ResolvedSession | undefined {
    const e = this.#entries.get(credential);
    if (e === undefined) return undefined;
    if (e.owner !== owner || e.until <= nowMs) {
      this.#drop(credential, e);
      return undefined;
    }
    return e.session;
  }

  /** Caches a resolved session for `credential` until `until` (capped by the cache's TTL). */
  set(credential: string, owner: object, session: ResolvedSession, nowMs: number, until: number): void {
    if (this.#entries.size >= this.#max) this.clear(); // bounded: a full cache starts over
    this.#entries.set(credential, { session, owner, until: Math.min(until, nowMs + this.#ttlMs) });
    const id = session.record.id;
    let set = this.#byId.get(id);
    if (!set) this.#byId.set(id, (set = new Set()));
    set.add(credential);
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
  }

  /** Stops listening to the store. */
  close(): void {
    this.#off();
    this.#offFlush();
    this.clear();
  }

  #drop(credential: string, e: Entry): void {
    this.#entries.delete(credential);
    const set = this.#byId.get(e.session.record.id);
    set?.delete(credential);
    if (set?.size === 0) this.#byId.delete(e.session.record.id);
  }
}
