/**
 * The Redis data broker (docs/scale-out.md): sessions shared by every svc instance that
 * uses the same Redis (standalone, sentinel or cluster) and the same `shared_secret`.
 *
 * Semantics are the memory store's (test/runtime/databroker/store-contract.ts runs against both):
 * - a session's expiry is its key's TTL; `delete` replaces the record with a sealed revocation
 *   under the same key, for at least the record's remaining life, so a revoked id is refused until
 *   the record would have expired, atomically with the check in `put` (one Lua script per
 *   operation, one key: cluster-safe);
 * - `consumeOnce` is `SET NX PX`: exactly one caller wins, across every instance;
 * - leases are sealed values renewed by their holder; a lease value svc did not write, or one held
 *   past its sealed expiry, is taken over (see acquireLease).
 * At rest, every value is sealed (redis-seal.ts) and no key name holds a raw id (redis-keys.ts).
 *
 * Replay (docs/scale-out.md "What a Redis writer can and cannot do"): every session value carries a
 * version that the seal authenticates and the scripts keep increasing (redis-values.ts). This
 * process remembers the newest version of each session it has read, written or heard of on the
 * change channel (redis-seen.ts) and never serves an older one: a value saved before a sign-out or
 * a group change and written back by someone with write access to Redis is refused, and the
 * session is revoked again for every process. The hot path is unchanged: one GET per cache miss.
 *
 * Changes reach other instances through pub/sub on a dedicated connection; when that connection
 * comes back after a loss, every `onFlush` listener is told (caches start over), since changes may
 * have been missed meanwhile.
 *
 * INVARIANT (fail-closed): any Redis failure rejects with `SVC_ERR_SESSION_STORE_UNAVAILABLE` in
 * bounded time (no offline queue, command timeout: redis-options.ts); callers answer 503, never
 * "signed out". The outage and the recovery are logged once each; ioredis reconnects by itself.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { deriveKey } from '../core/keys.ts';
import { GuardedSentinelConnector, GuardedStandaloneConnector } from './redis-connector.ts';
import { KeyLayout } from './redis-keys.ts';
import { redisTarget, secretsOf, type RedisTarget, type StorageSettings } from './redis-options.ts';
import { ValueSeal } from './redis-seal.ts';
import { SeenVersions, type Seen } from './redis-seen.ts';
import { openLease, openSession, sealLease, sealRevoked, sealSession } from './redis-values.ts';
import { ConnectionWaits, meteredClients } from './redis-waits.ts';
import { recordFromJson, recordJson } from './record-check.ts';
import { checkedDevice, counterAdvances, DeviceStoreError, type CounterOutcome, type DeviceRecord, type DeviceStore } from '../core/device-store.ts';
import { SessionStoreError, type SessionDirectory, type SessionRecord, type SessionStore, type StorageOperation, type StoreObserver, type StorePoolFigures } from '../core/session-store.ts';

/** Options of {@link RedisStore}. */
export interface RedisStoreOptions {
  /** The plan's `settings.databroker.storage` (type `redis`). */
  readonly storage: StorageSettings;
  /** `shared_secret` (or `cookie_secret` standing in), decoded: keys the seal and the key names. */
  readonly secret: Buffer;
  readonly observer?: StoreObserver;
  /** Told the outage and the recovery, once each (never the connection string or password). */
  readonly log?: (entry: Record<string, unknown>) => void;
}

type Client = Redis | Cluster;

// The Lua scripts read the clear header of a value (redis-values.ts): `s<version>.` or
// `r<version>.`, or the legacy mark `r`. They keep versions increasing; the process checks the seal.
const HEADER = `local function header(v)
  if v == 'r' then return 'r', 0 end
  local kind, digits = string.match(v, '^([sr])(%d+)%.')
  if digits and #digits <= 16 then return kind, tonumber(digits) end
  return nil, 0
end
`;

/** Refuses a revoked key (-1) and a version not above the stored one (-2, stored); else writes. */
const PUT = `${HEADER}local v = redis.call('GET', KEYS[1])
if v then
  local kind, stored = header(v)
  if kind == 'r' then return {-1, 0} end
  if stored >= tonumber(ARGV[3]) then return {-2, stored} end
end
local ttl = tonumber(ARGV[2])
if ttl <= 0 then
  if v then redis.call('DEL', KEYS[1]) return {1, 0} end
  return {0, 0}
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
if v then return {1, 0} end
return {0, 0}`;

/**
 * Writes the revocation over whatever the key holds, for the longer of the key's TTL and ARGV[3]
 * (what this process knows of the record's expiry: a writer shortening the TTL does not shorten the
 * revocation), even over a deleted key. 1 when a session was replaced.
 */
const DELETE = `${HEADER}local v = redis.call('GET', KEYS[1])
local ttl = tonumber(ARGV[3])
local replaced = 0
if v then
  local kind, stored = header(v)
  if stored >= tonumber(ARGV[2]) then return {-2, stored} end
  if kind ~= 'r' then replaced = 1 end
  local left = redis.call('PTTL', KEYS[1])
  if left > ttl then ttl = left end
end
if ttl > 0 then redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl) elseif v then redis.call('DEL', KEYS[1]) end
return {replaced, 0}`;

/** Takes a free lease or renews this holder's (ARGV[3]: its tag); else answers the value held. */
const ACQUIRE = `local v = redis.call('GET', KEYS[1])
if not v or string.sub(v, 1, #ARGV[3] + 1) == ARGV[3] .. '.' then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return v`;

/** Replaces the lease value ARGV[1] (judged lapsed or forged by the caller) with ARGV[2]. */
const TAKE_OVER = `if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) return 1 end
return 0`;

const RELEASE = `local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, #ARGV[1] + 1) == ARGV[1] .. '.' then redis.call('DEL', KEYS[1]) end
return 0`;

/** Replaces the value ARGV[1] with ARGV[2] (a device's compare-and-set); 0 when the key holds another value. */
const SWAP = `if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2]) return 1 end
return 0`;

/** The clear value of a revoked device's key (sealed: see #revokedMark). */
const DEVICE_REVOKED = Buffer.from('revoked');

/** Most attempts of a write whose version another writer overtook meanwhile. */
const WRITE_ATTEMPTS = 4;

interface Scripts {
  svcPut(key: string, value: Buffer, ttl: number, version: number): Promise<[number, number]>;
  svcDelete(key: string, value: Buffer, version: number, ttl: number): Promise<[number, number]>;
  svcAcquireBuffer(key: string, value: Buffer, ttl: number, tag: string): Promise<1 | Buffer>;
  svcTakeOver(key: string, held: Buffer, value: Buffer, ttl: number): Promise<number>;
  svcRelease(key: string, tag: string): Promise<number>;
  svcSwap(key: string, held: Buffer, value: Buffer): Promise<number>;
}

/**
 * What an outage means for users (the outage line's `impact`; runtime/proxy/gate.ts `withoutStore`,
 * docs/scale-out.md "Failure behaviour").
 */
const OUTAGE_IMPACT =
  'requests that need a session (signing in, routes that refuse anonymous users) answer 503 session-store-unavailable until Redis is back; signed-in users are not signed out (their cookie is kept, a session this process has cached works for up to 30 s, plus the outage grace: svc run --store-outage-grace); public routes are served; svc reconnects by itself';

/** A {@link SessionStore} and {@link SessionDirectory} on Redis. */
export class RedisStore implements SessionStore, SessionDirectory, DeviceStore {
  readonly #client: Client & Scripts;
  readonly #sub: Client;
  readonly #keys: KeyLayout;
  readonly #seal: ValueSeal;
  readonly #observer: StoreObserver | undefined;
  readonly #log: ((entry: Record<string, unknown>) => void) | undefined;
  readonly #secrets: string[];
  readonly #waits = new ConnectionWaits();
  /** Tags this instance's change messages, so it does not hear its own changes twice. */
  readonly #origin = randomBytes(9).toString('base64url');
  readonly #listeners = new Set<(id: string) => void>();
  readonly #deviceListeners = new Set<(credentialId: string) => void>();
  readonly #flushListeners = new Set<() => void>();
  readonly #reachabilityListeners = new Set<(unreachable: boolean) => void>();
  /** INVARIANT (no-replay): the newest version of each key seen here; older values are refused. */
  readonly #seen = new SeenVersions();
  #replays = 0;
  #takeovers = 0;
  #inFlight = 0;
  /** Reachability as last logged: undefined before the first answer. */
  #up: boolean | undefined;
  /** When the outage last logged began (ms since the epoch). */
  #downSince = 0;
  #subscribed = false;
  #subLost = false;
  #closed = false;

  /** Connects in the background; never waits for Redis (svc starts while Redis is down). Throws `RedisConfigError`, `SecretError`, `TlsMaterialError`. */
  constructor(options: RedisStoreOptions) {
    const target = redisTarget(options.storage);
    this.#secrets = secretsOf(options.storage);
    this.#keys = new KeyLayout(deriveKey(options.secret, 'session store names'));
    this.#seal = new ValueSeal(deriveKey(options.secret, 'session store seal'));
    this.#observer = options.observer;
    this.#log = options.log;
    const clients = meteredClients(this.#waits);
    this.#client = connect(clients, target) as Client & Scripts;
    this.#client.defineCommand('svcPut', { numberOfKeys: 1, lua: PUT });
    this.#client.defineCommand('svcDelete', { numberOfKeys: 1, lua: DELETE });
    this.#client.defineCommand('svcAcquire', { numberOfKeys: 1, lua: ACQUIRE });
    this.#client.defineCommand('svcTakeOver', { numberOfKeys: 1, lua: TAKE_OVER });
    this.#client.defineCommand('svcRelease', { numberOfKeys: 1, lua: RELEASE });
    this.#client.defineCommand('svcSwap', { numberOfKeys: 1, lua: SWAP });
    this.#client.on('ready', () => this.#reachable(true));
    this.#client.on('error', (e: Error) => this.#reachable(false, e));
    this.#client.on('close', () => this.#reachable(false));
    // A subscriber keeps an offline queue: SUBSCRIBE waits for the connection, and ioredis
    // subscribes again after every reconnection.
    this.#sub = connect(clients, target, { subscriber: true });
    this.#sub.on('error', () => undefined);
    this.#sub.on('close', () => {
      if (this.#subscribed) this.#subLost = true;
    });
    this.#sub.on('ready', () => {
      if (!this.#subLost) return;
      this.#subLost = false;
      // Changes published while the channel was down were missed: every cache starts over.
      for (const f of this.#flushListeners) safely(f);
    });
    this.#sub.on('messageBuffer', (channel: Buffer, message: Buffer) => this.#message(channel.toString(), message));
    void this.#sub.subscribe(this.#keys.channel).then(
      () => void (this.#subscribed = true),
      () => undefined,
    );
  }

  /** Resolves once Redis answers (or rejects after `timeoutMs`); for tests and start-up messages. */
  async ready(timeoutMs = 10_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (!(this.#up === true && this.#subscribed)) {
      if (Date.now() > until) throw new SessionStoreError('SVC_ERR_SESSION_STORE_UNAVAILABLE', 'session store (redis) not reachable');
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  async get(id: string): Promise<SessionRecord | undefined> {
    return this.#op('get', () => this.#read(id));
  }

  async put(record: SessionRecord): Promise<void> {
    const json = Buffer.from(recordJson(record));
    return this.#op('put', async () => {
      const key = this.#keys.session(record.id);
      const seen = this.#seen.get(key, Date.now());
      if (seen?.revoked === true) throw revokedError();
      let version = nextVersion(seen);
      for (let attempt = 1; ; attempt++) {
        const [answer, stored] = await this.#client.svcPut(key, sealSession(this.#seal, key, version, json), record.expiresAtMs - Date.now(), version);
        if (answer === -1) throw revokedError();
        if (answer === -2) {
          version = overtaking(stored, attempt, 'put');
          continue;
        }
        this.#seen.raise(key, version, false, record.expiresAtMs);
        if (answer === 1) await this.#changed(record.id, version, false, record.expiresAtMs);
        return;
      }
    });
  }

  async delete(id: string): Promise<void> {
    try {
      await this.#op('delete', async () => {
        const key = this.#keys.session(id);
        // The revocation is sealed with the record's expiry, so every process keeps refusing the
        // session's older values for as long as they could be served: read it when not known here.
        if (this.#seen.get(key, Date.now()) === undefined) await this.#read(id);
        const seen = this.#seen.get(key, Date.now());
        // Nothing valid to revoke (never stored, expired, or not a value of this deployment).
        if (seen !== undefined) await this.#revoke(id, key, seen);
      });
    } catch (e) {
      // A sign-out Redis could not record still drops the session from this process's caches (and,
      // through the primary, its workers'): the outage grace never serves it (outage-grace.ts).
      if (e instanceof SessionStoreError && e.code === 'SVC_ERR_SESSION_STORE_UNAVAILABLE') for (const l of this.#listeners) safely(() => l(id));
      throw e;
    }
  }

  async isRevoked(id: string): Promise<boolean> {
    return this.#op('isRevoked', async () => {
      const key = this.#keys.session(id);
      if (this.#seen.get(key, Date.now())?.revoked === true) return true;
      const value = await this.#client.getBuffer(key);
      if (value === null) return false;
      const opened = openSession(this.#seal, key, value);
      if (opened.kind !== 'revoked') return false;
      if (opened.exp !== undefined) this.#seen.raise(key, opened.version, true, opened.exp);
      return true;
    });
  }

  /** Values refused because they were older than one this process had seen (a replay, or writes lost in a failover). */
  get replaysRefused(): number {
    return this.#replays;
  }

  /** Leases found held by a value this deployment did not write, or past its sealed expiry, and taken over. */
  get leasesTakenOver(): number {
    return this.#takeovers;
  }

  /**
   * Reads a session. A value older than one seen here (or a session this process knows revoked) is
   * read once more, since a reply may trail a change heard on the channel; still older, it was
   * written back by someone holding an old value: the session is revoked everywhere (fail-closed).
   */
  async #read(id: string, again = false): Promise<SessionRecord | undefined> {
    const key = this.#keys.session(id);
    const value = await this.#client.getBuffer(key);
    if (value === null) return undefined;
    const opened = openSession(this.#seal, key, value);
    if (opened.kind === 'invalid') return undefined;
    const now = Date.now();
    const seen = this.#seen.get(key, now);
    // INVARIANT (no-replay): a value older than the newest this process has seen is never served.
    if (seen !== undefined && (opened.version < seen.version || (seen.revoked && opened.kind === 'session'))) {
      if (!again) return this.#read(id, true);
      this.#replays++;
      this.#log?.({ msg: 'session store (redis): a session value older than one this process has seen was written back to Redis (a replay by a Redis writer, or writes lost in a failover); the session is revoked' });
      await this.#revoke(id, key, seen);
      return undefined;
    }
    if (opened.kind === 'revoked') {
      if (opened.exp !== undefined) this.#seen.raise(key, opened.version, true, opened.exp, now);
      return undefined;
    }
    const record = recordFromJson(opened.plain.toString('utf8'), id);
    if (record === undefined || record.expiresAtMs <= now) return undefined;
    this.#seen.raise(key, opened.version, false, record.expiresAtMs, now);
    return record;
  }

  /** Writes the sealed revocation above every version seen, and tells every process. */
  async #revoke(id: string, key: string, seen: Seen): Promise<void> {
    let version = nextVersion(seen);
    for (let attempt = 1; ; attempt++) {
      const [answer, stored] = await this.#client.svcDelete(key, sealRevoked(this.#seal, key, version, seen.exp), version, Math.max(0, seen.exp - Date.now()));
      if (answer === -2) {
        version = overtaking(stored, attempt, 'delete');
        continue;
      }
      this.#seen.raise(key, version, true, seen.exp);
      if (answer === 1 || !seen.revoked) await this.#changed(id, version, true, seen.exp);
      return;
    }
  }

  async consumeOnce(key: string, expiresAtMs: number): Promise<boolean> {
    return this.#op('consumeOnce', async () => {
      const ttl = expiresAtMs - Date.now();
      // A mark that would already be forgotten is never stored (the memory store's answer too).
      if (ttl <= 0) return true;
      const name = this.#keys.once(key);
      return (await this.#client.set(name, this.#seal.seal(name, Buffer.alloc(0)), 'PX', ttl, 'NX')) === 'OK';
    });
  }

  async *sessionIds(): AsyncIterable<string> {
    this.#assertOpen();
    const started = performance.now();
    let result: 'ok' | 'error' = 'error';
    try {
      const nodes: Redis[] = this.#client instanceof Cluster ? this.#client.nodes('master') : [this.#client];
      for (const node of nodes) {
        let cursor = '0';
        do {
          const [next, keys] = await unavailableOnError(this.#secrets, 'sessionIds', () => node.scan(cursor, 'MATCH', this.#keys.sessionPattern, 'COUNT', 500));
          cursor = next;
          if (keys.length === 0) continue;
          const pipeline = node.pipeline();
          for (const k of keys) pipeline.getBuffer(k);
          const values = (await unavailableOnError(this.#secrets, 'sessionIds', () => pipeline.exec())) ?? [];
          for (let i = 0; i < keys.length; i++) {
            const [error, answer] = values[i] ?? [null, undefined];
            // A key of a slot being migrated (cluster resharding) is listed by the node importing
            // it, which redirects a plain GET: read it through the client, which follows MOVED/ASK.
            const value = error !== null && isRedirection(error) ? await unavailableOnError(this.#secrets, 'sessionIds', () => this.#client.getBuffer(keys[i]!)) : (answer as Buffer | null | undefined);
            if (!value) continue;
            const opened = openSession(this.#seal, keys[i]!, value);
            if (opened.kind !== 'session') continue;
            const id = (JSON.parse(opened.plain.toString('utf8')) as { id?: unknown }).id;
            if (typeof id === 'string') yield id;
          }
        } while (cursor !== '0');
      }
      result = 'ok';
    } finally {
      this.#observer?.operation('sessionIds', result, 'redis', performance.now() - started);
    }
  }

  /**
   * The lease value is sealed with its holder and expiry (redis-values.ts). A value this deployment
   * did not write, or one held past its sealed expiry by more than `ttlMs` (a holder's old value
   * written back, or a holder whose clock is that far off), does not stop the others: it is taken
   * over, logged and counted ({@link leasesTakenOver}). A Redis writer can therefore delay the
   * identity manager by at most about two lease TTLs, not stop it.
   */
  async acquireLease(name: string, holder: string, ttlMs: number): Promise<boolean> {
    if (!Number.isSafeInteger(ttlMs) || ttlMs < 1) throw new RangeError('ttlMs must be a positive integer');
    return this.#op('acquireLease', async () => {
      const key = this.#keys.lease(name);
      const tag = this.#keys.holder(holder);
      const value = sealLease(this.#seal, key, tag, Date.now() + ttlMs);
      const held = await this.#client.svcAcquireBuffer(key, value, ttlMs, tag);
      if (held === 1) return true;
      const lease = openLease(this.#seal, key, held);
      if (lease !== undefined && lease.exp + ttlMs > Date.now()) return false;
      const taken = (await this.#client.svcTakeOver(key, held, value, ttlMs)) === 1;
      if (taken) {
        this.#takeovers++;
        this.#log?.({ msg: lease === undefined ? 'session store (redis): a lease was held by a value svc did not write; taken over' : 'session store (redis): a lease was held past its sealed expiry; taken over', lease: name });
      }
      return taken;
    });
  }

  async releaseLease(name: string, holder: string): Promise<void> {
    return this.#op('releaseLease', async () => void (await this.#client.svcRelease(this.#keys.lease(name), this.#keys.holder(holder))));
  }

  // Devices (docs/authentication.md "Devices"): one sealed value per credential, no TTL. Every
  // change is a compare-and-set of the exact value read (SWAP), retried when another writer came
  // first, so the counter rule and approval are atomic across instances. A revoked device's key
  // keeps a sealed mark: the credential id is never registered again.

  async getDevice(credentialId: string): Promise<DeviceRecord | undefined> {
    return this.#op('device', async () => (await this.#readDevice(credentialId))?.record);
  }

  /** @throws {DeviceStoreError} `SVC_ERR_DEVICE_EXISTS` for a credential id registered before (revoked ones too). */
  async addDevice(record: DeviceRecord): Promise<void> {
    const copy = checkedDevice(record);
    return this.#op('device', async () => {
      const key = this.#keys.device(copy.credentialId);
      const stored = await this.#client.set(key, this.#seal.seal(key, Buffer.from(JSON.stringify(copy))), 'NX');
      if (stored !== 'OK') throw new DeviceStoreError('SVC_ERR_DEVICE_EXISTS', 'device already registered');
    });
  }

  async listDevices(userId?: string): Promise<readonly DeviceRecord[]> {
    return this.#op('device', async () => {
      const out: DeviceRecord[] = [];
      const nodes: Redis[] = this.#client instanceof Cluster ? this.#client.nodes('master') : [this.#client];
      for (const node of nodes) {
        let cursor = '0';
        do {
          const [next, keys] = await node.scan(cursor, 'MATCH', this.#keys.devicePattern, 'COUNT', 500);
          cursor = next;
          for (const key of keys) {
            const value = await this.#client.getBuffer(key);
            const record = value === null ? undefined : this.#openDevice(key, value);
            if (record !== undefined && (userId === undefined || record.userId === userId)) out.push(record);
          }
        } while (cursor !== '0');
      }
      return out;
    });
  }

  async approveDevice(credentialId: string): Promise<boolean> {
    return this.#op('device', async () => {
      const outcome = await this.#updateDevice(credentialId, (d) => (d.approved ? d : { ...d, approved: true }));
      if (outcome === 'changed') await this.#deviceChanged(credentialId);
      return outcome !== 'missing';
    });
  }

  async revokeDevice(credentialId: string): Promise<boolean> {
    return this.#op('device', async () => {
      const outcome = await this.#updateDevice(credentialId, () => null);
      if (outcome === 'missing') return false;
      await this.#deviceChanged(credentialId);
      return true;
    });
  }

  async advanceCounter(credentialId: string, counter: number): Promise<CounterOutcome> {
    return this.#op('device', async () => {
      let regressed = false;
      const outcome = await this.#updateDevice(credentialId, (d) => {
        regressed = !counterAdvances(d.counter, counter);
        return regressed || d.counter === counter ? d : { ...d, counter };
      });
      return outcome === 'missing' ? 'missing' : regressed ? 'regressed' : 'advanced';
    });
  }

  onDeviceChange(listener: (credentialId: string) => void): () => void {
    this.#deviceListeners.add(listener);
    return () => this.#deviceListeners.delete(listener);
  }

  async #readDevice(credentialId: string): Promise<{ readonly record: DeviceRecord; readonly held: Buffer } | undefined> {
    const key = this.#keys.device(credentialId);
    const held = await this.#client.getBuffer(key);
    if (held === null) return undefined;
    const record = this.#openDevice(key, held);
    return record === undefined || record.credentialId !== credentialId ? undefined : { record, held };
  }

  /** The device a key holds; undefined for the revocation mark and for any value this deployment did not seal there. */
  #openDevice(key: string, value: Buffer): DeviceRecord | undefined {
    const plain = this.#seal.open(key, value);
    if (plain === undefined || plain.equals(DEVICE_REVOKED)) return undefined;
    try {
      return checkedDevice(JSON.parse(plain.toString('utf8')) as DeviceRecord);
    } catch {
      return undefined;
    }
  }

  /** Applies `change` (null: revoke) by compare-and-set; `unchanged` when it returned the record itself. */
  async #updateDevice(credentialId: string, change: (d: DeviceRecord) => DeviceRecord | null): Promise<'missing' | 'unchanged' | 'changed'> {
    const key = this.#keys.device(credentialId);
    for (let attempt = 1; ; attempt++) {
      const read = await this.#readDevice(credentialId);
      if (read === undefined) return 'missing';
      const next = change(read.record);
      if (next === read.record) return 'unchanged';
      const value = this.#seal.seal(key, next === null ? DEVICE_REVOKED : Buffer.from(JSON.stringify(checkedDevice(next))));
      if ((await this.#client.svcSwap(key, read.held, value)) === 1) return 'changed';
      if (attempt >= WRITE_ATTEMPTS) throw new SessionStoreError('SVC_ERR_SESSION_STORE_UNAVAILABLE', 'session store (redis) device update failed: the device kept changing meanwhile');
    }
  }

  /** Tells this process's device listeners and, through the channel, every other process. */
  async #deviceChanged(credentialId: string): Promise<void> {
    for (const l of this.#deviceListeners) safely(() => l(credentialId));
    const message = this.#seal.seal(this.#keys.channel, Buffer.from(JSON.stringify({ o: this.#origin, device: credentialId })));
    await this.#client.publish(this.#keys.channel, message).catch(() => undefined);
  }

  onChange(listener: (id: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  onFlush(listener: () => void): () => void {
    this.#flushListeners.add(listener);
    return () => this.#flushListeners.delete(listener);
  }

  /** True while the command connection is down (or never came up): commands fail at once then. A hung Redis is not seen here (commands time out). */
  unreachable(): boolean {
    return this.#up === false;
  }

  onReachability(listener: (unreachable: boolean) => void): () => void {
    this.#reachabilityListeners.add(listener);
    return () => this.#reachabilityListeners.delete(listener);
  }

  /** Connection figures (`redis_*`, docs/observability.md "Metric reference"); the wait figures are redis-waits.ts's, for both connections. */
  poolFigures(): StorePoolFigures {
    const clients: Redis[] = [...(this.#client instanceof Cluster ? this.#client.nodes() : [this.#client]), ...(this.#sub instanceof Cluster ? this.#sub.nodes() : [this.#sub])];
    const conns = clients.filter((c) => c.status === 'ready').length;
    return { conns, idleConns: Math.max(0, conns - (this.#inFlight > 0 ? 1 : 0)), waitCount: this.#waits.count, waitDurationMs: this.#waits.durationMs, up: this.#up === true, replaysRefused: this.#replays, leasesTakenOver: this.#takeovers };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#listeners.clear();
    this.#deviceListeners.clear();
    this.#flushListeners.clear();
    this.#reachabilityListeners.clear();
    await Promise.all([this.#client, this.#sub].map((c) => quit(c)));
  }

  /** Tells this process's listeners and, through the channel, every other process (with the version, so they refuse older values). */
  async #changed(id: string, version: number, revoked: boolean, exp: number): Promise<void> {
    for (const l of this.#listeners) safely(() => l(id));
    const message = this.#seal.seal(this.#keys.channel, Buffer.from(JSON.stringify({ o: this.#origin, id, v: version, r: revoked, e: exp })));
    // Best effort: a lost message is covered by the caches' short TTL and the flush on resubscribe.
    await this.#client.publish(this.#keys.channel, message).catch(() => undefined);
  }

  #message(channel: string, message: Buffer): void {
    if (channel !== this.#keys.channel) return;
    const plain = this.#seal.open(channel, message);
    if (plain === undefined) return;
    try {
      const m = JSON.parse(plain.toString('utf8')) as { o?: unknown; id?: unknown; v?: unknown; r?: unknown; e?: unknown; device?: unknown };
      if (m.o === this.#origin) return;
      if (typeof m.device === 'string') {
        for (const l of this.#deviceListeners) safely(() => l(m.device as string));
        return;
      }
      if (typeof m.id !== 'string') return;
      // A message written back to the channel only repeats what was true: versions never go down.
      if (typeof m.v === 'number' && Number.isSafeInteger(m.v) && typeof m.e === 'number') this.#seen.raise(this.#keys.session(m.id), m.v, m.r === true, m.e);
      for (const l of this.#listeners) safely(() => l(m.id as string));
    } catch {
      // Not ours: ignored.
    }
  }

  /**
   * Logs a change of reachability, once per outage (docs/logging.md): an error line when Redis goes
   * (or is not there at start), saying what it means for users, with ioredis's reason as `error`
   * (redacted); an info line when it is back, with how long it was away.
   */
  #reachable(up: boolean, error?: Error): void {
    if (this.#closed || this.#up === up) return;
    const first = this.#up === undefined;
    this.#up = up;
    if (!(first && up)) for (const l of this.#reachabilityListeners) safely(() => l(!up));
    if (up) {
      if (first) this.#log?.({ msg: 'session store (redis) connected' });
      else this.#log?.({ msg: 'session store (redis) reachable again', outageMs: Date.now() - this.#downSince, impact: 'requests that need a session are served again' });
      return;
    }
    this.#downSince = Date.now();
    this.#log?.({ msg: first ? 'session store (redis) unreachable at start' : 'session store (redis) unreachable', impact: OUTAGE_IMPACT, ...(error ? { error: redact(error.message, this.#secrets) } : {}) });
  }

  async #op<T>(operation: StorageOperation, body: () => Promise<T>): Promise<T> {
    this.#assertOpen();
    const started = performance.now();
    this.#inFlight++;
    let result: 'ok' | 'error' = 'error';
    try {
      const value = await unavailableOnError(this.#secrets, operation, body);
      result = 'ok';
      return value;
    } finally {
      this.#inFlight--;
      this.#observer?.operation(operation, result, 'redis', performance.now() - started);
    }
  }

  #assertOpen(): void {
    if (this.#closed) throw new SessionStoreError('SVC_ERR_SESSION_STORE_CLOSED', 'session store is closed');
  }
}

function connect(clients: ReturnType<typeof meteredClients>, target: RedisTarget, extra: { subscriber?: boolean } = {}): Client {
  const sub = extra.subscriber === true;
  // The subscriber queues its SUBSCRIBE until connected (and re-subscribes after reconnects).
  const forSub = (o: RedisOptions): RedisOptions => {
    if (!sub) return o;
    const { commandTimeout: _t, ...rest } = o;
    return { ...rest, enableOfflineQueue: true, maxRetriesPerRequest: null };
  };
  if (target.kind === 'cluster') {
    const nodeOptions = { ...forSub(target.options.redisOptions ?? {}), Connector: GuardedStandaloneConnector };
    return new clients.Cluster(target.nodes, { ...target.options, ...(sub ? { enableOfflineQueue: true } : {}), redisOptions: nodeOptions });
  }
  const Connector = target.options.sentinels !== undefined ? GuardedSentinelConnector : GuardedStandaloneConnector;
  return new clients.Redis({ ...forSub(target.options), Connector });
}

/** A cluster's MOVED or ASK answer. */
function isRedirection(error: Error): boolean {
  return /^(MOVED|ASK) /.test(error.message);
}

function revokedError(): SessionStoreError {
  return new SessionStoreError('SVC_ERR_SESSION_REVOKED', 'session was revoked');
}

/** The version of the next write: the time, or above the newest seen when that is ahead. */
function nextVersion(seen: Seen | undefined): number {
  return Math.max(Date.now(), (seen?.version ?? 0) + 1);
}

/** The version to try after another write (`stored`) overtook attempt `attempt`. */
function overtaking(stored: number, attempt: number, operation: string): number {
  const next = Math.max(Date.now(), stored + 1);
  if (attempt >= WRITE_ATTEMPTS || !Number.isSafeInteger(next)) throw new SessionStoreError('SVC_ERR_SESSION_STORE_UNAVAILABLE', `session store (redis) ${operation} failed: the session kept changing meanwhile`);
  return next;
}

function safely(f: () => void): void {
  try {
    f();
  } catch {
    // A listener's failure must not undo or block the store's change.
  }
}

async function quit(c: Client): Promise<void> {
  try {
    await Promise.race([c.quit(), new Promise((r) => setTimeout(r, 1_000).unref())]);
  } catch {
    // Not connected: nothing to say goodbye to.
  }
  c.disconnect();
}

/** `text` with every secret replaced by `***`. */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) out = out.split(s).join('***');
  return out;
}

/** Runs `body`; a Redis failure becomes `SVC_ERR_SESSION_STORE_UNAVAILABLE` (a store or device error passes through). */
async function unavailableOnError<T>(secrets: readonly string[], operation: string, body: () => Promise<T>): Promise<T> {
  try {
    return await body();
  } catch (e) {
    if (e instanceof SessionStoreError || e instanceof DeviceStoreError) throw e;
    throw new SessionStoreError('SVC_ERR_SESSION_STORE_UNAVAILABLE', `session store (redis) ${operation} failed: ${redact((e as Error).message, secrets)}`);
  }
}
