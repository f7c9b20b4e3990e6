/**
 * The identity manager (docs/authentication.md "Keeping sessions fresh"): keeps the
 * sessions of a store fresh in the background, not only when a request arrives.
 *
 * - Exactly one manager works at a time among all processes sharing a store: it holds the lease
 *   {@link IDENTITY_MANAGER_LEASE} (`SessionDirectory.acquireLease`), renewed every third of its TTL;
 *   when the holder dies its lease lapses after the TTL and another takes it. A manager that fails
 *   to renew stops working at once (its in-flight requests are aborted). On Redis the lease value is
 *   sealed: one written by someone else is taken over, so a Redis writer cannot stop the refreshes.
 * - Logs say only what is true: standing by while another instance (or a previous run that did not
 *   give the lease up) holds it is info, once; a renewal that fails while holding the lease is warn,
 *   once per outage. A store that does not answer while this manager holds nothing changes nothing
 *   here (the store logs its own outage): debug. Until the store has answered once (its connection
 *   is still being made at start), the lease is tried again within {@link START_RETRY_MS}.
 * - Each scan reads every session: on Redis this makes the holder the check against replayed old
 *   values (docs/scale-out.md "What a Redis writer can and cannot do"): it refuses a value older
 *   than one it has seen and revokes the session for every process, within one scan interval.
 * - Every scan (`scanIntervalMs`), each session with a refresh token whose access token expires
 *   within `refreshMarginMs` is refreshed through the shared {@link SessionRefresher} (so never
 *   twice at once with the request path in this process; a refusal ends the session everywhere).
 * - Every `idp_refresh_directory_interval`, a scan is also a directory refresh, bounded by
 *   `idp_refresh_directory_timeout`: each session's user and groups are read again from the
 *   provider's userinfo endpoint with its access token, and the record is rewritten only when they
 *   changed (so a user removed from a group at the provider loses access without signing out).
 * - With `idp_service_account`, each directory refresh first reads the whole directory
 *   (./directory/: groups, members, users), bounded by the same timeout, and keeps it in the store
 *   (./directory/record.ts) for every process (the first read comes at once after taking the
 *   lease when the store holds none read with this account); a failed read keeps the last good directory and
 *   counts `user_group_refresh_errors`. Each session's groups become its `groups` claim together
 *   with its directory groups; a user the directory no longer has loses its sessions
 *   (docs/authentication.md "Groups from the directory").
 * - Provider failures that are not refusals make the whole manager back off (./back-off.ts); at
 *   most `concurrency` requests go to the provider at once.
 * - The provider and intervals are read from `settings()` at each scan: a reload takes effect at the
 *   next scan. Timers are unref'd; {@link IdentityManager.close} aborts what is in flight and gives
 *   the lease up.
 */
import { randomBytes } from 'node:crypto';
import type { Dispatcher } from 'undici';
import type { PlanBody, PlanSettings, Secret } from '../../compiler/plan/types.ts';
import { directoryClient, userKeyOf } from './directory/index.ts';
import { claimGroups, directoryRecord, isDirectoryRecord, mergedGroups, readDirectory } from './directory/record.ts';
import type { DirectoryClient, DirectorySnapshot } from './directory/types.ts';
import { IdentityProviderError, type SignInProvider, type SignedInUser } from './idp.ts';
import type { SessionDirectory, SessionRecord, SessionStore } from '../core/session-store.ts';
import { forEachBounded } from './bounded.ts';
import type { IdentityManagerFigures } from '../core/identity-figures.ts';
import { IdentityFiguresCounter } from './identity-figures-counter.ts';
import { userOf, type SessionRefresher } from './session-refresher.ts';

/** The lease's name in the store (docs/scale-out.md key layout). */
export const IDENTITY_MANAGER_LEASE = 'identity-manager';

/** What the manager reads of the current plan generation. */
export interface IdentityManagerSettings {
  /** Null without an identity provider: nothing to refresh. */
  readonly idp: SignInProvider | null;
  /** `idp_refresh_directory_interval`. */
  readonly directoryIntervalMs: number;
  /** `idp_refresh_directory_timeout`. */
  readonly directoryTimeoutMs: number;
  /** `idp_service_account`'s directory; absent or null without one. */
  readonly directory?: DirectorySource | null;
}

/** A plan's directory: its client, or why none could be made (said at each directory refresh). */
export type DirectorySource =
  | { readonly client: DirectoryClient; readonly provider: string; readonly account: Secret }
  | { readonly error: string; readonly cause: unknown; readonly provider: string; readonly account: Secret };

/** One directory source per plan's `idp` settings (a plan is frozen: the same object until a reload). */
const directories = new WeakMap<PlanSettings['idp'], DirectorySource | null>();

/** The directory of a plan's `idp` settings, made once per plan. Never throws. */
export function directorySource(idp: PlanSettings['idp']): DirectorySource | null {
  const known = directories.get(idp);
  if (known !== undefined) return known;
  let source: DirectorySource | null = null;
  if (idp.serviceAccount !== null) {
    const base = { provider: idp.provider ?? '', account: idp.serviceAccount };
    try {
      const client = directoryClient(idp);
      source = client === null ? null : { ...base, client };
    } catch (e) {
      source = { ...base, error: (e as Error).message, cause: e };
    }
  }
  directories.set(idp, source);
  return source;
}

/** The manager's settings from a generation's authentication state (its plan body and identity provider). */
export function managerSettings(auth: { readonly body: PlanBody; readonly idp: SignInProvider | null }): IdentityManagerSettings {
  const idp = auth.body.settings.idp;
  return { idp: auth.idp, directoryIntervalMs: idp.refreshDirectoryIntervalMs, directoryTimeoutMs: idp.refreshDirectoryTimeoutMs, directory: directorySource(idp) };
}

export interface IdentityManagerOptions {
  readonly store: SessionStore & SessionDirectory;
  readonly refresher: SessionRefresher;
  /** The current generation's settings, read at each scan. */
  readonly settings: () => IdentityManagerSettings;
  /** This manager's name in the lease (default: random). */
  readonly holder?: string;
  /** Lease TTL (default 30 000 ms): how long a dead holder blocks the others. */
  readonly leaseTtlMs?: number;
  /** Time between scans for tokens to refresh (default 30 000 ms). */
  readonly scanIntervalMs?: number;
  /** A token is refreshed when it expires within this (default 60 000 ms; above `scanIntervalMs`). */
  readonly refreshMarginMs?: number;
  /** Most provider requests in flight (default 4). */
  readonly concurrency?: number;
  readonly now?: () => number;
  readonly log?: (entry: Record<string, unknown>) => void;
  /** A short, non-secret name of a session for logs. */
  readonly logId?: (id: string) => string;
  /** Tests: the dispatcher of directory requests (one trusting their certificate authority). */
  readonly directoryDispatcher?: Dispatcher;
}

/** A directory as one run applies it: the snapshot, and its users as a set (null: the API lists none). */
interface RunDirectory {
  readonly provider: string;
  readonly snapshot: DirectorySnapshot;
  readonly users: ReadonlySet<string> | null;
}

const MIN_TIMER_MS = 50;

/** The lease is tried again this soon (at most) until the store first answers: svc starts while it connects. */
const START_RETRY_MS = 500;

export class IdentityManager {
  readonly #o: Required<Omit<IdentityManagerOptions, 'log' | 'directoryDispatcher'>> & Pick<IdentityManagerOptions, 'log' | 'directoryDispatcher'>;
  readonly #counter: IdentityFiguresCounter;
  readonly #closing = new AbortController();
  /** Aborted when the lease is lost or the manager closes: the scan in progress stops. */
  #work = new AbortController();
  #held = false;
  /** A failed renewal was logged (warn): its recovery is logged too. */
  #leaseError = false;
  /** The store has answered a lease request at least once. */
  #answered = false;
  /** The last lease request failed (a store that does not answer is said once, not at every try). */
  #failing = false;
  /** Standing by (another holder) was logged; said again only after this manager held the lease. */
  #standingBy = false;
  #nextDirectoryAtMs = 0;
  /**
   * The directory source last checked against the store (null: none yet since taking the lease): a
   * scan that sees another one (taking the lease, a reload to another account) reads the directory at
   * once when the store holds none read with it.
   */
  #checkedSource: DirectorySource | null | undefined = null;
  #scan: Promise<void> | undefined;
  #leaseTimer: NodeJS.Timeout | undefined;
  #scanTimer: NodeJS.Timeout | undefined;
  #closed = false;

  /** @throws {RangeError} for a TTL, interval, margin or concurrency that is not a positive integer. */
  constructor(options: IdentityManagerOptions) {
    this.#o = {
      holder: `${process.pid}-${randomBytes(6).toString('hex')}`,
      leaseTtlMs: 30_000,
      scanIntervalMs: 30_000,
      refreshMarginMs: 60_000,
      concurrency: 4,
      now: Date.now,
      logId: () => '-',
      ...options,
    };
    for (const k of ['leaseTtlMs', 'scanIntervalMs', 'refreshMarginMs', 'concurrency'] as const) {
      if (!Number.isSafeInteger(this.#o[k]) || this.#o[k] < 1) throw new RangeError(`${k} must be a positive integer`);
    }
    this.#counter = new IdentityFiguresCounter(this.#o.now);
  }

  /** The figures of docs/observability.md "Metric reference" (for the metrics exporter). */
  figures(): IdentityManagerFigures {
    return this.#counter.figures();
  }

  /** True while this manager holds the lease (and so does the work). */
  get holdsLease(): boolean {
    return this.#held;
  }

  /** Starts the timers: the lease now and every third of its TTL, scans on their interval. */
  start(): void {
    if (this.#closed || this.#leaseTimer) return;
    const lease = () => {
      void this.renewLease().finally(() => {
        const period = Math.floor(this.#o.leaseTtlMs / 3);
        if (!this.#closed) (this.#leaseTimer = setTimeout(lease, Math.max(MIN_TIMER_MS, this.#answered ? period : Math.min(period, START_RETRY_MS)))).unref();
      });
    };
    const scan = () => {
      void this.scan().finally(() => {
        if (!this.#closed) (this.#scanTimer = setTimeout(scan, this.#nextScanDelay())).unref();
      });
    };
    lease();
    (this.#scanTimer = setTimeout(scan, MIN_TIMER_MS)).unref();
  }

  /** Until the next scan: the scan interval, or sooner when a directory refresh falls due. */
  #nextScanDelay(): number {
    const untilDirectory = this.#held ? this.#nextDirectoryAtMs - this.#o.now() : Infinity;
    return Math.max(MIN_TIMER_MS, Math.min(this.#o.scanIntervalMs, untilDirectory));
  }

  /**
   * Takes or renews the lease; true when held afterwards. Losing it (another holder, or the store
   * failing) aborts the scan in progress.
   */
  async renewLease(): Promise<boolean> {
    if (this.#closed) return false;
    let held: boolean;
    let answered = false;
    try {
      held = await this.#o.store.acquireLease(IDENTITY_MANAGER_LEASE, this.#o.holder, this.#o.leaseTtlMs);
      if (this.#leaseError) this.#o.log?.({ msg: 'identity manager: the store answers again' });
      this.#leaseError = false;
      this.#failing = false;
      this.#answered = answered = true;
    } catch (e) {
      const error = (e as Error).message;
      if (this.#held) {
        // Said once per outage, not at every renewal: the refreshes stop here until it answers.
        this.#o.log?.({ level: 'warn', msg: 'identity manager: cannot renew its lease; pausing until the store answers', error });
        this.#leaseError = true;
      } else if (!this.#failing) {
        // Holding nothing, nothing stops here; at start this is the store's connection still being made.
        this.#o.log?.({ level: 'debug', msg: 'identity manager: the store does not answer; the lease is tried again', error });
      }
      this.#failing = true;
      held = false;
    }
    if (this.#closed) {
      if (held) await this.#o.store.releaseLease(IDENTITY_MANAGER_LEASE, this.#o.holder).catch(() => undefined);
      return false;
    }
    if (held && !this.#held) {
      this.#standingBy = false;
      this.#o.log?.({ msg: 'identity manager: took the lease; refreshing sessions here', holder: this.#o.holder });
      this.#work = new AbortController();
      // The first directory refresh comes one interval after taking over (at once when there is no directory yet).
      this.#nextDirectoryAtMs = this.#o.now() + this.#o.settings().directoryIntervalMs;
      this.#checkedSource = null;
    } else if (!held && this.#held) {
      this.#o.log?.({ msg: 'identity manager: lost the lease; stopping', holder: this.#o.holder });
      this.#work.abort();
      this.#standingBy = answered;
    } else if (!held && answered && !this.#standingBy) {
      // The store answered that someone else holds it (it lapses one TTL after its holder stops renewing).
      this.#standingBy = true;
      this.#o.log?.({ msg: 'identity manager: another instance holds the identity manager lease; standing by', holder: this.#o.holder });
    }
    this.#held = held;
    return held;
  }

  /**
   * One scan, when this manager holds the lease: refreshes the tokens that are due and, when the
   * directory interval has passed, users and groups. A scan already running is joined.
   */
  scan(): Promise<void> {
    if (!this.#scan) this.#scan = this.#runScan().finally(() => (this.#scan = undefined));
    return this.#scan;
  }

  /** Renews the lease, then scans (tests drive the manager with it, with an injected clock). */
  async tick(): Promise<void> {
    await this.renewLease();
    await this.scan();
  }

  async #runScan(): Promise<void> {
    if (!this.#held || this.#closed) return;
    const settings = this.#o.settings();
    const idp = settings.idp;
    if (idp === null) return;
    const start = this.#o.now();
    if (settings.directory !== this.#checkedSource) {
      this.#checkedSource = settings.directory;
      // No directory read with this account in the store (a first start, a memory store after a
      // restart, a new account): sign-ins would get no directory groups for a whole interval.
      const source = settings.directory;
      if (source && (await readDirectory(this.#o.store, source.provider, source.account).catch(() => null)) === undefined) this.#nextDirectoryAtMs = start;
    }
    const directory = start >= this.#nextDirectoryAtMs;
    if (directory) this.#nextDirectoryAtMs = start + settings.directoryIntervalMs;
    const backOff = this.#o.refresher.backOff(idp);
    // A directory run goes on while backing off from the sign-in provider: the directory is another
    // API, and each session step below asks the provider only when not backed off.
    if (backOff.blocked() && !(directory && settings.directory)) return;
    const signals = [this.#work.signal, this.#closing.signal, ...(directory ? [AbortSignal.timeout(settings.directoryTimeoutMs)] : [])];
    const signal = AbortSignal.any(signals);
    const source = directory ? (settings.directory ?? null) : null;
    const dir = source === null ? undefined : await this.#syncDirectory(source, signal, start + settings.directoryTimeoutMs);
    let userInfo = false;
    if (directory && !backOff.blocked()) {
      try {
        userInfo = await idp.hasUserInfo();
      } catch (e) {
        if (!(e instanceof IdentityProviderError && e.code === 'SVC_ERR_IDP_CONFIG')) backOff.failed();
        this.#o.log?.({ msg: 'identity manager: the identity provider cannot be discovered; directory refresh skipped', error: (e as Error).message });
      }
    }
    try {
      await forEachBounded(sessionsOnly(this.#o.store.sessionIds()), this.#o.concurrency, (id) => this.#session(idp, id, { run: directory, userInfo, counted: source !== null, dir }, signal), signal, (e) =>
        this.#o.log?.({ msg: 'identity manager: a session could not be refreshed', error: (e as Error).message }),
      );
    } catch (e) {
      this.#o.log?.({ msg: 'identity manager: listing sessions failed; trying again at the next scan', error: (e as Error).message });
    }
    if (directory) {
      if (signal.aborted && !this.#work.signal.aborted && !this.#closing.signal.aborted) this.#o.log?.({ msg: 'identity manager: directory refresh stopped at idp_refresh_directory_timeout', timeoutMs: settings.directoryTimeoutMs });
      this.#counter.runEnded();
    }
  }

  /**
   * Reads the directory (one directory refresh), keeps it in the store, and returns what the run
   * applies to sessions: the fresh directory, else the last good one from the store (a failed read
   * changes no session's directory groups), else none.
   */
  async #syncDirectory(source: DirectorySource, signal: AbortSignal, deadlineMs: number): Promise<RunDirectory | undefined> {
    const { provider, account } = source;
    const applied = (snapshot: DirectorySnapshot): RunDirectory => ({ provider, snapshot, users: snapshot.users === null ? null : new Set(snapshot.users) });
    if ('error' in source) {
      this.#counter.count('userGroup', false);
      this.#o.log?.({ level: 'error', msg: 'identity manager: idp_service_account cannot be used; directory not read', error: source.error });
    } else {
      try {
        const snapshot = await source.client.read({ signal, deadlineMs, now: this.#o.now, ...(this.#o.directoryDispatcher ? { dispatcher: this.#o.directoryDispatcher } : {}), ...(this.#o.log ? { log: this.#o.log } : {}) });
        if (!signal.aborted) {
          this.#counter.count('userGroup', true);
          this.#o.log?.({ msg: 'identity manager: directory read', provider, groups: Object.keys(snapshot.groups).length, users: snapshot.users?.length ?? null });
          await this.#o.store.put(directoryRecord({ provider, account: account.fingerprint, readAtMs: this.#o.now(), snapshot })).catch((e: unknown) =>
            this.#o.log?.({ level: 'warn', msg: 'identity manager: storing the directory failed; other processes keep the last one', error: (e as Error).message }),
          );
          return applied(snapshot);
        }
      } catch (e) {
        if (this.#work.signal.aborted || this.#closing.signal.aborted) return undefined;
        this.#counter.count('userGroup', false);
        this.#o.log?.({ level: 'warn', msg: 'identity manager: directory read failed; keeping the last good directory', provider, error: (e as Error).message });
      }
      if (signal.aborted && (this.#work.signal.aborted || this.#closing.signal.aborted)) return undefined;
    }
    const stored = await readDirectory(this.#o.store, provider, account).catch(() => undefined);
    return stored === undefined ? undefined : applied(stored.snapshot);
  }

  /**
   * Refreshes one session: its tokens when due, then (in a directory run) its user from userinfo and
   * its directory groups; a user the directory no longer has loses the session.
   */
  async #session(idp: SignInProvider, id: string, run: { readonly run: boolean; readonly userInfo: boolean; readonly counted: boolean; readonly dir: RunDirectory | undefined }, signal: AbortSignal): Promise<void> {
    const backOff = this.#o.refresher.backOff(idp);
    let record = await this.#o.store.get(id);
    if (!record || signal.aborted) return;
    const expiry = record.accessTokenExpiresAtMs;
    if (record.refreshToken !== undefined && expiry !== undefined && this.#o.now() >= expiry - this.#o.refreshMarginMs) {
      // Backing off from the provider: no refresh now, but a directory run still applies the directory.
      if (backOff.blocked()) {
        if (run.dir === undefined) return;
      } else {
        const outcome = await this.#o.refresher.refresh(idp, record, signal);
        if (signal.aborted) return;
        this.#counter.count('session', outcome.kind === 'refreshed');
        if (outcome.kind !== 'refreshed') return;
        record = outcome.record;
      }
    }
    if (!run.run) return;
    const { dir } = run;
    let user: SignedInUser | undefined;
    if (run.userInfo && record.accessToken !== undefined && !backOff.blocked()) {
      try {
        user = await idp.userInfo(record.accessToken, userOf(record), signal);
        backOff.succeeded();
      } catch (e) {
        if (signal.aborted) return;
        this.#counter.count('user', false);
        // With a directory, user_group_refresh_* count its reads instead.
        if (!run.counted) this.#counter.count('userGroup', false);
        const code = e instanceof IdentityProviderError ? e.code : undefined;
        this.#o.log?.({ msg: 'identity manager: user refresh failed', session: this.#o.logId(id), user: record.userId, error: (e as Error).message });
        if (code === 'SVC_ERR_IDP_USERINFO' && record.refreshToken === undefined && record.accessTokenExpiresAtMs === undefined && idp.unexpiringTokens === true) {
          // A token that never expires was refused: it was revoked (svc's access removed at the
          // provider, or the account gone), so the session is over.
          await this.#o.store.delete(id).catch((err: unknown) => this.#o.log?.({ msg: 'identity manager: ending a session failed', session: this.#o.logId(id), error: (err as Error).message }));
          this.#o.log?.({ msg: 'identity manager: the provider refused a token that does not expire; session ended', session: this.#o.logId(id), user: record.userId });
          return;
        }
        if (code === 'SVC_ERR_IDP_USERINFO' && record.refreshToken !== undefined) {
          // The access token was refused: the refresh token says whether the session still stands.
          const outcome = await this.#o.refresher.refresh(idp, record, signal);
          if (!signal.aborted) this.#counter.count('session', outcome.kind === 'refreshed');
          if (outcome.kind !== 'refreshed') return;
        } else if (code !== 'SVC_ERR_IDP_USERINFO') {
          backOff.failed(e instanceof IdentityProviderError ? e.retryAfterMs : undefined);
        }
        if (dir === undefined) return;
      }
      if (user !== undefined) {
        this.#counter.count('user', true);
        if (!run.counted) this.#counter.count('userGroup', true);
      }
    }
    if (user === undefined && dir === undefined) return;
    const claims = user?.claims ?? record.claims;
    const email = user !== undefined ? user.email : record.email;
    let groups = user?.groups ?? record.groups;
    if (dir !== undefined) {
      const key = userKeyOf(dir.provider, { userId: record.userId, claims });
      if (key === undefined) {
        this.#o.log?.({ level: 'warn', msg: 'identity manager: the session names no directory user (Azure: no `oid` claim; keep `profile` in idp_scopes); directory groups not applied', session: this.#o.logId(id), user: record.userId });
        if (user === undefined) return;
      } else if (dir.users !== null && dir.users.size > 0 && !dir.users.has(key)) {
        // (An empty user list is taken for an API oddity, never for "sign everyone out".)
        try {
          await this.#o.store.delete(id);
          this.#o.log?.({ msg: 'identity manager: user no longer in the directory; session ended', session: this.#o.logId(id), user: record.userId });
        } catch (e) {
          this.#o.log?.({ msg: 'identity manager: ending a session failed', session: this.#o.logId(id), error: (e as Error).message });
        }
        return;
      } else {
        groups = mergedGroups(claimGroups(claims), dir.snapshot, key);
      }
    }
    if (sameIdentity(record, { email, groups, claims })) return;
    // Written over the record as it is now (a refresh may have replaced its tokens meanwhile).
    const latest = await this.#o.store.get(id);
    if (!latest || signal.aborted) return;
    const next: SessionRecord = { ...withoutEmail(latest), ...(email !== undefined ? { email } : {}), groups, claims };
    try {
      await this.#o.store.put(next);
      this.#o.log?.({ msg: 'identity manager: user or groups changed at the provider; session updated', session: this.#o.logId(id), user: record.userId, groups });
    } catch (e) {
      this.#o.log?.({ msg: 'identity manager: storing a session failed', session: this.#o.logId(id), error: (e as Error).message });
    }
  }

  /** Stops the timers, aborts the work in flight, waits for it, and gives the lease up. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#leaseTimer);
    clearTimeout(this.#scanTimer);
    this.#closing.abort();
    this.#work.abort();
    await this.#scan?.catch(() => undefined);
    if (this.#held) await this.#o.store.releaseLease(IDENTITY_MANAGER_LEASE, this.#o.holder).catch(() => undefined);
    this.#held = false;
  }
}

/** The store's ids without the directory's own record (./directory/record.ts). */
async function* sessionsOnly(ids: AsyncIterable<string>): AsyncIterable<string> {
  for await (const id of ids) if (!isDirectoryRecord(id)) yield id;
}

/** Email, groups and claims unchanged: nothing to write. */
function sameIdentity(record: SessionRecord, user: { readonly email: string | undefined; readonly groups: readonly string[]; readonly claims: Readonly<Record<string, unknown>> }): boolean {
  return record.email === user.email && JSON.stringify(record.groups) === JSON.stringify(user.groups) && JSON.stringify(record.claims) === JSON.stringify(user.claims);
}

function withoutEmail(r: SessionRecord): SessionRecord {
  const { email: _email, ...rest } = r;
  return rest;
}
