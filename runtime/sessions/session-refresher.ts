/**
 * The one place a session's tokens are refreshed (the request path, runtime/authn/service.ts, and
 * the identity manager, ./identity-manager.ts): one refresh per session at a time in this process,
 * the provider's answer written to the store, and the rule for failures:
 *
 * - the provider refuses the grant (`invalid_grant`, or another subject): the session is over; it
 *   is deleted from the store, so every process's cache drops it (`SessionStore.onChange`);
 * - anything else (provider unreachable, timeout, 5xx, 429, another OAuth error): the session is
 *   kept as it is, and this process backs off from the provider (./back-off.ts): until then no
 *   refresh reaches it, so a provider outage never signs anyone out and is never hammered.
 */
import type { SignInProvider, SignedInUser } from './idp.ts';
import { IdentityProviderError } from './idp.ts';
import { SessionStoreError, type SessionRecord, type SessionStore } from '../core/session-store.ts';
import { BackOff, type BackOffOptions } from './back-off.ts';
import { claimGroups } from './directory/record.ts';

export type RefreshOutcome =
  /** New tokens, stored. */
  | { readonly kind: 'refreshed'; readonly record: SessionRecord }
  /** The provider refused: the session was deleted (or was already gone). */
  | { readonly kind: 'ended'; readonly reason: string }
  /** The provider could not answer (or is backed off from): the session is unchanged until `retryAtMs`. */
  | { readonly kind: 'kept'; readonly record: SessionRecord; readonly retryAtMs: number; readonly reason: string };

export interface SessionRefresherOptions {
  readonly now?: () => number;
  readonly log?: (entry: Record<string, unknown>) => void;
  /** Back-off toward each provider (tests shorten it). */
  readonly backOff?: Omit<BackOffOptions, 'now'>;
  /** A short, non-secret name of a session for logs (its public id). */
  readonly logId?: (id: string) => string;
}

export class SessionRefresher {
  readonly #store: SessionStore;
  readonly #now: () => number;
  readonly #log: ((entry: Record<string, unknown>) => void) | undefined;
  readonly #backOffOptions: Omit<BackOffOptions, 'now'>;
  readonly #logId: (id: string) => string;
  readonly #inFlight = new Map<string, Promise<RefreshOutcome>>();
  /** One back-off per provider client: a reload to another provider starts afresh. */
  readonly #backOffs = new WeakMap<SignInProvider, BackOff>();

  constructor(store: SessionStore, options: SessionRefresherOptions = {}) {
    this.#store = store;
    this.#now = options.now ?? Date.now;
    this.#log = options.log;
    this.#backOffOptions = options.backOff ?? {};
    this.#logId = options.logId ?? (() => '-');
  }

  /** This process's back-off toward `idp` (the directory refresh obeys it too). */
  backOff(idp: SignInProvider): BackOff {
    let b = this.#backOffs.get(idp);
    if (!b) this.#backOffs.set(idp, (b = new BackOff({ ...this.#backOffOptions, now: this.#now })));
    return b;
  }

  /**
   * Refreshes `record` (which has a refresh token) with `idp`; a refresh of the same session already
   * in progress in this process is joined, never run twice. Never rejects. `signal` aborts the
   * provider request (the outcome is then `kept`).
   */
  refresh(idp: SignInProvider, record: SessionRecord, signal?: AbortSignal): Promise<RefreshOutcome> {
    let p = this.#inFlight.get(record.id);
    if (p) return p;
    p = this.#run(idp, record, signal).finally(() => this.#inFlight.delete(record.id));
    this.#inFlight.set(record.id, p);
    return p;
  }

  async #run(idp: SignInProvider, record: SessionRecord, signal: AbortSignal | undefined): Promise<RefreshOutcome> {
    const backOff = this.backOff(idp);
    if (backOff.blocked()) return { kind: 'kept', record, retryAtMs: backOff.readyAtMs, reason: 'backing off from the identity provider' };
    const session = this.#logId(record.id);
    let next: SessionRecord;
    try {
      if (record.refreshToken === undefined) throw new IdentityProviderError('SVC_ERR_IDP_REFRESH', 'the session has no refresh token');
      const user = await idp.refresh(record.refreshToken, userOf(record), this.#now(), signal);
      // The device the session authenticated with stays with it (docs/authentication.md "Devices").
      const { deviceCredentialId: _device, ...fresh } = user as SignedInUser & { deviceCredentialId?: string };
      next = { ...fresh, groups: withDirectoryGroups(user.groups, record), id: record.id, createdAtMs: record.createdAtMs, expiresAtMs: record.expiresAtMs, ...(record.deviceCredentialId !== undefined ? { deviceCredentialId: record.deviceCredentialId } : {}) };
    } catch (e) {
      if (e instanceof IdentityProviderError && e.code === 'SVC_ERR_IDP_REFRESH') {
        this.#log?.({ msg: 'session refresh refused by the identity provider; session ended', session, user: record.userId, error: e.message });
        await this.#store.delete(record.id).catch((err: unknown) => this.#log?.({ msg: 'ending a refused session failed', session, error: (err as Error).message }));
        return { kind: 'ended', reason: e.message };
      }
      const aborted = signal?.aborted === true;
      const delay = aborted ? 0 : backOff.failed(e instanceof IdentityProviderError ? e.retryAfterMs : undefined);
      if (!aborted) this.#log?.({ msg: 'session refresh failed; session kept, backing off from the identity provider', session, user: record.userId, error: (e as Error).message, retryInMs: delay, failures: backOff.failures });
      return { kind: 'kept', record, retryAtMs: backOff.readyAtMs, reason: (e as Error).message };
    }
    backOff.succeeded();
    try {
      await this.#store.put(next);
    } catch (e) {
      // Deleted meanwhile (signed out): a revoked session is never put back (S30).
      if (e instanceof SessionStoreError && e.code === 'SVC_ERR_SESSION_REVOKED') return { kind: 'ended', reason: 'the session was ended during its refresh' };
      this.#log?.({ msg: 'storing a refreshed session failed; session kept', session, error: (e as Error).message });
      return { kind: 'kept', record, retryAtMs: this.#now(), reason: (e as Error).message };
    }
    this.#log?.({ msg: 'session refreshed', session, user: record.userId });
    return { kind: 'refreshed', record: next };
  }
}

/**
 * The groups of a refreshed session: the provider's new `groups` claim, and the groups the record
 * held beyond its old claim, which came from the directory (docs/authentication.md "Groups from
 * the directory"). A refresh keeps them; only the next directory sync changes them, so a token
 * refresh never takes a directory group away for an interval. Without a directory the second part
 * is empty.
 */
function withDirectoryGroups(fresh: readonly string[], record: SessionRecord): string[] {
  const claimed = new Set(claimGroups(record.claims));
  return [...new Set([...fresh, ...record.groups.filter((g) => !claimed.has(g))])];
}

/** The identity and tokens of a record, without its id and times. */
export function userOf(r: SessionRecord): SignedInUser {
  const { id: _id, createdAtMs: _created, expiresAtMs: _expires, deviceCredentialId: _device, ...user } = r;
  return user;
}
